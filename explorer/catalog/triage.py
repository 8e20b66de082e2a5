"""`explorer triage ROOT`: every packet under a root summarized in worker processes; no UI.

JSON lines and a summary table. A packet whose worker raised, died or ran past the time limit is reported once
with status "error" and the code internal_error, worker_crashed or timeout.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from explorer.catalog.discovery import Entry, discover
from explorer.catalog.limits import DEFAULT_TIMEOUT_S, MAX_JOBS
from explorer.catalog.summary import (
    STATUS_ORDER,
    PacketSummary,
    failed_summary,
    list_order,
    selection_groups,
    summarize,
    summary_json,
)
from explorer.catalog.workers import jobs_for, map_isolated
from explorer.foundations.formatting import short_number, text_table
from explorer.foundations.record import Record, record
from explorer.foundations.streams import Sink

PROGRESS_WIDTH = 40  # characters of the progress bar


@record
class Triaged(Record):
    """One packet's line of the triage: its name under the root and its summary."""

    name: str
    summary: PacketSummary


def map_anywhere(
    work: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    jobs: int,
    scheduler: str | None,
    timeout: float | None,
    on_note: Callable[[str], None],
    context: str | None = None,
) -> Iterator[tuple[int, Any]]:
    """map_isolated, or map_on_cluster on the Dask cluster at `scheduler` (Dask imported only then)."""
    if scheduler is None:
        return map_isolated(work, items, jobs=jobs, timeout=timeout, context=context, on_note=on_note)
    from explorer.catalog.cluster import map_on_cluster

    return map_on_cluster(work, items, scheduler=scheduler, timeout=timeout, on_note=on_note)


def triage(
    entries: Sequence[Entry],
    *,
    jobs: int,
    work: Callable[[str], PacketSummary] = summarize,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    scheduler: str | None = None,
    on_note: Callable[[str], None] = lambda note: None,
) -> Iterator[Triaged]:
    """Yield every entry's summary once, as they finish (an error summary where the work raised, died or timed out);
    `scheduler` a Dask address or 'local:N'; `on_note` hears how the run deviated from what was asked."""
    paths = [str(entry.path) for entry in entries]
    results = map_anywhere(work, paths, jobs=jobs, scheduler=scheduler, timeout=timeout, on_note=on_note)
    for index, result in results:
        if isinstance(result, Exception):
            result = failed_summary(paths[index], result)
        yield Triaged(entries[index].name, result)


def json_line_fields(item: Triaged) -> dict:
    """One packet's JSON-line fields: its name under the root plus the summary's keys."""
    return {"name": item.name, **summary_json(item.summary)}


def json_line(item: Triaged) -> str:
    """One packet as a JSON line (a name or path with an undecodable byte keeps it as a \\udcXX escape)."""
    return json.dumps(json_line_fields(item), allow_nan=False)


def _row(item: Triaged) -> list[str]:
    summary = item.summary
    numbers = (summary.score, summary.worst_head, summary.heads_not_compared, summary.noise_floor_ratio)
    numbers += (summary.worst_linf, summary.worst_linf_head, summary.worst_ulp)
    return [item.name, summary.status, *map(short_number, numbers), summary.backend or "-", ",".join(summary.codes)]


def summary_table(items: Sequence[Triaged], root: Path, seconds: float, engine: str, notes: Sequence[str] = ()) -> str:
    """Counts per status and code, every packet by status and score, and the pairs found, under a line naming
    what ran the work (`engine`) and the `notes`."""
    statuses = Counter(item.summary.status for item in items)
    codes = Counter(code for item in items for code in item.summary.codes)
    lines = [f"Triage of {len(items)} packets under {root} ({engine}, {seconds:.2f} s)"]
    lines += [f"Note: {note}" for note in notes]
    lines += ["", "Status counts:"]
    rows = [[status, str(statuses[status])] for status in STATUS_ORDER if statuses[status]]
    lines += text_table(["status", "packets"], rows, left=True)
    if codes:
        lines += ["", "Codes (refusals, inconclusive reasons, errors):"]
        rows = [[code, str(count)] for code, count in sorted(codes.items())]
        lines += text_table(["code", "packets"], rows, left=True)
    ordered = sorted(items, key=lambda item: list_order(item.name, item.summary))
    lines += ["", "Packets by status, then score (error / allowance of the worst element, largest first):"]
    columns = "packet,status,score,worst head,heads not compared,ratio,worst linf,linf head,worst ULP,backend,codes"
    lines += text_table(columns.split(","), [_row(item) for item in ordered], left=True)
    backends = {item.name: item.summary.backend or "-" for item in items}
    groups = selection_groups((item.name, item.summary) for item in items)
    lines += ["", f"Pairs (partners: packets sharing the selection fields): {len(groups)}"]
    lines += [f"  {'  '.join(f'{name} ({backends[name]})' for name in group)}" for group in groups]
    return "".join(line + "\n" for line in lines)


class Progress:
    """A one-line progress bar on a terminal (stderr); draws nothing when the stream is not a terminal."""

    def __init__(self, total: int, stream: TextIO):
        self.total, self.done, self.stream = total, 0, stream
        self.active = stream.isatty()

    def step(self) -> None:
        self.done += 1
        if self.active:
            filled = PROGRESS_WIDTH * self.done // max(self.total, 1)
            self.stream.write(f"\r[{'#' * filled}{'.' * (PROGRESS_WIDTH - filled)}] {self.done}/{self.total}")
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()


def engine_text(jobs: int, packets: int, scheduler: str | None) -> str:
    """What runs the work, as the table's first line says it."""
    if scheduler is not None:
        return f"Dask scheduler {scheduler}"
    used = jobs_for(jobs, packets)
    return f"{used} worker processes" + (
        f", --jobs {jobs} capped at one per packet and at most {MAX_JOBS}" if used < jobs else ""
    )


def run(
    root: Path,
    *,
    jobs: int,
    as_json: bool,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    scheduler: str | None = None,
) -> tuple[str, Sink]:
    """Triage every packet under `root`: JSON lines on `out` with `as_json` (the run stops when its reader goes
    away), progress on `err`; returns the table and the sink of `out` (its `error`: a line not written)."""
    started = time.perf_counter()
    entries = discover(root)
    progress = Progress(len(entries), err)
    sink = Sink(out)
    items, notes = [], []
    results = triage(entries, jobs=jobs, timeout=timeout, scheduler=scheduler, on_note=notes.append)
    try:
        for item in results:
            items.append(item)
            if as_json:
                sink.write(json_line(item) + "\n")
                if not sink.open and sink.error is None:
                    notes.append(
                        f"the reader of the JSON lines went away after {len(items)} packets; the run stopped there"
                    )
                    break
            progress.step()
    finally:
        results.close()
    engine = engine_text(jobs, len(entries), scheduler)
    return summary_table(items, root, time.perf_counter() - started, engine, notes), sink
