"""The Pair result of docs/pairs.md and its parts as frozen dataclasses, with its codes and limits.

Built by pair.compare, given its matrix by pair.emulation, serialised by pair.report. Classes holding arrays are
`eq=False` (identity equality), as in explorer.analysis.result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from explorer.analysis.display import InlineDisplay
from explorer.analysis.result import Analysis, Baseline, Comparison, Emulation, Metrics, Ulp
from explorer.foundations.record import Record, record
from explorer.packet.model import Problem, Reason

SIDES = ("a", "b")
INPUT_NAMES = ("queries", "storedKeys", "storedValues", "incomingKeys", "incomingValues")
OUTPUT_POSITIONS_LIMIT = 4096

# Inconclusive reason codes (docs/pairs.md, Status and codes), in the order they are listed.
SIDE_INCONCLUSIVE = "side_inconclusive"
SELECTION_DIFFERS = "selection_differs"
SHAPE_DIFFERS = "shape_differs"  # also why `nearer` and the emulation matrix are None: no element-wise comparison
# Why `nearer` is None besides SHAPE_DIFFERS (docs/pairs.md, Status and codes); NO_REFERENCE is also why the
# emulation matrix is None (pair/emulation.py).
INPUTS_DIFFER, SCALE_DIFFERS = "inputs_differ", "scale_differs"
NO_REFERENCE = "no_reference"

# Per-element codes of `Nearer.map`.
NEARER_A, NEARER_B, TIE, UNDEFINED = 0, 1, 2, 3
NEARER_KEYS = ("a", "b", "tie", "undefined")

DIFFERENCE_LABEL = "output a vs output b (b in the role of the reference)"
SAME_BACKEND_NOTE = "same backend: both packets declare backend {backend}"
INPUTS_DIFFER_NOTE = (
    "the inputs differ: the output differences mix input and arithmetic differences, and each "
    "side's references are its own"
)
OUTPUT_DTYPES_NOTE = (
    "the output dtypes differ (output.dtypes): the outputs are compared by value only, not bit for bit nor in ULP"
)
PAIR_LIMITATIONS = (
    "A pair shows that two kernels' outputs differ and where, not why.",
    "Identity fields remain declarations: two packets declaring the same selection are not proven to be "
    "captures of the same call.",
)


class SamePacketError(ValueError):
    """Both sides name the same packet.json (same path, link or (st_dev, st_ino)): a usage error, not a pair."""


@record
class SideRefusal(Record):
    """One refusal of one side."""

    side: str
    problem: Problem


@record
class SelectionDifference(Record):
    field: str
    a: Any
    b: Any


@record
class BitDifference(Record):
    """Bitwise comparison of one tensor's native patterns on both sides (same dtype and shape), per head axis;
    `first_positions`: the first mismatched [head, token, channel] (row-major), at most `limit`."""

    tensor: str
    dtype: str
    identical: bool
    compared: int
    mismatched: int
    per_head: tuple[int, ...]
    first_positions: tuple[tuple[int, ...], ...]
    bit_flips: Mapping[str, int]


@record
class Inputs(Record):
    """Byte facts of the five input tensors; `identical` when all five are."""

    identical: bool
    tensors: Mapping[str, BitDifference]


@record(eq=False)
class OutputDifference(Record):
    """Output a against output b, [QH, D]; bitwise fields are None when the output dtypes differ. `ulp.distance` is
    -1 where a value is nonfinite; `difference.abs_error` is |a - b|."""

    dtype_a: str
    dtype_b: str
    dtypes_differ: bool
    compared: int
    bits: BitDifference | None
    differs: np.ndarray | None
    ulp: Ulp | None
    difference: Comparison


@record
class LadderRow(Record):
    """One side's row of the incident table, read from that side's own analysis."""

    primary: Metrics
    rounded_to_output: Metrics
    fp64_output_error: Metrics
    equal_to_rounded_reference: int
    compared: int


@record
class NearerCounts(Record):
    a: int
    b: int
    tie: int
    undefined: int


@record(eq=False)
class Nearer(Record):
    """Which output is nearer the shared primary reference, per element (`map`, int8 codes NEARER_A ...)."""

    global_counts: NearerCounts
    per_head: tuple[NearerCounts, ...]
    map: np.ndarray


@record
class Tokens(Record):
    """`seed_token` is None when the sides disagree on it (then listed in the selection differences)."""

    seed_token: int | None
    target_a: int | None
    target_b: int | None

    @property
    def differ(self) -> bool:
        return self.target_a != self.target_b


@record(eq=False)
class Pair(InlineDisplay):
    """The comparison of two analyses (docs/pairs.md). `a` and `b` are the sides' own immutable results.

    `selection`: the fields both sides share, ((name, value), ...) in report order; `ladder`: "a" / "b" to a LadderRow,
    or None for a side without a reference.
    """

    DISPLAY_MODULE = "explorer.notebook.pair"

    a: Analysis
    b: Analysis
    status: str
    refusals: tuple[SideRefusal, ...]
    # Past this point the defaults are a refused pair's: nothing compared.
    reasons: tuple[Reason, ...] = ()
    selection: tuple[tuple[str, Any], ...] | None = None
    selection_differences: tuple[SelectionDifference, ...] = ()
    inputs: Inputs | None = None
    output: OutputDifference | None = None
    ladder: Mapping[str, LadderRow | None] | None = None
    nearer: Nearer | None = None
    nearer_reason: str | None = None
    tokens: Tokens | None = None
    notes: tuple[str, ...] = ()
    emulation: PairEmulations | None = None  # None: no emulation requested (pair/emulation.py)

    def side(self, name: str) -> Analysis:
        """The analysis of side "a" or "b"."""
        return {"a": self.a, "b": self.b}[name]

    def report(self) -> dict[str, Any]:
        """The JSON-ready report of docs/pairs.md, The comparison report's keys (`explorer compare --json`)."""
        from explorer.pair.report import build_comparison_report  # lazy: the result delegates to its own builder

        return build_comparison_report(self)


@record(eq=False)
class MatrixRow(Record):
    """One emulation scored against each side (its own Emulation entry); `differing_a` / `differing_b`: of the elements
    where the outputs differ, how many of that side's equal it (bitEqualDiffering; None without numbers)."""

    a: Emulation
    b: Emulation
    differing_a: int | None
    differing_b: int | None


@record
class BaselineRow(Record):
    """The rounded reference counted like an emulation against each side: the matrix's last row."""

    a: Baseline
    b: Baseline
    differing_a: int
    differing_b: int


@record(eq=False)
class Differing(Record):
    """The elements (eligible on both sides) where the outputs' bit patterns differ: count, per head, mask [QH, D]."""

    count: int
    per_head: tuple[int | None, ...]
    mask: np.ndarray


@record(eq=False)
class PairEmulations(Record):
    """The matrix of a pair with emulations requested; `rows` (request order) None with `reason` when none exists."""

    emulated_on: str | None
    rows: tuple[MatrixRow, ...] | None
    reason: str | None
    differing: Differing | None = None
    baseline: BaselineRow | None = None
