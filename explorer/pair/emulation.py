"""The emulation x side matrix of a pair (docs/emulations.md, Reading the counts); no I/O, no UI.

Per emulation, the output elements of each side bit-equal to it: all, decisive and differing ones. When both sides hold
the same emulated inputs the emulations run once ("shared_inputs"), else each side is scored against its own
("each_side_inputs", said in the notes). No matrix when a side is refused or has no reference, or when the geometry or
the output dtypes differ (the reason code says which). Rows are in request order; `ranked_rows` gives the table's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np

from explorer.analysis.analyze import emulations_of
from explorer.analysis.emulation import (
    EmulatedOutput,
    equal_on,
    head_counts,
    normalised_ids,
    rank_key,
    resolve_all,
    reused,
    shape_of,
)
from explorer.analysis.result import Analysis
from explorer.pair.model import (
    INPUT_NAMES,
    NO_REFERENCE,
    SHAPE_DIFFERS,
    BaselineRow,
    Differing,
    MatrixRow,
    Pair,
    PairEmulations,
)

SHARED_INPUTS, EACH_SIDE_INPUTS = "shared_inputs", "each_side_inputs"
# Why a pair's emulation matrix is None (the report's "emulationMatrixReason").
SIDE_REFUSED = "side_refused"
OUTPUT_DTYPES_DIFFER = "output_dtypes_differ"
EACH_SIDE_NOTE = (
    "the emulated inputs differ (queries, stored keys or values, the scale or the eligible heads): "
    "each side is scored against the emulations of its own inputs (emulationMatrix.emulatedOn)"
)


def _shared_inputs(pair: Pair) -> bool:
    """True when both sides' emulations read the same values: the emulated tensors, scale, output dtype, eligibility."""
    a, b = pair.a, pair.b
    return (
        all(pair.inputs.tensors[name].identical for name in INPUT_NAMES)  # a paged or real run reads the incoming row
        and a.admission.scale == b.admission.scale
        and np.array_equal(a.numerics.eligible, b.numerics.eligible)
    )


def emulated_outputs(analysis: Analysis) -> tuple[EmulatedOutput, ...]:
    """The emulated outputs a side's scored emulations hold, to score another side with identical inputs."""
    shape = shape_of(analysis.admission.tensors)
    specs = resolve_all([e.id for e in analysis.emulations], shape)
    return tuple(reused(spec, e) for spec, e in zip(specs, analysis.emulations, strict=True))


def _with(
    analysis: Analysis,
    request: str | Iterable[str],
    emulated: tuple[EmulatedOutput, ...] | None = None,
    run: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Analysis:
    """The side's analysis carrying the emulations of `request`, as analyze gives it (`run` False: the ids only)."""
    ids = normalised_ids(request, shape_of(analysis.admission.tensors))
    if not run:
        return dataclasses.replace(analysis, emulations=None, emulation_counts=None, emulations_requested=ids)
    if analysis.emulations_requested == ids:
        return analysis
    found = None if analysis.numerics is None else emulations_of(analysis, ids, emulated, progress)
    emulations, counts = (None, None) if found is None else found
    return dataclasses.replace(analysis, emulations=emulations, emulation_counts=counts, emulations_requested=ids)


def differing(pair: Pair) -> Differing:
    """The elements, eligible on both sides, where the two outputs' bit patterns differ (equal output dtypes)."""
    a, b = (pair.side(side).admission.tensors["output"].bits[0, :, 0, :] for side in ("a", "b"))
    eligible = pair.a.numerics.eligible & pair.b.numerics.eligible
    mask = (a != b) & eligible[:, None]
    count, per_head = head_counts(mask, eligible)
    mask.flags.writeable = False
    return Differing(count, per_head, mask)


def _on_differing(bits: np.ndarray | None, analysis: Analysis, mask: np.ndarray) -> int | None:
    """Of the differing elements, how many of this side's output bits equal `bits` (None without numbers)."""
    if bits is None:
        return None
    output = analysis.admission.tensors["output"].bits[0, :, 0, :]
    return equal_on(bits, output, mask, analysis.numerics.eligible)[0]


def ranked_rows(rows: tuple[MatrixRow, ...]) -> tuple[MatrixRow, ...]:
    """The table order: by the larger of the sides' decisive counts (else bitEqual), ties in request order."""
    return tuple(sorted(rows, key=lambda row: min(rank_key(row.a), rank_key(row.b))))


def _reason(pair: Pair) -> str | None:
    if pair.a.emulations is None or pair.b.emulations is None:
        return NO_REFERENCE
    if pair.inputs is None:
        return SHAPE_DIFFERS
    if pair.output.dtypes_differ:
        return OUTPUT_DTYPES_DIFFER
    return None


def with_emulations(
    pair: Pair, request: str | Iterable[str], progress: Callable[[int, int], None] | None = None
) -> Pair:
    """`pair` whose sides carry the emulations of `request` and the emulation x side matrix (a new Pair).

    Side a's come from analyze's cache (run on a miss); side b is scored against the same emulated outputs when the
    emulated inputs are identical, else against its own. `progress(done, total)` follows side a's computation.
    """
    if pair.refusals:
        return dataclasses.replace(
            pair,
            a=_with(pair.a, request, run=False),
            b=_with(pair.b, request, run=False),
            emulation=PairEmulations(None, None, SIDE_REFUSED),
        )
    a = _with(pair.a, request, progress=progress)
    shared = (
        a.emulations is not None
        and pair.b.numerics is not None
        and pair.inputs is not None
        and not pair.output.dtypes_differ
        and _shared_inputs(pair)
    )
    b = _with(pair.b, request, emulated_outputs(a) if shared else None)
    sides = dataclasses.replace(pair, a=a, b=b)
    reason = _reason(sides)
    if reason is not None:
        return dataclasses.replace(sides, emulation=PairEmulations(None, None, reason))
    found = differing(sides)
    rows = tuple(
        MatrixRow(ea, eb, _on_differing(ea.bits, a, found.mask), _on_differing(eb.bits, b, found.mask))
        for ea, eb in zip(a.emulations, b.emulations, strict=True)
    )
    baselines = [side.emulation_counts.baseline for side in (a, b)]
    rounded = [side.numerics.rounded_to_output.rounded_bits for side in (a, b)]
    baseline = BaselineRow(
        *baselines, _on_differing(rounded[0], a, found.mask), _on_differing(rounded[1], b, found.mask)
    )
    notes = sides.notes if shared else (*sides.notes, EACH_SIDE_NOTE)
    return dataclasses.replace(
        sides,
        notes=notes,
        emulation=PairEmulations(SHARED_INPUTS if shared else EACH_SIDE_INPUTS, rows, None, found, baseline),
    )
