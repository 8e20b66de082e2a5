"""compare(a, b): two captures of one selection as one immutable Pair result (docs/pairs.md).

Every number of a side is read from its own cached analysis; the pair adds only what needs both sides (selection
differences, input bytes, output differences, which output is nearer a shared reference). Swapping the sides swaps `a`
and `b` and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

import numpy as np

from explorer.analysis.analyze import analyze
from explorer.analysis.emulation import expand
from explorer.analysis.facts import FIRST_LOCATIONS_LIMIT, bit_flips, bit_positions
from explorer.analysis.metrics import compare as compare_metrics
from explorer.analysis.metrics import readonly, ulp_distance
from explorer.analysis.ranking import selection_key
from explorer.analysis.result import Analysis
from explorer.foundations.bounded import quoted
from explorer.packet.files import PACKET_JSON
from explorer.packet.model import INCONCLUSIVE, REFUSED, Reason
from explorer.pair.emulation import with_emulations
from explorer.pair.model import (
    DIFFERENCE_LABEL,
    INPUT_NAMES,
    INPUTS_DIFFER,
    INPUTS_DIFFER_NOTE,
    NEARER_A,
    NEARER_B,
    NEARER_KEYS,
    NO_REFERENCE,
    OUTPUT_DTYPES_NOTE,
    OUTPUT_POSITIONS_LIMIT,
    SAME_BACKEND_NOTE,
    SCALE_DIFFERS,
    SELECTION_DIFFERS,
    SHAPE_DIFFERS,
    SIDE_INCONCLUSIVE,
    SIDES,
    TIE,
    UNDEFINED,
    BitDifference,
    Inputs,
    LadderRow,
    Nearer,
    NearerCounts,
    OutputDifference,
    Pair,
    SamePacketError,
    SelectionDifference,
    SideRefusal,
    Tokens,
)

COMPARED, PAIR_INCONCLUSIVE = "compared", INCONCLUSIVE
# ---------------------------------------------------------------- sides


def _packet_json(path: str) -> str:
    return os.path.join(path, PACKET_JSON) if os.path.isdir(path) else path


def _check_distinct(path_a: str, path_b: str) -> None:
    """Raise SamePacketError when both paths resolve to one packet.json."""
    try:
        first, second = os.stat(_packet_json(path_a)), os.stat(_packet_json(path_b))
    except (OSError, ValueError):
        return  # a side that cannot be opened is refused by its own admission
    if (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino):
        raise SamePacketError(
            f"{quoted(os.fsdecode(path_a))} and {quoted(os.fsdecode(path_b))} are the same "
            "packet.json; compare two captures, or a byte-identical copy in another directory"
        )


def _analysis(side: str | os.PathLike | Analysis) -> Analysis:
    return side if isinstance(side, Analysis) else analyze(side)


# ---------------------------------------------------------------- selection and shape


def _selection(a: Analysis, b: Analysis) -> tuple[tuple[tuple[str, Any], ...] | None, tuple[SelectionDifference, ...]]:
    """The selection fields both sides share, and those that differ (None, () when a side has no selection)."""
    key_a, key_b = selection_key(a), selection_key(b)
    if key_a is None or key_b is None:
        return None, ()
    fields = list(zip(key_a, key_b, strict=True))
    shared = tuple((name, value) for (name, value), (_, other) in fields if value == other)
    differences = tuple(
        SelectionDifference(name, value, other) for (name, value), (_, other) in fields if value != other
    )
    return shared, differences


def _shape(analysis: Analysis) -> tuple | None:
    admission = analysis.admission
    if admission.geometry is None or admission.tensors is None:
        return None
    geometry, dtypes = admission.geometry, tuple(admission.tensors[name].dtype for name in INPUT_NAMES)
    return (geometry["queryHeads"], geometry["kvHeads"], geometry["headDim"], geometry["tokens"], dtypes)


def _shape_message(a: Analysis, b: Analysis) -> str:
    def text(analysis: Analysis) -> str:
        shape = _shape(analysis)
        if shape is None:
            return "no verified tensors"
        qh, kvh, d, t, dtypes = shape
        inputs = ", ".join(f"{n} {dt}" for n, dt in zip(INPUT_NAMES, dtypes, strict=True))
        return f"QH{qh}/KVH{kvh}/D{d}/T{t}, inputs {inputs}"

    return f"a: {text(a)}; b: {text(b)}"


# ---------------------------------------------------------------- bits


def bit_difference(name: str, dtype: str, bits_a: np.ndarray, bits_b: np.ndarray, limit: int) -> BitDifference:
    """Bitwise comparison of two same-shape pattern arrays whose axis 0 is the head axis."""
    if np.array_equal(bits_a, bits_b):
        flips = MappingProxyType(bit_flips(np.zeros(8 * bits_a.itemsize, dtype=np.int64), dtype))
        return BitDifference(name, dtype, True, int(bits_a.size), 0, (0,) * bits_a.shape[0], (), flips)
    xor = bits_a ^ bits_b
    where = np.flatnonzero(xor)
    per_head = np.bincount(where // (xor.size // xor.shape[0]), minlength=xor.shape[0])
    first = np.unravel_index(where[:limit], xor.shape)
    return BitDifference(
        tensor=name,
        dtype=dtype,
        identical=False,
        compared=int(xor.size),
        mismatched=int(where.size),
        per_head=tuple(int(n) for n in per_head),
        first_positions=tuple(zip(*(axis.tolist() for axis in first), strict=True)),
        bit_flips=MappingProxyType(bit_flips(bit_positions(xor.reshape(-1)[where], dtype), dtype)),
    )


def _inputs(a: Analysis, b: Analysis) -> Inputs:
    tensors = {}
    for name in INPUT_NAMES:
        first, second = a.admission.tensors[name], b.admission.tensors[name]
        tensors[name] = bit_difference(name, first.dtype, first.bits[0], second.bits[0], FIRST_LOCATIONS_LIMIT)
    return Inputs(all(t.identical for t in tensors.values()), MappingProxyType(tensors))


def _output(a: Analysis, b: Analysis) -> OutputDifference:
    first, second = a.admission.tensors["output"], b.admission.tensors["output"]
    bits_a, bits_b = first.bits[0, :, 0, :], second.bits[0, :, 0, :]
    every_head = np.ones(bits_a.shape[0], dtype=bool)
    difference = compare_metrics(
        DIFFERENCE_LABEL, first.values[0, :, 0, :], second.values[0, :, 0, :], every_head, reference_computed=False
    )
    if first.dtype != second.dtype:
        return OutputDifference(first.dtype, second.dtype, True, int(bits_a.size), None, None, None, difference)
    bits = bit_difference("output", first.dtype, bits_a, bits_b, OUTPUT_POSITIONS_LIMIT)
    differs, ulp = readonly(bits_a != bits_b), ulp_distance(bits_a, bits_b, first.dtype, every_head)
    return OutputDifference(first.dtype, second.dtype, False, int(bits_a.size), bits, differs, ulp, difference)


# ---------------------------------------------------------------- ladder and nearer


def ladder_row(analysis: Analysis) -> LadderRow | None:
    """The side's global primary, rounded and FP64-output metrics and its elements equal to the rounded reference, over
    its eligible heads (`compared`: their element count)."""
    numerics = analysis.numerics
    if numerics is None:
        return None
    output_bits = analysis.admission.tensors["output"].bits[0, :, 0, :]
    rounded = numerics.rounded_to_output
    eligible = numerics.eligible
    equal = (output_bits == rounded.rounded_bits)[eligible]
    return LadderRow(
        numerics.primary.global_metrics,
        rounded.comparison.global_metrics,
        numerics.fp64.output_error.global_metrics,
        int(np.count_nonzero(equal)),
        int(equal.size),
    )


def _counts(codes: np.ndarray) -> NearerCounts:
    return NearerCounts(*(int(n) for n in np.bincount(codes.reshape(-1), minlength=len(NEARER_KEYS))))


def _nearer(a: Analysis, b: Analysis) -> Nearer:
    """Per element: |a - ref| against |b - ref| in FP64, each side's own abs_error (NaN: undefined)."""
    error_a, error_b = a.numerics.primary.abs_error, b.numerics.primary.abs_error
    codes = np.full(error_a.shape, UNDEFINED, dtype=np.int8)
    defined = np.isfinite(error_a) & np.isfinite(error_b)
    codes[defined & (error_a < error_b)] = NEARER_A
    codes[defined & (error_b < error_a)] = NEARER_B
    codes[defined & (error_a == error_b)] = TIE
    return Nearer(_counts(codes), tuple(_counts(row) for row in codes), readonly(codes))


def _nearer_reason(a: Analysis, b: Analysis, inputs: Inputs | None) -> str | None:
    if inputs is None:
        return SHAPE_DIFFERS
    if not inputs.identical:
        return INPUTS_DIFFER
    if a.admission.scale != b.admission.scale:
        return SCALE_DIFFERS
    if a.numerics is None or b.numerics is None:
        return NO_REFERENCE
    return None


def _tokens(a: Analysis, b: Analysis) -> Tokens | None:
    sample_a, sample_b = a.admission.sample, b.admission.sample
    if sample_a is None or sample_b is None:
        return None
    seed = sample_a["seedToken"] if sample_a["seedToken"] == sample_b["seedToken"] else None
    return Tokens(seed, sample_a["targetToken"], sample_b["targetToken"])


# ---------------------------------------------------------------- the pair


def _refused(a: Analysis, b: Analysis) -> Pair:
    """The pair of two analyses at least one of which is refused: its sides' refusals, nothing compared."""
    sides = zip(SIDES, (a, b), strict=True)
    refusals = tuple(SideRefusal(name, problem) for name, side in sides for problem in side.admission.refusals)
    return Pair(a, b, REFUSED, refusals)


def _notes(a: Analysis, b: Analysis, inputs: Inputs | None, output: OutputDifference | None) -> tuple[str, ...]:
    notes = []
    backend_a, backend_b = a.admission.identity["backend"], b.admission.identity["backend"]
    if backend_a == backend_b:
        notes.append(SAME_BACKEND_NOTE.format(backend=backend_a))
    if inputs is not None and not inputs.identical:
        notes.append(INPUTS_DIFFER_NOTE)
    if output is not None and output.dtypes_differ:
        notes.append(OUTPUT_DTYPES_NOTE)
    return tuple(notes)


def pair_of(a: Analysis, b: Analysis) -> Pair:
    """The Pair of two analyses (no I/O: everything is read from them)."""
    if a.status == REFUSED or b.status == REFUSED:
        return _refused(a, b)
    reasons = [
        Reason(SIDE_INCONCLUSIVE, f"side {name} is inconclusive: " + ", ".join(r.code for r in side.reasons))
        for name, side in zip(SIDES, (a, b), strict=True)
        if side.status == INCONCLUSIVE
    ]
    selection, differences = _selection(a, b)
    if differences:
        reasons.append(Reason(SELECTION_DIFFERS, "selection fields differ: " + ", ".join(d.field for d in differences)))
    shape_a, shape_b = _shape(a), _shape(b)
    same_shape = shape_a is not None and shape_a == shape_b
    if not same_shape:
        reasons.append(Reason(SHAPE_DIFFERS, f"the geometry or an input dtype differs ({_shape_message(a, b)})"))
    inputs = _inputs(a, b) if same_shape else None
    output = _output(a, b) if same_shape else None
    ladder = {name: ladder_row(side) for name, side in zip(SIDES, (a, b), strict=True)}
    nearer_reason = _nearer_reason(a, b, inputs)
    return Pair(
        a=a,
        b=b,
        status=PAIR_INCONCLUSIVE if reasons else COMPARED,
        refusals=(),
        reasons=tuple(reasons),
        selection=selection,
        selection_differences=differences,
        inputs=inputs,
        output=output,
        ladder=None if all(row is None for row in ladder.values()) else MappingProxyType(ladder),
        nearer=_nearer(a, b) if nearer_reason is None else None,
        nearer_reason=nearer_reason,
        tokens=_tokens(a, b),
        notes=_notes(a, b, inputs, output),
    )


def compare(
    a: str | os.PathLike | Analysis, b: str | os.PathLike | Analysis, emulate: str | Iterable[str] | None = None
) -> Pair:
    """The pair of packets `a` and `b` (paths or analyze() results); each side's analysis comes from analyze's cache.

    `emulate` (as for analyze) adds each side's emulations and the emulation x side matrix (`Pair.emulation`). Raises
    SamePacketError when both name one packet.json and EmulationIdError for an unknown id, before reading anything;
    never for packet content.
    """
    if emulate is not None:
        expand(emulate)
    path_a = a.admission.path if isinstance(a, Analysis) else os.fspath(a)
    path_b = b.admission.path if isinstance(b, Analysis) else os.fspath(b)
    if isinstance(a, Analysis) and a is b:
        raise SamePacketError("the same analysis was given for both sides")
    _check_distinct(path_a, path_b)
    pair = pair_of(_analysis(a), _analysis(b))
    return pair if emulate is None else with_emulations(pair, emulate)
