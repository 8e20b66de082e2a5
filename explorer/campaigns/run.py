"""run_campaigns(root): place every packet under a root, then compare the cells that differ; no UI.

Both passes run as `explorer triage` runs (local workers or Dask). Only cells whose bytes differ are read again,
for their counts; each campaign's first outputs-differ cell is compared as a whole pair, with the emulations
asked for. A packet rewritten between the passes leaves its cell without counts, code `packet_changed`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from explorer.campaigns.collect import cell_counts, cell_pair, digests_of, member_of
from explorer.campaigns.grid import Campaign, campaigns_of, counted, listed, needs_pair, origin_of
from explorer.campaigns.model import PACKET_CHANGED, CellPair, Member
from explorer.catalog.discovery import Entry, discover
from explorer.catalog.limits import DEFAULT_TIMEOUT_S
from explorer.catalog.summary import ERROR, failed_summary
from explorer.catalog.triage import map_anywhere
from explorer.foundations.record import Record, record

Progress = Callable[[int], Callable[[], None]]  # given a pass's item count, the function to call per finished item


@record
class CampaignRun(Record):
    """Every campaign under a root, the notes of the run, and the packets and pairs counted."""

    root: str
    packets: int
    campaigns: tuple[Campaign, ...]
    notes: tuple[str, ...]


def _members(entries: Sequence[Entry], run: Callable, progress: Progress) -> list[Member]:
    paths = [str(entry.path) for entry in entries]
    members: list[Member | None] = [None] * len(paths)
    step = progress(len(paths))
    for index, result in run(member_of, paths):
        if isinstance(result, Exception):
            failed = failed_summary(paths[index], result)
            result = Member("", failed.path, ERROR, failed.codes, None, None, None, None, None, None, None)
        members[index] = dataclasses.replace(result, name=entries[index].name)
        step()
    return members


def _with_pairs(
    campaigns: tuple[Campaign, ...],
    members: list[Member],
    run: Callable,
    progress: Progress,
    emulate: tuple[str, ...] | None,
    notes: list[str],
) -> tuple[Campaign, ...]:
    """Counts for every cell whose bytes differ, the whole pair for each campaign's first outputs-differ cell."""
    by_name = {member.name: member for member in members}
    tasks, places = [], []
    for number, campaign in enumerate(campaigns):
        origin = origin_of(campaign).first_outputs_differ
        for index, cell in enumerate(campaign.cells):
            if needs_pair(cell):
                sides = [by_name[cell.packets[backend][0]] for backend in campaign.backends]
                paths = tuple(side.path for side in sides)
                read = tuple(digests_of(side) for side in sides)
                tasks.append((cell_pair, (*paths, read, emulate)) if cell is origin else (cell_counts, (*paths, read)))
                places.append((number, index))
    cells = [list(campaign.cells) for campaign in campaigns]
    failed, changed = [], []
    step = progress(len(tasks))
    for task_index, result in run(run_task, tasks):
        number, index = places[task_index]
        cell = cells[number][index]
        if isinstance(result, Exception):
            code = failed_summary(tasks[task_index][1][0], result).codes
            failed.append(f"step {cell.output_index} layer {cell.layer}")
            result = CellPair(ERROR, code, {}, None, None, None, None, None, None)
        elif result.status == PACKET_CHANGED:
            changed.append(f"step {cell.output_index} layer {cell.layer}")
        cells[number][index] = dataclasses.replace(
            cell, pair=result, codes=tuple(dict.fromkeys(cell.codes + result.codes))
        )
        step()
    if failed:
        notes.append(
            f"{counted(len(failed), 'cell')} could not be compared (their counts are missing): {listed(failed)}"
        )
    if changed:
        notes.append(
            f"{counted(len(changed), 'cell')} changed between the two passes (a packet was rewritten after it was "
            f"placed; code {PACKET_CHANGED}, no counts; run the campaign again): {listed(changed)}"
        )
    return tuple(
        dataclasses.replace(campaign, cells=tuple(row)) for campaign, row in zip(campaigns, cells, strict=True)
    )


def run_task(task: tuple[Callable[[Any], CellPair], Any]) -> CellPair:
    """One cell's work, (cell_counts or cell_pair, its task); module-level, so picklable."""
    work, argument = task
    return work(argument)


def run_campaigns(
    root: str | os.PathLike,
    *,
    jobs: int,
    scheduler: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    request: str | None = None,
    backends: tuple[str, str] | None = None,
    emulate: tuple[str, ...] | None = None,
    progress: Progress = lambda total: lambda: None,
    on_note: Callable[[str], None] = lambda note: None,
    entries: Sequence[Entry] | None = None,
    context: str | None = None,
) -> CampaignRun:
    """Every campaign under `root` (among `entries` when given) with its cells' states and counts; never raises
    for packet content."""
    notes: list[str] = []

    def run(work: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        return map_anywhere(
            work,
            items,
            jobs=jobs,
            scheduler=scheduler,
            timeout=timeout,
            context=context,
            on_note=lambda note: (notes.append(note), on_note(note)),
        )

    members = _members(discover(root) if entries is None else entries, run, progress)
    campaigns, placement_notes = campaigns_of(members, request=request, backends=backends)
    notes += placement_notes
    failed = [member.name for member in members if member.status == ERROR]
    if failed:
        notes.append(
            f"{counted(len(failed), 'packet')} could not be summarized (a worker raised, died or ran out of time): "
            f"{listed(sorted(failed))}"
        )
    campaigns = _with_pairs(campaigns, members, run, progress, emulate, notes)
    return CampaignRun(os.fspath(root), len(members), campaigns, tuple(dict.fromkeys(notes)))
