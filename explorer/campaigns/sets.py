"""Capture sets and the one listing of campaigns the command line, the DataFrame and the app share.

Packets sharing the key (model, artifact, input, request) are one capture set unless two are the same cell on
one backend: then they are split by directory, level by level, so a request captured again under the root is a
campaign of its own; each set is named by its deepest shared directory. A set of two backends or more is listed
as a campaign, one of a single backend apart (docs/campaigns.md, "What a campaign is").
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from explorer.campaigns.model import KEY_FIELDS, CampaignKey, campaign_id
from explorer.catalog.summary import PacketSummary
from explorer.foundations.record import Record, record

ROOT_DIRECTORY = "."  # the capture set of packets spread over the root itself
MIN_COMPARED_BACKENDS = 2  # a capture set with this many backends or more has a grid


class Placed(Protocol):
    """What the split reads of a packet: its name under the root, its key, backend and cell."""

    name: str
    key: Any
    backend: Any
    output_index: Any
    layer: Any


@record
class Placement(Record):
    """A packet placed from its triage summary (the app's packet index), for the listing."""

    name: str
    key: CampaignKey
    backend: str
    output_index: int
    layer: int


@record
class CaptureSet(Record):
    """One campaign's packets: its key, the directory naming it, its id and its backends (most packets first)."""

    id: str
    key: CampaignKey
    directory: str
    members: tuple[Any, ...]
    backends: tuple[str, ...]

    @property
    def compared(self) -> bool:
        return compared(self.backends)


@record
class Listing(Record):
    """The campaigns (two backends or more: a grid each) and, apart, the single-backend capture sets."""

    campaigns: tuple[CaptureSet, ...]
    single_backend: tuple[CaptureSet, ...]


def compared(backends: Sequence[str]) -> bool:
    """The one definition: a capture set is listed as a campaign when it has two backends or more."""
    return len(backends) >= MIN_COMPARED_BACKENDS


def is_index(value: object) -> bool:
    """An integer outputIndex or modelLayerIndex (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def ranked_backends(counts: Mapping[str, int]) -> tuple[str, ...]:
    """The backends of packet counts per backend, the most packets first, then by name."""
    return tuple(sorted(counts, key=lambda backend: (-counts[backend], backend)))


def _directories(name: str) -> tuple[str, ...]:
    return tuple(name.split("/")[:-1])


def _holds_a_cell_twice(members: Sequence[Placed]) -> bool:
    cells = [(member.backend, member.output_index, member.layer) for member in members]
    return len(set(cells)) < len(cells)


def _split(members: list[Placed]) -> list[list[Placed]]:
    """The capture sets of one key's packets: split by directory, level by level, while a cell repeats."""
    done: list[list[Placed]] = []
    pending = [(members, 0)]
    while pending:
        group, depth = pending.pop()
        if not _holds_a_cell_twice(group):
            done.append(group)
            continue
        here: list[Placed] = []
        below: dict[str, list[Placed]] = defaultdict(list)
        for member in group:
            directories = _directories(member.name)
            (below[directories[depth]] if len(directories) > depth else here).append(member)
        if here:
            done.append(here)  # nothing deeper to split them by: their repeated cells are duplicates
        pending += [(below[name], depth + 1) for name in sorted(below, reverse=True)]
    return done


def _directory(members: Sequence[Placed]) -> str:
    """The deepest directory holding every one of `members`, relative to the root."""
    paths = [_directories(member.name) for member in members]
    shared = min(paths, key=len)
    for path in paths:
        shared = shared[: next((depth for depth, part in enumerate(shared) if path[depth] != part), len(shared))]
    return "/".join(shared) or ROOT_DIRECTORY


def capture_sets(placed: Iterable[Placed]) -> tuple[CaptureSet, ...]:
    """Every capture set of `placed`, by key and directory (a key captured once keeps the id of its key alone)."""
    by_key: dict[Any, list[Placed]] = defaultdict(list)
    for member in placed:
        by_key[member.key].append(member)
    sets = []
    for key, members in by_key.items():
        parts = _split(members)
        for part in parts:
            directory = _directory(part)
            ident = campaign_id(key, None if len(parts) == 1 else directory)
            backends = ranked_backends(Counter(member.backend for member in part))
            sets.append(CaptureSet(ident, key, directory, tuple(part), backends))
    return tuple(sorted(sets, key=lambda found: (tuple(str(part) for part in found.key), found.directory)))


def _parts(directory: str) -> tuple[str, ...]:
    return () if directory == ROOT_DIRECTORY else tuple(directory.split("/"))


def _depth(found: CaptureSet) -> int:
    return len(_parts(found.directory))


def _holds(directory: str, member: Placed) -> bool:
    parts = _parts(directory)
    return _directories(member.name)[: len(parts)] == parts


def with_refused(sets: Sequence[CaptureSet], refused: Iterable[Placed]) -> tuple[tuple[CaptureSet, ...], list[Placed]]:
    """The capture sets with each refused packet in the deepest set of its key holding it, and those none holds."""
    members = {found.id: list(found.members) for found in sets}
    unheld = []
    for member in refused:
        holding = [found for found in sets if found.key == member.key and _holds(found.directory, member)]
        if holding:
            members[max(holding, key=_depth).id].append(member)
        else:
            unheld.append(member)
    return tuple(dataclasses.replace(found, members=tuple(members[found.id])) for found in sets), unheld


def listing(placed: Iterable[Placed]) -> Listing:
    """The one listing of campaigns among `placed`: the capture sets with a grid, and the single-backend ones."""
    sets = capture_sets(placed)
    return Listing(
        tuple(found for found in sets if found.compared), tuple(found for found in sets if not found.compared)
    )


def placement(name: str, summary: PacketSummary | None) -> Placement | None:
    """A packet placed from its triage summary, or None when its key, backend or cell is not established."""
    if summary is None or summary.selection is None or summary.backend is None:
        return None
    fields = dict(summary.selection)
    step, layer = fields["outputIndex"], fields["modelLayerIndex"]
    if not (is_index(step) and is_index(layer)):
        return None
    return Placement(name, tuple(fields[field] for field in KEY_FIELDS), summary.backend, step, layer)


def listing_of_summaries(named: Iterable[tuple[str, PacketSummary | None]]) -> Listing:
    """The app's listing: the campaigns among packets known by their triage summaries (name, summary)."""
    return listing(found for found in (placement(name, summary) for name, summary in named) if found is not None)
