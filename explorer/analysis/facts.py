"""Tensor facts of a verified packet: nonfinite maps of the six tensors and the bitwise last-row check."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from explorer.analysis.metrics import readonly
from explorer.analysis.result import (
    NEGATIVE_INFINITY,
    POSITIVE_INFINITY,
    QUIET_NAN,
    SIGNALING_NAN,
    LastRow,
    NonfiniteMap,
    TensorFacts,
)
from explorer.foundations.parallel import run_on_threads
from explorer.packet.dtypes import FIELD_BITS, ITEM_SIZE, field_masks, nonfinite_kinds
from explorer.packet.model import TENSOR_NAMES, NativeTensor

FIRST_LOCATIONS_LIMIT = 100
LAST_ROW_POSITIONS_LIMIT = 4096
FACTS_THREADS = 2  # tensors whose nonfinite maps are made at once (numpy releases the interpreter lock)

# `NonfiniteMap.per_head_token` columns, in this kind order, and its dtype: a count is at most D <= 1,024,
# and uint16 keeps the map within 4 times the payload of its tensor (8 bytes per row of at least 2 bytes).
PER_HEAD_TOKEN_KINDS = (QUIET_NAN, SIGNALING_NAN, POSITIVE_INFINITY, NEGATIVE_INFINITY)
PER_HEAD_TOKEN_DTYPE = np.uint16
# `LastRow.field_mask` bits.
SIGN_DIFFERS, EXPONENT_DIFFERS, MANTISSA_DIFFERS = 1, 2, 4

_KIND_COLUMN = np.zeros(max(PER_HEAD_TOKEN_KINDS) + 1, dtype=np.int64)
_KIND_COLUMN[list(PER_HEAD_TOKEN_KINDS)] = np.arange(len(PER_HEAD_TOKEN_KINDS))


def _frozen(array: np.ndarray) -> np.ndarray:
    return readonly(np.array(array, copy=True))


def _all_finite(values: np.ndarray) -> bool:
    """Whether every element is finite: NaN and infinities reach the minimum or the maximum (no temporary)."""
    return values.size == 0 or bool(np.isfinite(values.min()) and np.isfinite(values.max()))


def nonfinite_map(tensor: NativeTensor) -> NonfiniteMap:
    """Nonfinite counts, first locations and per-element / per-(head, token) maps of one tensor."""
    heads, tokens, channels = tensor.shape[1:]
    if _all_finite(tensor.values):
        kinds = np.zeros(tensor.shape[1:], dtype=np.uint8)  # all FINITE (0): pages untouched until a view reads them
        where = np.zeros(0, dtype=np.intp)
    else:
        kinds = nonfinite_kinds(tensor.bits[0], tensor.dtype)
        where = np.flatnonzero(kinds)
    flat_kinds = kinds.reshape(-1)
    found = flat_kinds[where]
    counts = np.bincount(found, minlength=len(_KIND_COLUMN))
    # Counted only where something is nonfinite: no temporary of the map's size beyond the map itself.
    per_head_token = np.zeros((heads * tokens, len(PER_HEAD_TOKEN_KINDS)), dtype=PER_HEAD_TOKEN_DTYPE)
    np.add.at(per_head_token, (where // channels, _KIND_COLUMN[found]), 1)
    first = np.unravel_index(where[:FIRST_LOCATIONS_LIMIT], (heads, tokens, channels))
    nan = int(counts[QUIET_NAN] + counts[SIGNALING_NAN])
    others = (int(counts[kind]) for kind in (SIGNALING_NAN, POSITIVE_INFINITY, NEGATIVE_INFINITY))
    locations = tuple(zip(*(axis.tolist() for axis in first), strict=True))
    per_head_token = readonly(per_head_token.reshape(heads, tokens, len(PER_HEAD_TOKEN_KINDS)))
    return NonfiniteMap(tensor.name, tensor.dtype, nan, *others, locations, readonly(kinds), per_head_token)


def bit_positions(xor: np.ndarray, dtype: str) -> np.ndarray:
    """int64 [bits of dtype]: how many of the XOR patterns `xor` have each bit set (index 0 = least significant)."""
    bit_count = 8 * ITEM_SIZE[dtype]
    return ((xor.reshape(-1, 1) >> np.arange(bit_count, dtype=xor.dtype)) & 1).sum(axis=0, dtype=np.int64)


def bit_flips(bit_position_counts: np.ndarray, dtype: str) -> dict[str, int]:
    """Differing bits per IEEE field {sign, exponent, mantissa} from per-bit-position counts (`bit_positions`)."""
    _, exponent_bits, mantissa_bits = FIELD_BITS[dtype]
    return {
        "sign": int(bit_position_counts[mantissa_bits + exponent_bits]),
        "exponent": int(bit_position_counts[mantissa_bits : mantissa_bits + exponent_bits].sum()),
        "mantissa": int(bit_position_counts[:mantissa_bits].sum()),
    }


def field_mask(xor: np.ndarray, dtype: str) -> np.ndarray:
    """uint8, the shape of `xor`: SIGN_DIFFERS | EXPONENT_DIFFERS | MANTISSA_DIFFERS per XOR pattern."""
    sign_mask, exponent_mask, mantissa_mask = field_masks(dtype)
    return (
        np.where((xor & sign_mask) != 0, SIGN_DIFFERS, 0)
        | np.where((xor & exponent_mask) != 0, EXPONENT_DIFFERS, 0)
        | np.where((xor & mantissa_mask) != 0, MANTISSA_DIFFERS, 0)
    ).astype(np.uint8)


def last_row(stored: NativeTensor, incoming: NativeTensor) -> LastRow:
    """Bitwise comparison of stored[0, :, T-1, :] with incoming[0, :, 0, :] (same dtype, same KVH and D)."""
    if stored.dtype != incoming.dtype or stored.shape[1] != incoming.shape[1] or stored.shape[3] != incoming.shape[3]:
        raise ValueError(
            f"{stored.name} {stored.dtype}{stored.shape} does not match "
            f"{incoming.name} {incoming.dtype}{incoming.shape}"
        )
    dtype = stored.dtype
    stored_bits = _frozen(stored.bits[0, :, -1, :])
    incoming_bits = _frozen(incoming.bits[0, :, 0, :])
    xor = readonly(stored_bits ^ incoming_bits)
    bit_position_counts = bit_positions(xor, dtype)
    differs = xor != 0
    return LastRow(
        dtype=dtype,
        compared=int(xor.size),
        mismatched=int(np.count_nonzero(differs)),
        per_kv_head=tuple(differs.sum(axis=1).tolist()),
        positions=tuple(map(tuple, np.argwhere(differs)[:LAST_ROW_POSITIONS_LIMIT].tolist())),
        bit_flips=bit_flips(bit_position_counts, dtype),
        stored_bits=stored_bits,
        incoming_bits=incoming_bits,
        xor=xor,
        stored_values=_frozen(stored.values[0, :, -1, :]),
        incoming_values=_frozen(incoming.values[0, :, 0, :]),
        field_mask=readonly(field_mask(xor, dtype)),
        bit_position_counts=readonly(bit_position_counts),
    )


def tensor_facts(tensors: Mapping[str, NativeTensor]) -> TensorFacts:
    """Nonfinite maps of the six tensors (FACTS_THREADS at once) and the last-row checks of keys and values."""
    maps = run_on_threads(lambda name: nonfinite_map(tensors[name]), TENSOR_NAMES, FACTS_THREADS)
    keys = last_row(tensors["storedKeys"], tensors["incomingKeys"])
    values = last_row(tensors["storedValues"], tensors["incomingValues"])
    return TensorFacts(dict(zip(TENSOR_NAMES, maps, strict=True)), keys, values)
