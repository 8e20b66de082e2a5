"""A campaign grid's folded axis: a slot per captured index, a narrow slot per run of uncaptured ones.

Sized by the captured indexes only: a packet at layer 10^7 adds one row, not 10^7, and a jump reads as a jump.
"""

from __future__ import annotations

from collections.abc import Sequence

from explorer.foundations.record import Record, record

CELL_SPAN = 1.0  # a captured slot's width in the grid's data coordinates (its centre at 0, 1, 2, ... without gaps)
GAP_SPAN = 0.5  # a gap slot's width in the same coordinates
GAP_MARK = "~"  # a gap slot's short label on an axis


@record
class Slot(Record):
    """One place on a folded axis: a captured index (first == last == value) or a gap (value None)."""

    value: int | None
    first: int
    last: int
    centre: float  # in the grid's data coordinates

    @property
    def gap(self) -> bool:
        return self.value is None

    def text(self) -> str:
        """The gap's uncaptured run ('5-9999999', or '5' alone), or the captured index."""
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"


def uncaptured(values: Sequence[int], start: int = 0) -> list[tuple[int, int]]:
    """The runs (first, last) of indexes from `start` up to the highest of `values` (ascending) not among them."""
    runs, expected = [], start
    for value in values:
        if value > expected:
            runs.append((expected, value - 1))
        expected = max(expected, value + 1)
    return runs


def folded(values: Sequence[int]) -> tuple[Slot, ...]:
    """The axis of the captured `values` (ascending): their slots from 0, a gap slot between non-adjacent ones."""
    slots: list[Slot] = []
    edge = -CELL_SPAN / 2  # the right edge of the last slot placed
    for index, value in enumerate(values):
        if index and value > values[index - 1] + 1:
            slots.append(Slot(None, values[index - 1] + 1, value - 1, edge + GAP_SPAN / 2))
            edge += GAP_SPAN
        slots.append(Slot(value, value, value, edge + CELL_SPAN / 2))
        edge += CELL_SPAN
    return tuple(slots)


def extent(slots: Sequence[Slot]) -> tuple[float, float]:
    """The data range the slots cover, edge to edge."""
    if not slots:
        return -CELL_SPAN / 2, CELL_SPAN / 2
    return -CELL_SPAN / 2, slots[-1].centre + (GAP_SPAN if slots[-1].gap else CELL_SPAN) / 2
