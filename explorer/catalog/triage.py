"""`explorer triage ROOT`: every packet under a root summarized in worker processes, JSON lines and a summary table; never imports the UI.

Discovery is the app's (`explorer.catalog.discovery`); each worker runs the pure
`summarize(path)`, so the same function could be mapped on any other engine.
A packet whose worker raised or died is reported once with status "error".
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence, TextIO

from explorer.analysis.formatting import short_number
from explorer.catalog.summary import (INTERNAL_ERROR, STATUS_ORDER, WORKER_CRASHED, PacketSummary, error_summary,
                                       selection_groups, summarize, summary_json, triage_order)
from explorer.catalog.discovery import Entry, discover
from explorer.catalog.workers import WorkerCrashed, map_isolated

PROGRESS_WIDTH = 40  # characters of the progress bar


@dataclass(frozen=True)
class Triaged:
    """One packet's line of the triage: its name under the root and its summary."""

    name: str
    summary: PacketSummary


def triage(entries: Sequence[Entry], *, jobs: int,
           work: Callable[[str], PacketSummary] = summarize) -> Iterator[Triaged]:
    """Yield every entry's summary once, as the workers finish them (an error summary where a worker raised or died)."""
    paths = [str(entry.path) for entry in entries]
    for index, result in map_isolated(work, paths, jobs=jobs):
        if isinstance(result, Exception):
            code = WORKER_CRASHED if isinstance(result, WorkerCrashed) else INTERNAL_ERROR
            result = error_summary(paths[index], code)
        yield Triaged(entries[index].name, result)


def json_line(item: Triaged) -> str:
    """One packet as a JSON line: its name under the root plus the summary's keys."""
    return json.dumps({"name": item.name, **summary_json(item.summary)}, allow_nan=False)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
            for line in (header, *rows)]


def summary_table(items: Sequence[Triaged], root: Path, seconds: float, jobs: int) -> str:
    """Counts per status and code, every packet by status and score, and the pairs found."""
    statuses = Counter(item.summary.status for item in items)
    codes = Counter(code for item in items for code in item.summary.codes)
    lines = [f"Triage of {len(items)} packets under {root} ({jobs} worker processes, {seconds:.2f} s)", "",
             "Status counts:"]
    lines += _table(["status", "packets"], [[status, str(statuses[status])] for status in STATUS_ORDER
                                            if statuses[status]])
    if codes:
        lines += ["", "Codes (refusals, inconclusive reasons, errors):"]
        lines += _table(["code", "packets"], [[code, str(count)] for code, count in sorted(codes.items())])
    ordered = sorted(items, key=lambda item: triage_order(item.name, item.summary))
    lines += ["", "Packets by status, then score (error / allowance of the worst element, largest first):"]
    lines += _table(["packet", "status", "score", "heads not compared", "ratio", "worst linf", "head", "worst ULP",
                     "backend", "codes"],
                    [[item.name, item.summary.status, short_number(item.summary.score),
                      short_number(item.summary.heads_not_compared), short_number(item.summary.noise_floor_ratio),
                      short_number(item.summary.worst_linf), short_number(item.summary.worst_head),
                      short_number(item.summary.worst_ulp), item.summary.backend or "-", ",".join(item.summary.codes)]
                     for item in ordered])
    backends = {item.name: item.summary.backend or "-" for item in items}
    groups = selection_groups((item.name, item.summary) for item in items)
    lines += ["", f"Pairs (packets sharing the compare-v1 selection fields): {len(groups)}"]
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


def run(root: Path, *, jobs: int, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> str:
    """Triage every packet under `root`: JSON lines on `out` with `as_json`, progress on `err`; returns the table."""
    started = time.perf_counter()
    entries = discover(root)
    progress = Progress(len(entries), err)
    items = []
    for item in triage(entries, jobs=jobs):
        items.append(item)
        if as_json:
            out.write(json_line(item) + "\n")
            out.flush()
        progress.step()
    return summary_table(items, root, time.perf_counter() - started, jobs)
