"""The blocks the JSON reports share, and JSON-safe numbers; pure serialization, no I/O.

The packet, pair and replay reports build their common parts here (metrics, comparisons, ULP, emulation
entries, runtime, limitations), so one key is spelled in one place.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from explorer.analysis.metrics import largest_at
from explorer.analysis.result import Baseline, Comparison, Decisive, Emulation, Metrics, Ulp
from explorer.analysis.score import Score
from explorer.version import __version__

# What the analysis does not prove (docs/packet-format.md, What admission does not prove, and docs/report.md).
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
    """The metrics block M (docs/report.md)."""
    return {
        "linf": finite(m.linf),
        "rmse": finite(m.rmse),
        "relativeL2": finite(m.relative_l2),
        "undefinedReason": m.undefined_reason,
        "nonfinite": {"actual": dict(m.nonfinite_actual), "reference": dict(m.nonfinite_reference)},
    }


def location_block(at: tuple[int, int] | None) -> dict[str, int] | None:
    """Where a worst value sits: {"queryHead", "channel"} of the output [QH, D], or None (docs/report.md)."""
    return None if at is None else {"queryHead": at[0], "channel": at[1]}


def linf_at(c: Comparison, metrics: Metrics) -> dict[str, int] | None:
    """Where block `metrics` of `c` has its linf (largest defined c.abs_error); None when it is None or 0."""
    return None if not metrics.linf else location_block(largest_at(c.abs_error))


def _head_linf_at(c: Comparison, head: int) -> dict[str, int] | None:
    """Where query head `head` of `c` has its linf; None when that head's linf is None or 0."""
    return location_block((head, largest_at(c.abs_error[head : head + 1])[1])) if c.per_head[head].linf else None


def global_block(c: Comparison) -> dict[str, Any]:
    """The global metrics block of `c` with `linfAt`, the element of its largest |actual - reference|."""
    return {**metrics_block(c.global_metrics), "linfAt": linf_at(c, c.global_metrics)}


def comparison_block(c: Comparison, group: int) -> dict[str, Any]:
    """The comparison block C (docs/report.md): global and per-head metrics (`group` query heads per KV head)."""
    per_head = [
        {**metrics_block(m), "queryHead": h, "kvHead": h // group, "linfAt": _head_linf_at(c, h)}
        for h, m in enumerate(c.per_head)
    ]
    return {"global": global_block(c), "perHead": per_head}


def ulp_block(u: Ulp) -> dict[str, Any]:
    """The ULP block U (docs/report.md)."""
    return {
        "max": u.max,
        "maxAt": location_block(largest_at(u.distance) if u.max else None),
        "p99": u.p99,
        "nonfinitePairs": u.nonfinite_pairs,
        "histogram": [list(bucket) for bucket in u.histogram],
    }


def count_block(count: int | None, per_head) -> dict[str, Any] | None:
    """{"global", "perHead"} of a count, or None."""
    return None if count is None else {"global": count, "perHead": list(per_head)}


def emulation_block(e: Emulation, group: int) -> dict[str, Any]:
    """One emulation entry (docs/emulations.md)."""
    return {
        "id": e.id,
        "kernel": e.kernel,
        "label": e.label,
        "parameters": dict(e.parameters),
        "assumptions": list(e.assumptions),
        "outputDType": e.output_dtype,
        "resolved": None if e.resolved is None else dict(e.resolved),
        "notEmulated": e.not_emulated,
        "notEmulatedCode": e.not_emulated_code,
        "compared": e.compared,
        **baseline_block(e),
        "ulp": None if e.ulp is None else ulp_block(e.ulp),
        "vsOutput": None if e.vs_output is None else comparison_block(e.vs_output, group),
        "vsPrimaryReference": (
            None if e.vs_primary_reference is None else comparison_block(e.vs_primary_reference, group)
        ),
        "library": None if e.library is None else dict(e.library),
    }


def score_block(s: Score) -> dict[str, Any]:
    """The `score` block: the packet score, each query head's and the heads not compared (null scores)."""
    return {
        "value": finite(s.value),
        "perHead": [finite(v) for v in s.per_head],
        "headsNotCompared": s.heads_not_compared,
    }


@functools.cache
def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution, read from its metadata without importing it (None if absent).

    The first `NAME-VERSION.dist-info` on sys.path names it; importlib.metadata (about 20 ms of imports, a tenth
    of a CLI analysis) is asked only when there is none (an egg or a zip on the path).
    """
    wanted = re.sub(r"[-_.]+", "_", distribution).lower()
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            stem, _, suffix = name.rpartition(".")
            project, _, version = stem.partition("-")
            if suffix == "dist-info" and version and re.sub(r"[-_.]+", "_", project).lower() == wanted:
                return version
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def emulation_list(emulations: Sequence[Emulation], group: int) -> list[dict[str, Any]]:
    """The report's emulation entries in table order (docs/emulations.md, Reading the counts)."""
    from explorer.analysis.emulation import ranked  # loaded only when a report has emulations, as in analyze

    return [emulation_block(e, group) for e in ranked(emulations)]


def decisive_block(d: Decisive | None) -> dict[str, Any] | None:
    """emulationDecisive: the elements where the emulations disagree (global, per head, first positions)."""
    if d is None:
        return None
    return {"global": d.count, "perHead": list(d.per_head), "positions": [list(p) for p in d.positions]}


def baseline_block(b: Baseline | Emulation) -> dict[str, Any]:
    """bitEqual and bitEqualDecisive of an Emulation, or of the Baseline (emulationBaseline: the rounded reference
    counted like an emulation)."""
    return {
        "bitEqual": count_block(b.bit_equal, b.bit_equal_per_head),
        "bitEqualDecisive": count_block(b.bit_equal_decisive, b.bit_equal_decisive_per_head),
    }


def runtime() -> dict[str, str | None]:
    """Versions of the explorer, Python, numpy and ml_dtypes (installed, not imported by the analysis)."""
    return {
        "explorer": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "mlDtypes": installed_version("ml_dtypes"),
    }
