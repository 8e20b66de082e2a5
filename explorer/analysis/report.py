"""build_report: the JSON-ready report (report-v1.md section 4) as a pure serialization of an Analysis; no I/O.

Every float in the report is finite or None (json.dumps(allow_nan=False) holds).
"""

from __future__ import annotations

import platform
from typing import Any, Mapping

import ml_dtypes
import numpy as np

import explorer
from explorer.analysis.result import (
    Analysis,
    Comparison,
    Emulation,
    HeadAttention,
    LastRow,
    Metrics,
    NonfiniteMap,
    Numerics,
    Rounded,
    Ulp,
)
from explorer.packet.model import REFUSED, TENSOR_NAMES

REPORT_SCHEMA = "attention-explorer.report.v1"

# What the analysis does not prove (packet-v1.md section 6, last paragraph, and report-v1.md section 2).
LIMITATIONS = (
    "The last-row check catches a mismatched selected write, but not a gather or decode layout fault "
    "shared by storage and decode.",
    "The last-row check does not detect missing earlier history; that needs an independently captured "
    "incoming-KV mirror.",
    "Reconciliation does not prove that the capture fence and lifetime code was correct.",
    "Cross-backend identity and same-input native operator replay are separate work and are not covered here.",
    "Identity fields (model, artifact and input hashes, backend) are declarations; the explorer cannot "
    "authenticate them.",
    "The reference is an FP32 calculation whose rounding depends on the summation order; two correct "
    "implementations agree to about 1e-5 x max|reference|, not digit for digit.",
)


def _plain(value: Any) -> Any:
    """A JSON-ready copy: mappings become dicts, sequences lists, numpy scalars Python numbers."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float):
        return _finite(value)
    return value


def _finite(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _metrics(m: Metrics) -> dict[str, Any]:
    return {
        "linf": _finite(m.linf),
        "rmse": _finite(m.rmse),
        "relativeL2": _finite(m.relative_l2),
        "undefinedReason": m.undefined_reason,
        "nonfinite": {"actual": dict(m.nonfinite_actual), "reference": dict(m.nonfinite_reference)},
    }


def _per_head(c: Comparison, group: int) -> list[dict[str, Any]]:
    return [{**_metrics(m), "queryHead": h, "kvHead": h // group} for h, m in enumerate(c.per_head)]


def _comparison(c: Comparison, group: int) -> dict[str, Any]:
    return {"global": _metrics(c.global_metrics), "perHead": _per_head(c, group)}


def _ulp(u: Ulp) -> dict[str, Any]:
    return {"max": u.max, "p99": u.p99, "nonfinitePairs": u.nonfinite_pairs,
            "histogram": [list(bucket) for bucket in u.histogram]}


def _rounded(r: Rounded | None, group: int) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"label": r.label, "dtype": r.dtype, "identity": r.identity,
            **_comparison(r.comparison, group), "ulp": _ulp(r.ulp)}


def _reference(n: Numerics, group: int) -> dict[str, Any]:
    primary = n.primary
    narrowed = n.narrowed_query
    return {
        "primary": {
            "label": primary.label,
            **_comparison(primary, group),
            "eligibleGlobal": None if primary.eligible_global is None else _metrics(primary.eligible_global),
        },
        "roundedToOutputDType": _rounded(n.rounded_to_output, group),
        "roundedToKernelOutputDType": _rounded(n.rounded_to_kernel, group),
        "narrowedQuery": None if narrowed is None else {
            "label": narrowed.label,
            "dtype": narrowed.dtype,
            "comparison": _comparison(narrowed.comparison, group),
            "differenceFromPrimary": _comparison(narrowed.difference_from_primary, group),
            "queryRoundingDifference": _comparison(narrowed.query_rounding_difference, group),
        },
        "narrowedQueryReason": n.narrowed_query_reason,
        "fp64": {
            "label": n.fp64.label,
            "referenceError": _comparison(n.fp64.reference_error, group),
            "outputError": _comparison(n.fp64.output_error, group),
        },
    }


def _head_attention(a: HeadAttention) -> dict[str, Any]:
    return {
        "queryHead": a.query_head,
        "kvHead": a.kv_head,
        "maxLogit": _finite(a.max_logit),
        "logSumExp": _finite(a.log_sum_exp),
        "entropy": _finite(a.entropy),
        "lastTokenWeight": _finite(a.last_token_weight),
        "topTokens": None if a.top_tokens is None else [[t, _finite(w)] for t, w in a.top_tokens],
        "undefinedReason": a.undefined_reason,
    }


def _emulation(e: Emulation, group: int) -> dict[str, Any]:
    return {
        "id": e.id, "kernel": e.kernel, "label": e.label, "parameters": dict(e.parameters),
        "assumptions": list(e.assumptions), "outputDType": e.output_dtype, "compared": e.compared,
        "bitEqual": {"global": e.bit_equal, "perHead": list(e.bit_equal_per_head)},
        "ulp": _ulp(e.ulp), "vsOutput": _comparison(e.vs_output, group),
        "vsPrimaryReference": _comparison(e.vs_primary_reference, group),
    }


def _nonfinite(m: NonfiniteMap) -> dict[str, Any]:
    return {"nan": m.nan, "signalingNan": m.signaling_nan, "positiveInfinity": m.positive_infinity,
            "negativeInfinity": m.negative_infinity, "firstLocations": [list(p) for p in m.first_locations]}


def _last_row(r: LastRow) -> dict[str, Any]:
    return {"compared": r.compared, "mismatched": r.mismatched, "perKvHead": list(r.per_kv_head),
            "positions": [list(p) for p in r.positions], "bitFlips": dict(r.bit_flips)}


def runtime() -> dict[str, str]:
    """Versions of the explorer, Python, numpy and ml_dtypes."""
    return {"explorer": explorer.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "mlDtypes": ml_dtypes.__version__}


def build_report(analysis: Analysis) -> dict[str, Any]:
    """The report of report-v1.md section 4 for `analysis` (complete for every status)."""
    admission = analysis.admission
    report: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "status": analysis.status,
        "packet": {"path": admission.path, "packetSHA256": admission.packet_sha256,
                   "metadataSHA256": admission.metadata_sha256},
        "refusals": [{"code": p.code, "field": p.field, "message": p.message} for p in admission.refusals],
        "inconclusiveReasons": [{"code": r.code, "message": r.message} for r in analysis.reasons],
        "identity": None, "selection": None, "sample": None, "geometry": None,
        "tensors": None, "lastRow": None, "reference": None, "attention": None,
        "emulations": None, "emulationsRequested": None,
        "runtime": runtime(),
        "limitations": list(LIMITATIONS),
    }
    if analysis.status == REFUSED:
        return report
    report["identity"] = _plain(admission.identity)
    report["selection"] = _plain(admission.selection)
    report["sample"] = _plain(admission.sample)
    report["geometry"] = _plain(admission.geometry)
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
        report["reference"] = _reference(numerics, group)
        report["attention"] = {"perHead": [_head_attention(a) for a in numerics.attention]}
        if analysis.emulations is not None:
            report["emulations"] = [_emulation(e, group) for e in analysis.emulations]
    if analysis.emulations_requested is not None:
        report["emulationsRequested"] = list(analysis.emulations_requested)
    return report
