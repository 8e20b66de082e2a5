"""build_report: an Analysis as the JSON-ready report (docs/report.md), a pure serialization; no I/O.

Every float in the report is finite or None (json.dumps(allow_nan=False) holds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from explorer.analysis.blocks import (
    LIMITATIONS,
    baseline_block,
    comparison_block,
    decisive_block,
    emulation_list,
    finite,
    linf_at,
    metrics_block,
    plain,
    runtime,
    score_block,
    ulp_block,
)
from explorer.analysis.ranking import worst_score_head
from explorer.analysis.result import Analysis, HeadAttention, LastRow, NonfiniteMap, Numerics, Rounded
from explorer.packet.files import PACKET_JSON
from explorer.packet.model import REFUSED, TENSOR_NAMES

REPORT_SCHEMA = "attention-explorer.report.v1"
REPORT_SUFFIX = ".report.json"  # an exported or downloaded report: NAME.report.json
REPORT_INDENT = 2


def _rounded(r: Rounded | None, group: int) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "label": r.label,
        "dtype": r.dtype,
        "identity": r.identity,
        **comparison_block(r.comparison, group),
        "ulp": ulp_block(r.ulp),
    }


def _reference(n: Numerics, group: int) -> dict[str, Any]:
    primary = n.primary
    narrowed = n.narrowed_query
    return {
        "primary": {
            "label": primary.label,
            **comparison_block(primary, group),
            "eligibleGlobal": None
            if primary.eligible_global is None
            else {**metrics_block(primary.eligible_global), "linfAt": linf_at(primary, primary.eligible_global)},
        },
        "roundedToOutputDType": _rounded(n.rounded_to_output, group),
        "roundedToKernelOutputDType": _rounded(n.rounded_to_kernel, group),
        "narrowedQuery": None
        if narrowed is None
        else {
            "label": narrowed.label,
            "dtype": narrowed.dtype,
            "comparison": comparison_block(narrowed.comparison, group),
            "differenceFromPrimary": comparison_block(narrowed.difference_from_primary, group),
            "queryRoundingDifference": comparison_block(narrowed.query_rounding_difference, group),
        },
        "narrowedQueryReason": n.narrowed_query_reason,
        "fp64": {
            "label": n.fp64.label,
            "referenceError": comparison_block(n.fp64.reference_error, group),
            "outputError": comparison_block(n.fp64.output_error, group),
        },
    }


def _head_attention(a: HeadAttention) -> dict[str, Any]:
    return {
        "queryHead": a.query_head,
        "kvHead": a.kv_head,
        "maxLogit": finite(a.max_logit),
        "logSumExp": finite(a.log_sum_exp),
        "entropy": finite(a.entropy),
        "lastTokenWeight": finite(a.last_token_weight),
        "topTokens": None if a.top_tokens is None else [[t, finite(w)] for t, w in a.top_tokens],
        "undefinedReason": a.undefined_reason,
    }


def _nonfinite(m: NonfiniteMap) -> dict[str, Any]:
    return {
        "nan": m.nan,
        "signalingNan": m.signaling_nan,
        "positiveInfinity": m.positive_infinity,
        "negativeInfinity": m.negative_infinity,
        "firstLocations": [list(p) for p in m.first_locations],
    }


def _last_row(r: LastRow) -> dict[str, Any]:
    return {
        "compared": r.compared,
        "mismatched": r.mismatched,
        "perKvHead": list(r.per_kv_head),
        "positions": [list(p) for p in r.positions],
        "bitFlips": dict(r.bit_flips),
    }


def build_report(analysis: Analysis) -> dict[str, Any]:
    """The report of docs/report.md, The report's keys for `analysis` (complete for every status)."""
    admission = analysis.admission
    report: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "status": analysis.status,
        "packet": {
            "path": admission.path,
            "packetSHA256": admission.packet_sha256,
            "metadataSHA256": admission.metadata_sha256,
        },
        "refusals": [{"code": p.code, "field": p.field, "message": p.message} for p in admission.refusals],
        "inconclusiveReasons": [{"code": r.code, "message": r.message} for r in analysis.reasons],
        "score": None,
        "identity": None,
        "selection": None,
        "sample": None,
        "geometry": None,
        "tensors": None,
        "lastRow": None,
        "reference": None,
        "attention": None,
        "emulations": None,
        "emulationsRequested": None,
        "emulationDecisive": None,
        "emulationBaseline": None,
        "builds": None,
        "buildsReason": None,
        "runtime": runtime(),
        "limitations": list(LIMITATIONS),
    }
    if analysis.status == REFUSED:
        return report
    report.update((key, plain(getattr(admission, key))) for key in ("identity", "selection", "sample", "geometry"))
    facts = analysis.facts
    if facts is not None:
        report["tensors"] = {
            name: {
                "dtype": t.dtype,
                "shape": list(t.shape),
                "byteCount": t.byte_count,
                "sha256": t.sha256,
                "nonfinite": _nonfinite(facts.nonfinite[name]),
            }
            for name, t in ((name, admission.tensors[name]) for name in TENSOR_NAMES)
        }
        report["lastRow"] = {"keys": _last_row(facts.last_row_keys), "values": _last_row(facts.last_row_values)}
    numerics = analysis.numerics
    if numerics is not None:
        group = numerics.eligible.size // admission.tensors["storedKeys"].shape[1]
        report["score"] = {**score_block(numerics.score), "worstHead": worst_score_head(numerics)}
        report["reference"] = _reference(numerics, group)
        report["attention"] = {"perHead": [_head_attention(a) for a in numerics.attention]}
        if analysis.emulations is not None:
            report["emulations"] = emulation_list(analysis.emulations, group)
            report["emulationDecisive"] = decisive_block(analysis.emulation_counts.decisive)
            report["emulationBaseline"] = baseline_block(analysis.emulation_counts.baseline)
            report["builds"], report["buildsReason"] = builds_keys(analysis)
    if analysis.emulations_requested is not None:
        report["emulationsRequested"] = list(analysis.emulations_requested)
    return report


def builds_keys(analysis: Analysis) -> tuple[dict[str, Any] | None, str | None]:
    """`builds` and `buildsReason` (docs/emulations.md): both null unless the builds set was scored."""
    from explorer.analysis.emulation.attribution import packet_attribution  # loaded only with emulations

    found = packet_attribution(analysis)
    if found is None or found.block is None:
        return None, None if found is None else found.reason
    return plain(found.block), None


def packet_name(analysis: Analysis) -> str:
    """The packet directory's name (the path as given may be the directory or its packet.json)."""
    path = Path(analysis.admission.path)
    return (path.parent if path.name == PACKET_JSON else path).name or "packet"


def report_text(analysis: Analysis) -> str:
    """The JSON report exactly as `explorer analyze --json` prints it."""
    return json.dumps(analysis.report(), allow_nan=False, indent=REPORT_INDENT) + "\n"
