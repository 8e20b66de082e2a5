"""build_comparison_report: a Pair as the JSON-ready comparison report (docs/pairs.md); no I/O, no UI.

Every float is finite or None (json.dumps(allow_nan=False) holds). The emulation keys are null without an emulation
request: "emulations", "emulationsRequested", "emulationDecisive" and "emulationBaseline" hold each side's own ({"a",
"b"}) as `explorer analyze SIDE --emulate` reports them; "emulationMatrix" the elements of each side bit-equal to each
emulation (table order, then the baseline), or is null with "emulationMatrixReason".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from explorer.analysis.blocks import (
    LIMITATIONS,
    baseline_block,
    comparison_block,
    count_block,
    decisive_block,
    emulation_list,
    global_block,
    plain,
    runtime,
    ulp_block,
)
from explorer.analysis.result import Analysis
from explorer.pair.emulation import ranked_rows
from explorer.pair.model import (
    PAIR_LIMITATIONS,
    SIDES,
    BaselineRow,
    BitDifference,
    LadderRow,
    MatrixRow,
    NearerCounts,
    OutputDifference,
    Pair,
)

COMPARISON_SCHEMA = "attention-explorer.comparison.v1"


def side_summary(analysis: Analysis) -> dict[str, Any]:
    """`S` of docs/pairs.md, The comparison report's keys: one side's path, hash, status and the fields allowed to
    differ."""
    admission = analysis.admission
    interpreted = not admission.refused
    identity, selection, tensors = admission.identity, admission.selection, admission.tensors
    return {
        "path": admission.path,
        "packetSHA256": admission.packet_sha256,
        "status": analysis.status,
        "backend": identity["backend"] if interpreted and identity else None,
        "dispatch": selection["dispatch"] if interpreted and selection else None,
        "kernelOutputDType": selection["kernelOutputDType"] if interpreted and selection else None,
        "outputDType": tensors["output"].dtype if interpreted and tensors else None,
    }


def _bits(bits: BitDifference, positions_key: str) -> dict[str, Any]:
    return {
        "compared": bits.compared,
        "mismatched": bits.mismatched,
        "perHead": list(bits.per_head),
        positions_key: [list(p) for p in bits.first_positions],
        "bitFlips": dict(bits.bit_flips),
    }


def _inputs(pair: Pair) -> dict[str, Any] | None:
    if pair.inputs is None:
        return None
    return {
        "identical": pair.inputs.identical,
        "tensors": {
            name: {"identical": t.identical, **_bits(t, "firstPositions")} for name, t in pair.inputs.tensors.items()
        },
    }


def _group(pair: Pair) -> int:
    return pair.a.admission.geometry["groupSize"]


def _output(pair: Pair) -> dict[str, Any] | None:
    output: OutputDifference | None = pair.output
    if output is None:
        return None
    bitwise = None if output.bits is None else _bits(output.bits, "positions")
    return {
        "dtypes": {"a": output.dtype_a, "b": output.dtype_b},
        "outputDTypesDiffer": output.dtypes_differ,
        "compared": output.compared,
        **{
            key: None if bitwise is None else bitwise[key] for key in ("mismatched", "perHead", "positions", "bitFlips")
        },
        "ulp": None if output.ulp is None else ulp_block(output.ulp),
        "difference": comparison_block(output.difference, _group(pair)),
    }


def _ladder_row(row: LadderRow | None, analysis: Analysis) -> dict[str, Any] | None:
    """One side's ladder row: its global blocks (each with `linfAt`, read from the side's own comparisons)."""
    if row is None:
        return None
    numerics = analysis.numerics
    return {
        "primary": global_block(numerics.primary),
        "roundedToOutputDType": global_block(numerics.rounded_to_output.comparison),
        "fp64OutputError": global_block(numerics.fp64.output_error),
        "equalToRoundedReference": row.equal_to_rounded_reference,
        "compared": row.compared,
    }


def _counts(counts: NearerCounts) -> dict[str, int]:
    return {"a": counts.a, "b": counts.b, "tie": counts.tie, "undefined": counts.undefined}


def _nearer(pair: Pair) -> dict[str, Any] | None:
    if pair.nearer is None:
        return None
    group = _group(pair)
    return {
        "global": _counts(pair.nearer.global_counts),
        "perHead": [{"queryHead": h, "kvHead": h // group, **_counts(c)} for h, c in enumerate(pair.nearer.per_head)],
    }


def _tokens(pair: Pair) -> dict[str, Any] | None:
    tokens = pair.tokens
    if tokens is None:
        return None
    return {
        "seedToken": tokens.seed_token,
        "targetToken": {"a": tokens.target_a, "b": tokens.target_b},
        "targetTokensDiffer": tokens.differ,
    }


def _side_emulations(analysis: Analysis) -> list[dict[str, Any]] | None:
    """A side's emulation entries exactly as `explorer analyze SIDE --emulate ...` reports them (table order)."""
    if analysis.emulations is None:
        return None
    return emulation_list(analysis.emulations, analysis.admission.geometry["groupSize"])


def _per_side(pair: Pair, block: Callable[[Analysis], Any]) -> dict[str, Any] | None:
    """{a, b} of one emulation key of each side, null without an emulation request."""
    if pair.emulation is None:
        return None
    return {side: block(pair.side(side)) for side in SIDES}


def _side_counts(block: Callable[[Any], dict[str, Any]], field: str) -> Callable[[Analysis], dict[str, Any] | None]:
    """One side's `block` of its emulation counts' `field` (None without counts)."""
    return lambda side: None if side.emulation_counts is None else block(getattr(side.emulation_counts, field))


def emulation_decisive_block(pair: Pair) -> dict[str, Any] | None:
    """emulationDecisive: each side's decisive elements ({"a", "b"}), null without an emulation request."""
    return _per_side(pair, _side_counts(decisive_block, "decisive"))


def _bit_equal(row: MatrixRow | BaselineRow) -> dict[str, Any]:
    """bitEqual, bitEqualDecisive and bitEqualDiffering of one matrix row, each {"a", "b"}."""
    blocks = {side: baseline_block(getattr(row, side)) for side in SIDES}
    return {
        **{key: {side: blocks[side][key] for side in SIDES} for key in ("bitEqual", "bitEqualDecisive")},
        "bitEqualDiffering": {"a": row.differing_a, "b": row.differing_b},
    }


def emulation_matrix_block(pair: Pair) -> dict[str, Any] | None:
    """Per emulation (table order), then the baseline row: output elements of each side bit-equal to it, on the decisive
    elements and on the differing ones."""
    if pair.emulation is None or pair.emulation.rows is None:
        return None
    rows = [
        {
            "id": row.a.id,
            "kernel": row.a.kernel,
            "label": row.a.label,
            "notEmulated": row.a.not_emulated,
            "library": None if row.a.library is None else dict(row.a.library),
            "compared": {"a": row.a.compared, "b": row.b.compared},
            **_bit_equal(row),
        }
        for row in ranked_rows(pair.emulation.rows)
    ]
    return {"emulatedOn": pair.emulation.emulated_on, "rows": rows, "baseline": _bit_equal(pair.emulation.baseline)}


def emulation_differing_block(pair: Pair) -> dict[str, Any] | None:
    """emulationDiffering: the elements where the two outputs differ (with a matrix only)."""
    if pair.emulation is None or pair.emulation.differing is None:
        return None
    return count_block(pair.emulation.differing.count, pair.emulation.differing.per_head)


def build_comparison_report(pair: Pair) -> dict[str, Any]:
    """The report of docs/pairs.md, The comparison report's keys for `pair` (complete for every status)."""
    ladder = None if pair.ladder is None else {side: _ladder_row(pair.ladder[side], pair.side(side)) for side in SIDES}
    return {
        "schema": COMPARISON_SCHEMA,
        "status": pair.status,
        "a": side_summary(pair.a),
        "b": side_summary(pair.b),
        "refusals": [
            {"side": r.side, "code": r.problem.code, "field": r.problem.field, "message": r.problem.message}
            for r in pair.refusals
        ],
        "inconclusiveReasons": [{"code": r.code, "message": r.message} for r in pair.reasons],
        "selection": None if pair.selection is None else {name: plain(value) for name, value in pair.selection},
        "selectionDifferences": [
            {"field": d.field, "a": plain(d.a), "b": plain(d.b)} for d in pair.selection_differences
        ],
        "inputs": _inputs(pair),
        "output": _output(pair),
        "ladder": ladder,
        "nearerPrimaryReference": _nearer(pair),
        "nearerReason": pair.nearer_reason,
        "tokens": _tokens(pair),
        "emulations": _per_side(pair, _side_emulations),
        "emulationsRequested": _per_side(pair, lambda analysis: list(analysis.emulations_requested)),
        "emulationDecisive": emulation_decisive_block(pair),
        "emulationBaseline": _per_side(pair, _side_counts(baseline_block, "baseline")),
        "emulationDiffering": emulation_differing_block(pair),
        "emulationMatrix": emulation_matrix_block(pair),
        "emulationMatrixReason": None if pair.emulation is None else pair.emulation.reason,
        "notes": list(pair.notes),
        "runtime": runtime(),
        "limitations": [*LIMITATIONS, *PAIR_LIMITATIONS],
    }
