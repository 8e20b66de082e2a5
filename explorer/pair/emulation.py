"""The emulation x side matrix of a pair (emulation-v1 section 3): each side's emulations, run once when the emulated inputs are identical; reads the sides' analyses and analyze's emulation cache, no I/O, no UI.

Reading of the matrix: row `id` says how many output elements of side a, and of
side b, equal that emulation's output bit for bit. When both sides hold the same
emulated inputs (queries, stored keys and values bit for bit, the scale, the
output dtype and the eligible heads), the emulations run once and both sides are
scored against the same emulated outputs ("shared_inputs"). When the shapes agree
but those inputs differ, each side is scored against the emulations of its own inputs
("each_side_inputs", also said in the pair's notes): each count still answers
"which arithmetic produced this side", but the two columns no longer share one
emulated output. No matrix exists when a side is refused or has no reference, or
when the geometry or the output dtypes differ (the ids then normalise
differently); the reason code says which.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

import numpy as np

from explorer.analysis.analyze import emulations_of
from explorer.analysis.emulation import EmulatedOutput, normalised_ids, resolve_all
from explorer.analysis.result import Analysis, Emulation
from explorer.pair.model import MatrixRow, Pair, PairEmulations

SHARED_INPUTS, EACH_SIDE_INPUTS = "shared_inputs", "each_side_inputs"
EMULATED_TENSORS = ("queries", "storedKeys", "storedValues")
# Why a pair's emulation matrix is None (the report's "emulationMatrixReason").
SIDE_REFUSED = "side_refused"
NO_REFERENCE = "no_reference"
SHAPE_DIFFERS = "shape_differs"
OUTPUT_DTYPES_DIFFER = "output_dtypes_differ"
EACH_SIDE_NOTE = ("the emulated inputs differ (queries, stored keys or values, the scale or the eligible heads): "
                  "each side is scored against the emulations of its own inputs (emulationMatrix.emulatedOn)")


def _shared_inputs(pair: Pair) -> bool:
    """True when both sides' emulations read the same values: the emulated tensors, scale, output dtype, eligibility."""
    a, b = pair.a, pair.b
    return (all(pair.inputs.tensors[name].identical for name in EMULATED_TENSORS)
            and a.admission.scale == b.admission.scale
            and np.array_equal(a.numerics.eligible, b.numerics.eligible))


def emulated_outputs(emulations: tuple[Emulation, ...], output_dtype: str) -> tuple[EmulatedOutput, ...]:
    """The emulated outputs a side's scored emulations hold, to score another side with identical inputs."""
    specs = resolve_all([e.id for e in emulations], output_dtype)
    return tuple(EmulatedOutput(spec, output_dtype, e.values, e.bits) for spec, e in zip(specs, emulations, strict=True))


def _held(analysis: Analysis, ids: tuple[str, ...]) -> tuple[Emulation, ...] | None:
    """The side's own emulations when it already holds exactly `ids`."""
    return analysis.emulations if analysis.emulations_requested == ids else None


def _with(analysis: Analysis, request: str | Iterable[str], emulated: tuple[EmulatedOutput, ...] | None = None,
          run: bool = True) -> Analysis:
    """The side's analysis carrying the emulations of `request` (what analyze(path, emulate=request) gives).

    With `run` False (a refused pair: nothing is compared) only the requested ids are set.
    """
    tensors = analysis.admission.tensors
    ids = normalised_ids(request, None if tensors is None else tensors["output"].dtype)
    found = None
    if run:
        found = _held(analysis, ids)
        if found is None and analysis.numerics is not None:
            found = emulations_of(analysis, ids, emulated=emulated)
    return dataclasses.replace(analysis, emulations=found, emulations_requested=ids)


def _reason(pair: Pair) -> str | None:
    if pair.a.emulations is None or pair.b.emulations is None:
        return NO_REFERENCE
    if pair.inputs is None:
        return SHAPE_DIFFERS
    if pair.output.dtypes_differ:
        return OUTPUT_DTYPES_DIFFER
    return None


def with_emulations(pair: Pair, request: str | Iterable[str]) -> Pair:
    """`pair` whose sides carry the emulations of `request` and the emulation x side matrix (a new Pair).

    Side a's emulations come from its analysis or analyze's cache (run on a miss); side b
    is scored against the same emulated outputs when the emulated inputs are identical,
    else against its own.
    """
    if pair.refusals:
        return dataclasses.replace(pair, a=_with(pair.a, request, run=False), b=_with(pair.b, request, run=False),
                                   emulation=PairEmulations(None, None, SIDE_REFUSED))
    a = _with(pair.a, request)
    shared = (a.emulations is not None and pair.b.numerics is not None and pair.inputs is not None
              and not pair.output.dtypes_differ and _shared_inputs(pair))
    output_dtype = None if pair.output is None else pair.output.dtype_a
    b = _with(pair.b, request, emulated_outputs(a.emulations, output_dtype) if shared else None)
    sides = dataclasses.replace(pair, a=a, b=b)
    reason = _reason(sides)
    if reason is not None:
        return dataclasses.replace(sides, emulation=PairEmulations(None, None, reason))
    rows = tuple(MatrixRow(ea, eb) for ea, eb in zip(a.emulations, b.emulations, strict=True))
    notes = sides.notes if shared else (*sides.notes, EACH_SIDE_NOTE)
    return dataclasses.replace(sides, notes=notes,
                               emulation=PairEmulations(SHARED_INPUTS if shared else EACH_SIDE_INPUTS, rows, None))
