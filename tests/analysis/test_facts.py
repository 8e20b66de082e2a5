"""Tensor facts on hand-built tensors: nonfinite maps of all six tensors, the last-row check.

Tensor facts on hand-built tensors: nonfinite maps of all six tensors and the bitwise last-row check.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from explorer.analysis import facts
from explorer.analysis.result import (
    FINITE,
    NEGATIVE_INFINITY,
    POSITIVE_INFINITY,
    QUIET_NAN,
    SIGNALING_NAN,
    LastRow,
    NonfiniteMap,
)
from explorer.packet.dtypes import BITS_DTYPE, ITEM_SIZE, promote
from explorer.packet.model import TENSOR_NAMES, NativeTensor

QH, KVH, T, D = 4, 2, 3, 4
ONE = {"float16": 0x3C00, "bfloat16": 0x3F80, "float32": 0x3F800000}
# Patterns of each nonfinite kind, written out literally per dtype.
KIND_PATTERNS = {
    "float16": {QUIET_NAN: 0x7E01, SIGNALING_NAN: 0xFC01, POSITIVE_INFINITY: 0x7C00, NEGATIVE_INFINITY: 0xFC00},
    "bfloat16": {QUIET_NAN: 0xFFC0, SIGNALING_NAN: 0x7F81, POSITIVE_INFINITY: 0x7F80, NEGATIVE_INFINITY: 0xFF80},
    "float32": {
        QUIET_NAN: 0x7FC00000,
        SIGNALING_NAN: 0x7F800001,
        POSITIVE_INFINITY: 0x7F800000,
        NEGATIVE_INFINITY: 0xFF800000,
    },
}
COLUMN = {QUIET_NAN: 0, SIGNALING_NAN: 1, POSITIVE_INFINITY: 2, NEGATIVE_INFINITY: 3}
# (sign, exponent, mantissa) masks, written out literally per dtype.
MASKS = {
    "float16": (0x8000, 0x7C00, 0x03FF),
    "bfloat16": (0x8000, 0x7F80, 0x007F),
    "float32": (0x80000000, 0x7F800000, 0x007FFFFF),
}


def native(name: str, dtype: str, bits) -> NativeTensor:
    bits = np.asarray(bits).astype(BITS_DTYPE[dtype])
    return NativeTensor(
        name=name,
        dtype=dtype,
        shape=bits.shape,
        byte_count=bits.size * ITEM_SIZE[dtype],
        sha256="0" * 64,
        bits=bits,
    )


def shapes(qh: int = QH, kvh: int = KVH, t: int = T, d: int = D) -> dict[str, tuple[int, int, int, int]]:
    return {
        "queries": (1, qh, 1, d),
        "storedKeys": (1, kvh, t, d),
        "storedValues": (1, kvh, t, d),
        "incomingKeys": (1, kvh, 1, d),
        "incomingValues": (1, kvh, 1, d),
        "output": (1, qh, 1, d),
    }


def packet_bits(kv_dtype: str = "bfloat16", **geometry) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Finite bit arrays for the six tensors (distinct values), incoming rows equal to the stored last rows."""
    kinds = {"queries": "float32", "output": "float16"} | dict.fromkeys(
        ("storedKeys", "storedValues", "incomingKeys", "incomingValues"), kv_dtype
    )
    bits = {}
    for name, shape in shapes(**geometry).items():
        count = int(np.prod(shape))
        bits[name] = (ONE[kinds[name]] + np.arange(count) % 64).reshape(shape).astype(BITS_DTYPE[kinds[name]])
    bits["incomingKeys"] = bits["storedKeys"][:, :, -1:, :].copy()
    bits["incomingValues"] = bits["storedValues"][:, :, -1:, :].copy()
    return bits, kinds


def facts_of(bits: dict[str, np.ndarray], kinds: dict[str, str]):
    return facts.tensor_facts({name: native(name, kinds[name], bits[name]) for name in TENSOR_NAMES})


def arrays_of(record) -> list[np.ndarray]:
    return [v for v in (getattr(record, f.name) for f in dataclasses.fields(record)) if isinstance(v, np.ndarray)]


# ---------------------------------------------------------------- nonfinite maps


def test_all_finite():
    result = facts_of(*packet_bits())
    assert list(result.nonfinite) == list(TENSOR_NAMES)
    for name, shape in shapes().items():
        nonfinite = result.nonfinite[name]
        assert isinstance(nonfinite, NonfiniteMap)
        assert nonfinite.tensor == name
        counts = (nonfinite.nan, nonfinite.signaling_nan, nonfinite.positive_infinity, nonfinite.negative_infinity)
        assert counts == (0, 0, 0, 0)
        assert nonfinite.total == 0
        assert nonfinite.first_locations == ()
        assert nonfinite.kinds.shape == shape[1:] and nonfinite.kinds.dtype == np.uint8
        assert not nonfinite.kinds.any()
        assert nonfinite.per_head_token.shape == (*shape[1:3], 4) and nonfinite.per_head_token.dtype == np.uint16
        assert not nonfinite.per_head_token.any()


@pytest.mark.parametrize("name", TENSOR_NAMES)
@pytest.mark.parametrize("kind", [QUIET_NAN, SIGNALING_NAN, POSITIVE_INFINITY, NEGATIVE_INFINITY])
@pytest.mark.parametrize("kv_dtype", ["bfloat16", "float16", "float32"])
def test_each_kind_in_each_tensor(name, kind, kv_dtype):
    bits, kinds = packet_bits(kv_dtype)
    dtype = kinds[name]
    head, token = 1, bits[name].shape[2] - 1
    bits[name][0, head, token, 2] = KIND_PATTERNS[dtype][kind]
    bits[name][0, 0, 0, 3] = KIND_PATTERNS[dtype][kind]
    result = facts_of(bits, kinds)
    nonfinite = result.nonfinite[name]
    is_nan = kind in (QUIET_NAN, SIGNALING_NAN)
    assert nonfinite.nan == 2 * is_nan
    assert nonfinite.signaling_nan == 2 * (kind == SIGNALING_NAN)
    assert nonfinite.positive_infinity == 2 * (kind == POSITIVE_INFINITY)
    assert nonfinite.negative_infinity == 2 * (kind == NEGATIVE_INFINITY)
    assert nonfinite.first_locations == ((0, 0, 3), (head, token, 2))
    assert nonfinite.kinds[head, token, 2] == kind and nonfinite.kinds[0, 0, 3] == kind
    assert np.count_nonzero(nonfinite.kinds != FINITE) == 2
    expected = np.zeros(nonfinite.per_head_token.shape, np.uint16)
    expected[head, token, COLUMN[kind]] += 1
    expected[0, 0, COLUMN[kind]] += 1
    assert np.array_equal(nonfinite.per_head_token, expected)
    for other in TENSOR_NAMES:
        if other != name:
            assert result.nonfinite[other].total == 0


def test_first_locations_row_major_and_capped():
    bits, kinds = packet_bits(t=40)  # storedKeys [1, 2, 40, 4]: 320 elements
    rng = np.random.default_rng(3)
    chosen = rng.choice(320, size=150, replace=False)
    flat = bits["storedKeys"].reshape(-1)
    for position in rng.permutation(chosen):  # written in random order
        flat[position] = KIND_PATTERNS["bfloat16"][SIGNALING_NAN if position % 2 else POSITIVE_INFINITY]
    nonfinite = facts_of(bits, kinds).nonfinite["storedKeys"]
    expected = [tuple(int(i) for i in np.unravel_index(p, (2, 40, 4))) for p in np.sort(chosen)]
    assert facts.FIRST_LOCATIONS_LIMIT == 100
    assert nonfinite.first_locations == tuple(expected[:100])
    odd = int(np.count_nonzero(chosen % 2))
    assert (nonfinite.nan, nonfinite.signaling_nan, nonfinite.positive_infinity) == (odd, odd, 150 - odd)
    assert int(nonfinite.per_head_token.sum()) == 150
    per_row = np.zeros((2, 40, 4), np.int64)
    for p in chosen:
        h, t, _ = np.unravel_index(p, (2, 40, 4))
        per_row[h, t, COLUMN[SIGNALING_NAN if p % 2 else POSITIVE_INFINITY]] += 1
    assert np.array_equal(nonfinite.per_head_token, per_row)


def test_per_head_token_mixes_kinds_in_one_row():
    bits, kinds = packet_bits()
    row = bits["storedValues"][0, 1, 2]
    row[:] = [KIND_PATTERNS["bfloat16"][k] for k in (QUIET_NAN, SIGNALING_NAN, NEGATIVE_INFINITY, QUIET_NAN)]
    nonfinite = facts_of(bits, kinds).nonfinite["storedValues"]
    assert nonfinite.per_head_token[1, 2].tolist() == [2, 1, 0, 1]
    assert nonfinite.per_head_token.sum() == 4
    assert (nonfinite.nan, nonfinite.signaling_nan, nonfinite.negative_infinity, nonfinite.total) == (3, 1, 1, 4)
    assert nonfinite.first_locations == ((1, 2, 0), (1, 2, 1), (1, 2, 2), (1, 2, 3))


def test_large_stored_keys():
    bits, kinds = packet_bits(qh=16, kvh=2, t=5585, d=256)
    bits["storedKeys"][0, 1, 5000, 7] = KIND_PATTERNS["bfloat16"][QUIET_NAN]
    bits["storedKeys"][0, 0, 5584, 255] = KIND_PATTERNS["bfloat16"][NEGATIVE_INFINITY]
    result = facts_of(bits, kinds)
    nonfinite = result.nonfinite["storedKeys"]
    assert nonfinite.first_locations == ((0, 5584, 255), (1, 5000, 7))
    assert nonfinite.per_head_token[1, 5000].tolist() == [1, 0, 0, 0]
    assert nonfinite.per_head_token[0, 5584].tolist() == [0, 0, 0, 1]
    keys = result.last_row_keys
    assert (keys.compared, keys.mismatched, keys.per_kv_head, keys.positions) == (512, 1, (1, 0), ((0, 255),))


# ---------------------------------------------------------------- last row


def test_last_row_equal():
    bits, kinds = packet_bits()
    result = facts_of(bits, kinds)
    for row, stored in ((result.last_row_keys, "storedKeys"), (result.last_row_values, "storedValues")):
        assert isinstance(row, LastRow)
        fields = (row.dtype, row.compared, row.mismatched, row.per_kv_head, row.positions)
        assert fields == ("bfloat16", KVH * D, 0, (0, 0), ())
        assert row.bit_flips == {"sign": 0, "exponent": 0, "mantissa": 0}
        assert not row.xor.any() and not row.field_mask.any() and not row.bit_position_counts.any()
        assert np.array_equal(row.stored_bits, bits[stored][0, :, -1, :])
        assert np.array_equal(row.stored_bits, row.incoming_bits)
        expected = promote(bits[stored][0, :, -1, :], "bfloat16").view(np.uint32)
        assert np.array_equal(row.stored_values.view(np.uint32), expected)
        assert row.bit_position_counts.shape == (16,) and row.bit_position_counts.dtype == np.int64


def literal_cases(dtype: str):
    """(stored pattern, incoming pattern, mismatched, flips {sign, exponent, mantissa}, field_mask)."""
    sign, exponent, mantissa = MASKS[dtype]
    one = ONE[dtype]
    quiet = (mantissa + 1) >> 1
    nan_a, nan_b = exponent | quiet | 1, exponent | quiet | 2
    lowest_exponent_bit = exponent & -exponent
    return {
        "sign only": (one, one | sign, 1, (1, 0, 0), 1),
        "exponent": (one, one ^ (lowest_exponent_bit * 3), 1, (0, 2, 0), 2),
        "mantissa": (one, one ^ 0b101, 1, (0, 0, 2), 4),
        "all fields": (one, one ^ (sign | lowest_exponent_bit | 1), 1, (1, 1, 1), 7),
        "+0 vs -0": (0, sign, 1, (1, 0, 0), 1),
        "nan payloads": (nan_a, nan_b, 1, (0, 0, 2), 4),
        "identical nans": (nan_a, nan_a, 0, (0, 0, 0), 0),
        "identical signaling nans": (exponent | 1, exponent | 1, 0, (0, 0, 0), 0),
        "quiet vs signaling": (exponent | 1, exponent | quiet | 1, 1, (0, 0, 1), 4),
    }


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("case", list(literal_cases("float16")))
@pytest.mark.parametrize("which", ["keys", "values"])
def test_last_row_differences(dtype, case, which):
    stored_pattern, incoming_pattern, mismatched, flips, mask = literal_cases(dtype)[case]
    bits, kinds = packet_bits(dtype)
    stored, incoming = ("storedKeys", "incomingKeys") if which == "keys" else ("storedValues", "incomingValues")
    bits[stored][0, 1, -1, 2] = stored_pattern
    bits[incoming][0, 1, 0, 2] = incoming_pattern
    result = facts_of(bits, kinds)
    row = result.last_row_keys if which == "keys" else result.last_row_values
    other = result.last_row_values if which == "keys" else result.last_row_keys
    assert other.mismatched == 0
    assert row.dtype == dtype and row.compared == KVH * D
    assert row.mismatched == mismatched
    assert row.per_kv_head == (0, mismatched)
    assert row.positions == (((1, 2),) if mismatched else ())
    assert row.bit_flips == dict(zip(("sign", "exponent", "mantissa"), flips, strict=True))
    assert int(row.xor[1, 2]) == stored_pattern ^ incoming_pattern
    assert int(row.field_mask[1, 2]) == mask
    assert np.count_nonzero(row.field_mask) == (mask != 0)
    assert int(row.bit_position_counts.sum()) == sum(flips)
    assert row.bit_position_counts.shape == (8 * ITEM_SIZE[dtype],)


def test_bit_position_counts_and_per_kv_head():
    bits, kinds = packet_bits()
    bits["incomingValues"][0, 0, 0, 0] ^= 0x8001
    bits["incomingValues"][0, 0, 0, 3] ^= 0x0001
    bits["incomingValues"][0, 1, 0, 1] ^= 0x0180
    row = facts_of(bits, kinds).last_row_values
    expected = np.zeros(16, np.int64)
    expected[[0, 15]] = [2, 1]
    expected[[7, 8]] = 1
    assert np.array_equal(row.bit_position_counts, expected)
    assert row.bit_flips == {"sign": 1, "exponent": 2, "mantissa": 2}
    assert row.per_kv_head == (2, 1)
    assert row.positions == ((0, 0), (0, 3), (1, 1))
    assert row.field_mask.tolist() == [[5, 0, 0, 4], [0, 2, 0, 0]]


def test_positions_capped_in_row_major_order():
    bits, kinds = packet_bits(kvh=2, t=2, d=3000)
    bits["incomingKeys"] ^= np.uint16(0x0001)  # every one of 6,000 elements differs in the last mantissa bit
    row = facts_of(bits, kinds).last_row_keys
    assert facts.LAST_ROW_POSITIONS_LIMIT == 4096
    assert row.compared == row.mismatched == 6000
    assert row.per_kv_head == (3000, 3000)
    assert len(row.positions) == 4096
    assert row.positions == tuple((h, c) for h in range(2) for c in range(3000))[:4096]
    assert row.bit_flips == {"sign": 0, "exponent": 0, "mantissa": 6000}


def test_last_row_rejects_different_dtypes():
    bits, _kinds = packet_bits()
    with pytest.raises(ValueError, match="does not match"):
        facts.last_row(
            native("storedKeys", "bfloat16", bits["storedKeys"]),
            native("incomingKeys", "float16", bits["incomingKeys"]),
        )


# ---------------------------------------------------------------- immutability


def test_every_array_is_read_only_and_detached_from_inputs():
    bits, kinds = packet_bits()
    bits["storedKeys"][0, 0, 0, 0] = KIND_PATTERNS["bfloat16"][QUIET_NAN]
    bits["incomingValues"][0, 0, 0, 0] ^= 1
    tensors = {name: native(name, kinds[name], bits[name]) for name in TENSOR_NAMES}
    assert tensors["storedKeys"].bits.flags.writeable  # the inputs here are writable on purpose
    result = facts.tensor_facts(tensors)
    records = [*result.nonfinite.values(), result.last_row_keys, result.last_row_values]
    arrays = [array for record in records for array in arrays_of(record)]
    assert len(arrays) == 6 * 2 + 2 * 7
    for array in arrays:
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[(0,) * array.ndim] = 0
    before = result.last_row_keys.stored_bits.copy()
    tensors["storedKeys"].bits[0, :, -1, :] = 0
    assert np.array_equal(result.last_row_keys.stored_bits, before)
