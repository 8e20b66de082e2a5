"""The shared blocks of report-v1's JSON reports (metrics, comparisons, ULP, emulation entries, runtime, limitations) and JSON-safe numbers; pure serialization, no I/O.

The packet report (analysis/report.py), the comparison report (pair/report.py) and
any later report build their common parts here, so one key is spelled in one place.
"""

from __future__ import annotations

import platform
from typing import Any, Mapping

import ml_dtypes
import numpy as np

from explorer.analysis.result import Comparison, Emulation, Metrics, Ulp
from explorer.analysis.score import Score
from explorer.version import __version__

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


def plain(value: Any) -> Any:
    """A JSON-ready copy: mappings become dicts, sequences lists, numpy scalars Python numbers."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float):
        return finite(value)
    return value


def finite(value: float | None) -> float | None:
    """The value as a Python float, or None when it is missing, NaN or infinite (JSON has no NaN)."""
    return None if value is None or not np.isfinite(value) else float(value)


def metrics_block(m: Metrics) -> dict[str, Any]:
    """The metrics block (report-v1 M): linf, rmse, relativeL2, undefinedReason, nonfinite counts."""
    return {
        "linf": finite(m.linf),
        "rmse": finite(m.rmse),
        "relativeL2": finite(m.relative_l2),
        "undefinedReason": m.undefined_reason,
        "nonfinite": {"actual": dict(m.nonfinite_actual), "reference": dict(m.nonfinite_reference)},
    }


def per_head_block(c: Comparison, group: int) -> list[dict[str, Any]]:
    """One metrics block per query head, with its query and KV head index (`group` query heads per KV head)."""
    return [{**metrics_block(m), "queryHead": h, "kvHead": h // group} for h, m in enumerate(c.per_head)]


def comparison_block(c: Comparison, group: int) -> dict[str, Any]:
    """The comparison block (report-v1 C): global metrics and the per-head list."""
    return {"global": metrics_block(c.global_metrics), "perHead": per_head_block(c, group)}


def ulp_block(u: Ulp) -> dict[str, Any]:
    """The ULP block (report-v1 U): max, p99, nonfinite pairs and the histogram."""
    return {"max": u.max, "p99": u.p99, "nonfinitePairs": u.nonfinite_pairs,
            "histogram": [list(bucket) for bucket in u.histogram]}


def emulation_block(e: Emulation, group: int) -> dict[str, Any]:
    """One emulation entry (emulation-v1 report keys)."""
    return {
        "id": e.id, "kernel": e.kernel, "label": e.label, "parameters": dict(e.parameters),
        "assumptions": list(e.assumptions), "outputDType": e.output_dtype, "compared": e.compared,
        "bitEqual": {"global": e.bit_equal, "perHead": list(e.bit_equal_per_head)},
        "ulp": ulp_block(e.ulp), "vsOutput": comparison_block(e.vs_output, group),
        "vsPrimaryReference": comparison_block(e.vs_primary_reference, group),
    }


def score_block(s: Score) -> dict[str, Any]:
    """The `score` block: the packet score, each query head's and the heads not compared (null scores)."""
    return {"value": finite(s.value), "perHead": [finite(v) for v in s.per_head],
            "headsNotCompared": s.heads_not_compared}


def runtime() -> dict[str, str]:
    """Versions of the explorer, Python, numpy and ml_dtypes."""
    return {"explorer": __version__, "python": platform.python_version(),
            "numpy": np.__version__, "mlDtypes": ml_dtypes.__version__}
