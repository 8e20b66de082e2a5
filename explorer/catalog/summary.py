"""summarize(path): the few numbers a packet list or `explorer triage` shows for one packet; no UI.

Read off the one analysis, never recomputed: numbers for sorting and pairing, never verdicts. `list_order` is
the one order of every packet list (docs/triage-and-app.md).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from explorer.analysis.analyze import analyze
from explorer.analysis.ranking import selection_key, worst_head, worst_score_head, worst_ulp_per_head
from explorer.analysis.result import Analysis
from explorer.catalog.workers import WorkerCrashed, WorkerTimedOut
from explorer.foundations.record import Record, record
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED

ERROR = "error"  # not an analysis status: the summary could not be made (a crashed worker), see `codes`
WORKER_CRASHED = "worker_crashed"
INTERNAL_ERROR = "internal_error"
TIMEOUT = "timeout"  # the packet's worker ran past triage's per-packet time limit and was ended
# The order of statuses in every packet list (triage's table, the app's sidebar): analyzed first, whose numbers
# rank them, then what could not be analyzed; a packet whose status is not known yet comes last.
STATUS_ORDER = (ANALYZED, INCONCLUSIVE, REFUSED, ERROR)

SelectionKey = tuple[tuple[str, Any], ...]


@record
class PacketSummary(Record):
    """One packet in a list: status, codes and its ranking numbers (None where undefined); `worst_head` has the
    largest score, `worst_linf_head` the largest primary linf (`worst_linf`, `noise_floor_ratio`)."""

    path: str
    status: str
    codes: tuple[str, ...]
    backend: str | None
    selection: SelectionKey | None
    worst_head: int | None
    worst_linf: float | None
    noise_floor_ratio: float | None
    worst_ulp: int | None
    score: float | None = None
    heads_not_compared: int | None = None
    worst_linf_head: int | None = None


def summary_of(analysis: Analysis) -> PacketSummary:
    """The summary of an analysis already made (path as it was given to `analyze`)."""
    admission = analysis.admission
    codes = tuple(problem.code for problem in admission.refusals) + tuple(reason.code for reason in analysis.reasons)
    head = linf_head = linf = ratio = ulp = None
    score = analysis.score
    if analysis.numerics is not None:
        head = worst_score_head(analysis.numerics)
        linf_head, linf, ratio = worst_head(analysis.numerics)
        defined_ulps = [value for value in worst_ulp_per_head(analysis.numerics) if value is not None]
        ulp = max(defined_ulps) if defined_ulps else None
    return PacketSummary(
        path=admission.path,
        status=analysis.status,
        codes=tuple(dict.fromkeys(codes)),
        backend=None if admission.identity is None else admission.identity["backend"],
        selection=selection_key(analysis),
        worst_head=head,
        worst_linf=linf,
        noise_floor_ratio=ratio,
        worst_ulp=ulp,
        score=None if score is None else score.value,
        heads_not_compared=None if score is None else score.heads_not_compared,
        worst_linf_head=linf_head,
    )


def summarize(path: str | os.PathLike) -> PacketSummary:
    """Analyze the packet at `path` and summarize it; pure apart from reading the packet, never raises for content."""
    return summary_of(analyze(path))


def failed_summary(path: str | os.PathLike, error: Exception) -> PacketSummary:
    """The stand-in for a packet whose work gave `error` instead of a summary: a timeout, a crashed worker, or
    anything else raised (internal_error)."""
    crashed = WORKER_CRASHED if isinstance(error, WorkerCrashed) else INTERNAL_ERROR
    code = TIMEOUT if isinstance(error, WorkerTimedOut) else crashed
    return PacketSummary(str(path), ERROR, (code,), None, None, None, None, None, None)


def summary_json(summary: PacketSummary) -> dict:
    """The JSON-ready dict of one summary (camelCase keys; floats at full precision)."""
    return {
        "path": summary.path,
        "status": summary.status,
        "codes": list(summary.codes),
        "backend": summary.backend,
        "selection": None if summary.selection is None else dict(summary.selection),
        "worstHead": summary.worst_head,
        "worstLinfHead": summary.worst_linf_head,
        "worstLinf": summary.worst_linf,
        "noiseFloorRatio": summary.noise_floor_ratio,
        "worstUlp": summary.worst_ulp,
        "score": summary.score,
        "headsNotCompared": summary.heads_not_compared,
    }


def list_order(name: str, summary: PacketSummary | None) -> tuple:
    """The one sort key of every packet list: by STATUS_ORDER (unknown last), the largest score first (none after
    those with one), then the name."""
    if summary is None:
        return (len(STATUS_ORDER), True, 0.0, name)
    score = summary.score
    return (STATUS_ORDER.index(summary.status), score is None, -(score or 0.0), name)


def selection_groups(named: Iterable[tuple[str, PacketSummary | None]]) -> list[tuple[str, ...]]:
    """Names of packets sharing one known selection key (docs/pairs.md, Partners), groups of two or more, by name."""
    groups: dict[SelectionKey, list[str]] = defaultdict(list)
    for name, summary in named:
        if summary is not None and summary.selection is not None:
            groups[summary.selection].append(name)
    return sorted(tuple(sorted(names)) for names in groups.values() if len(names) > 1)
