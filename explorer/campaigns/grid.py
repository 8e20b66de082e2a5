"""Campaigns from placed packets: grouping, cells in causal order, states and the origin; pure.

Reads `Member` and `CellPair` records only (never tensors), so a grid of 10^5 packets stays small; the rules
are docs/campaigns.md's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from explorer.campaigns.model import (
    DUPLICATE,
    IDENTICAL,
    INPUTS_DIFFER,
    MISSING,
    OUTPUTS_DIFFER,
    REFUSED_STATE,
    TOKENS_DIFFER,
    CampaignKey,
    CellPair,
    Member,
    campaign_id,
)
from explorer.campaigns.sets import ROOT_DIRECTORY, capture_sets, compared, is_index, ranked_backends, with_refused
from explorer.catalog.summary import ERROR
from explorer.foundations.record import Record, record
from explorer.packet.model import REFUSED
from explorer.pair.model import INPUT_NAMES

NAMES_IN_NOTE = 5  # packet names a note lists before "and N more"


@record
class Cell(Record):
    """One (outputIndex, modelLayerIndex) of a campaign: its state, its packets per backend and its pair's numbers."""

    output_index: int
    layer: int
    state: str
    packets: Mapping[str, tuple[str, ...]]
    codes: tuple[str, ...]
    seed_tokens: Mapping[str, object]
    inputs_differ: tuple[str, ...]  # the input tensors whose digests differ
    pair: CellPair | None = None

    @property
    def position(self) -> tuple[int, int]:
        return self.output_index, self.layer


@record
class Campaign(Record):
    """One capture set of a request: the two backends compared, every cell in causal order, and notes."""

    id: str
    key: CampaignKey
    backends: tuple[str, ...]
    packets_per_backend: Mapping[str, int]
    cells: tuple[Cell, ...]
    notes: tuple[str, ...]
    capture_set: str = ROOT_DIRECTORY  # the directory naming the capture set, relative to the root


@record
class Origin(Record):
    """Where the campaign's differences start (docs/campaigns.md, "The origin")."""

    first_outputs_differ: Cell | None
    first_inputs_differ: Cell | None
    explained: bool | None  # an outputs-differ cell precedes the first inputs-differ cell
    first_tokens_differ: Cell | None
    gaps_before: tuple[Cell, ...]  # missing, duplicate or refused cells before the origin (all, without one)


def listed(names: Sequence[str], separator: str = ", ", limit: int = NAMES_IN_NOTE) -> str:
    """Up to `limit` names, then how many more."""
    shown = separator.join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 cell', '2 cells': a count and its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def are(count: int) -> str:
    """'is' after a count of one, else 'are'."""
    return "is" if count == 1 else "are"


def cell_state(sides: Sequence[Sequence[Member]]) -> tuple[str, tuple[str, ...]]:
    """The state of a cell from the packets of each of its two backends, and the codes it shows."""
    codes = tuple(dict.fromkeys(code for side in sides for member in side for code in member.codes))
    if any(len(side) > 1 for side in sides):
        return DUPLICATE, codes
    if any(not side for side in sides):
        return MISSING, codes
    a, b = sides[0][0], sides[1][0]
    if REFUSED in (a.status, b.status) or a.input_digests is None or b.input_digests is None:
        return REFUSED_STATE, codes
    if a.seed_token != b.seed_token:
        return TOKENS_DIFFER, codes
    if a.input_digests != b.input_digests:
        return INPUTS_DIFFER, codes
    if a.output_digest != b.output_digest:
        return OUTPUTS_DIFFER, codes
    return IDENTICAL, codes


def _differing_inputs(sides: Sequence[Sequence[Member]]) -> tuple[str, ...]:
    if any(len(side) != 1 or side[0].input_digests is None for side in sides):
        return ()
    a, b = sides[0][0].input_digests, sides[1][0].input_digests
    return tuple(name for name, first, second in zip(INPUT_NAMES, a, b, strict=True) if first != second)


def _chosen_backends(counts: Counter, asked: tuple[str, str] | None) -> tuple[tuple[str, ...], list[str]]:
    """The two backends of the grid (asked, else the two with the most packets), and notes on the choice."""
    ranked = ranked_backends(counts)
    if not compared(ranked):
        only = ranked[0] if ranked else "-"
        return tuple(ranked), [
            f"one backend only ({only}): no grid; capture the request on a second backend to compare"
        ]
    if asked is not None:
        absent = [backend for backend in asked if backend not in counts]
        if absent:
            return tuple(ranked[:2]), [
                f"--backends {','.join(asked)}: {', '.join(absent)} has no packet in this "
                f"campaign; compared {ranked[0]} and {ranked[1]} (the most packets)"
            ]
        chosen = tuple(asked)
    else:
        chosen = tuple(ranked[:2])
    if set(ranked) <= set(chosen):
        return chosen, []
    return chosen, [
        f"{len(ranked)} backends ({', '.join(ranked)}): compared {chosen[0]} and {chosen[1]}; "
        "choose others with --backends A,B"
    ]


def build_campaign(
    key: CampaignKey,
    members: Sequence[Member],
    asked: tuple[str, str] | None = None,
    *,
    ident: str | None = None,
    capture_set: str = ROOT_DIRECTORY,
) -> Campaign:
    """The campaign of one capture set's packets, every cell's state decided, no pair numbers yet."""
    counts = Counter(member.backend for member in members)
    backends, notes = _chosen_backends(counts, asked)
    cells: list[Cell] = []
    if compared(backends):
        by_cell: dict[tuple[int, int], dict[str, list[Member]]] = defaultdict(lambda: {b: [] for b in backends})
        for member in members:
            if member.backend in backends:
                by_cell[(member.output_index, member.layer)][member.backend].append(member)
        for (step, layer), per_backend in sorted(by_cell.items()):
            sides = [per_backend[backend] for backend in backends]
            state, codes = cell_state(sides)
            names = MappingProxyType({b: tuple(m.name for m in per_backend[b]) for b in backends})
            seeds = MappingProxyType({b: per_backend[b][0].seed_token for b in backends if per_backend[b]})
            cells.append(Cell(step, layer, state, names, codes, seeds, _differing_inputs(sides)))
        duplicates = [cell for cell in cells if cell.state == DUPLICATE]
        if duplicates:
            notes.append(
                f"{counted(len(duplicates), 'cell')} {'holds' if len(duplicates) == 1 else 'hold'} two packets of "
                "one backend (state duplicate, not compared): "
                + listed([f"step {c.output_index} layer {c.layer}" for c in duplicates])
            )
    packets = MappingProxyType(dict(counts))
    return Campaign(ident or campaign_id(key), key, backends, packets, tuple(cells), tuple(notes), capture_set)


def _in_no_campaign(names: Sequence[str], why: str) -> str:
    """The run's note on packets left out of every campaign, and why."""
    return f"{counted(len(names), 'packet')} {are(len(names))} in no campaign ({why}): {listed(sorted(names))}"


def campaigns_of(
    members: Iterable[Member], *, request: str | None = None, backends: tuple[str, str] | None = None
) -> tuple[tuple[Campaign, ...], tuple[str, ...]]:
    """Every campaign among `members` (of `request` when given), one per capture set, and the run's notes."""
    placed: list[Member] = []
    unplaced: list[str] = []
    unindexed: list[str] = []
    for member in members:
        if member.status == ERROR:
            continue  # said by the run: its summary could not be made
        if member.key is None or member.backend is None:
            unplaced.append(member.name)
        elif not (is_index(member.output_index) and is_index(member.layer)):
            unindexed.append(member.name)
        elif request is None or str(member.key[3]) == request:
            placed.append(member)
    notes = []
    if unplaced:
        notes.append(_in_no_campaign(unplaced, "their identity, selection or sample was not established"))
    if unindexed:
        notes.append(_in_no_campaign(unindexed, "outputIndex or modelLayerIndex is not an integer"))
    if request is not None and not placed:
        notes.append(f"no campaign has requestID {request}")
    # the sets are split by the packets that were read, as the app's listing (from triage summaries) splits them;
    # a refused packet joins the deepest set of its request whose directory holds it
    sets, unread = with_refused(
        capture_sets(member for member in placed if member.status != REFUSED),
        [member for member in placed if member.status == REFUSED],
    )
    if unread:
        why = "refused, and no packet of their request in their directory was read"
        notes.append(_in_no_campaign([member.name for member in unread], why))
    campaigns = tuple(
        build_campaign(found.key, found.members, backends, ident=found.id, capture_set=found.directory)
        for found in sets
    )
    return campaigns, tuple(notes)


def needs_pair(cell: Cell) -> bool:
    """A cell whose two packets are compared: both present and read, and their bytes differ somewhere."""
    return cell.state in (TOKENS_DIFFER, INPUTS_DIFFER, OUTPUTS_DIFFER)


def origin_of(campaign: Campaign) -> Origin:
    """The first outputs-differ, inputs-differ and tokens-differ cells in causal order, and the gaps before."""
    first = {
        state: next((cell for cell in campaign.cells if cell.state == state), None)
        for state in (OUTPUTS_DIFFER, INPUTS_DIFFER, TOKENS_DIFFER)
    }
    outputs, inputs = first[OUTPUTS_DIFFER], first[INPUTS_DIFFER]
    explained = None if inputs is None else outputs is not None and outputs.position < inputs.position
    bound = outputs or inputs or first[TOKENS_DIFFER]
    gaps = tuple(
        cell
        for cell in campaign.cells
        if cell.state in (MISSING, DUPLICATE, REFUSED_STATE) and (bound is None or cell.position < bound.position)
    )
    return Origin(outputs, inputs, explained, first[TOKENS_DIFFER], gaps)
