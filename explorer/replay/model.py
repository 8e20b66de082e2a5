"""The Replay result of docs/replay.md and its parts as frozen dataclasses, with its codes and limits.

Read by replay.run, built by replay.replay, serialised by replay.report. Classes holding arrays are `eq=False` (identity
equality), as in explorer.analysis.result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from explorer.analysis.display import InlineDisplay
from explorer.analysis.result import Analysis, Comparison, Emulation, Ulp
from explorer.foundations.record import Record, record
from explorer.packet.model import Problem, Reason

ANALYZED = "analyzed"

# The three arms, in report order, with the dispatch each is expected to observe.
NATIVE, FIXED, SEGMENTED = "nativeSDPA", "pagedFixed", "pagedSegmented"
ARMS = (NATIVE, FIXED, SEGMENTED)
EXPECTED_DISPATCH = {NATIVE: "contiguous_sdpa", FIXED: "paged_fixed_decode", SEGMENTED: "paged_segmented_decode"}
READBACK_TENSORS = ("storedKeys", "storedValues")
ARM_TENSORS = {NATIVE: ("output",), FIXED: ("output", *READBACK_TENSORS), SEGMENTED: ("output", *READBACK_TENSORS)}

# Labels of the matrix rows and columns besides the arms.
CAPTURE, PARTNER = "capture", "partner"

# Arm states (section 3).
ABSENT, FAILED, ARM_REFUSED, ADMITTED = "absent", "failed", "refused", "admitted"

# Run-level refusal codes (section 3).
INPUT_INVALID = "replay_input_invalid"
PACKET_MISMATCH = "replay_packet_mismatch"
GEOMETRY_MISMATCH = "replay_geometry_mismatch"
PACKET_MISSING = "replay_packet_missing"
# Arm refusal codes (section 3).
RESULT_INVALID = "replay_result_invalid"
DISPATCH_MISMATCH = "replay_dispatch_mismatch"
OFFSET_MISMATCH = "replay_offset_mismatch"
DTYPE_MISMATCH = "replay_dtype_mismatch"
PAGE_TABLE_INVALID = "replay_page_table_invalid"
PARTITION_INVALID = "replay_partition_invalid"
SEGMENTS_INVALID = "replay_segments_invalid"
TENSOR_SET_INVALID = "replay_tensor_set_invalid"
# Inconclusive reasons (sections 4 and 5).
ARM_ABSENT = "replay_arm_absent"
ARM_FAILED = "replay_arm_failed"
ARM_REFUSED_REASON = "replay_arm_refused"
NOT_REPRODUCING = "replay_not_reproducing"
READBACK_DIFFERS = "replay_readback_differs"
OUTPUT_NONFINITE = "replay_output_nonfinite"
# Reasons about the packets the run is read against (docs/replay.md: the contract leaves them to the explorer).
PACKET_INCONCLUSIVE = "replay_packet_inconclusive"
PARTNER_REFUSED = "replay_partner_refused"
PARTNER_INCONCLUSIVE = "replay_partner_inconclusive"
PARTNER_SELECTION_DIFFERS = "selection_differs"  # docs/pairs.md's code: the partner captured another selection
PARTNER_SHAPE_DIFFERS = "shape_differs"  # docs/pairs.md's code: no element-wise comparison with the partner

# Limits and rules of the contract.
FIRST_POSITIONS_LIMIT = 100
PAGE_SIZE = 16
MAX_PAGE_ID = 2**31 - 1
PARTITION_TOKENS = (64, 128, 256)
MAX_SEGMENTS = 64
SEGMENTED_TWO_FROM_TOKENS = 4096  # T above this needs at least two segments
# Two correct FP32 references differ per element by about this times max |primary reference| (docs/report.md).
REFERENCE_SPREAD = 1e-5
NOISE_FLOOR_SIDES = 2  # a second reference as far from FP64 as the explorer's, on the other side
TOOL_METRICS = ("linf", "rmse", "relativeL2")

REPLAY_LIMITATIONS = (
    "A replay shows which recomputation reproduces which capture, element by element; it does not say why "
    "the others differ.",
    "The readback shows where the supplied K/V bytes landed in the paged cache, not that the original model "
    "history was correct.",
    "The run's files are declarations of the replay tool: the explorer checks their bytes against the packet, "
    "it cannot authenticate the GPU that produced them.",
)


class AmbiguousPacketError(ValueError):
    """Two or more packets next to the run hash to its packetSHA256 (section 2): a usage error naming them."""


@record(eq=False)
class OutputDifference(Record):
    """One output against another, element bit patterns as float32 (exact for every dtype; +0 and -0 differ).

    `first_positions`: the first differing [head, channel] (row-major), at most FIRST_POSITIONS_LIMIT.
    """

    identical: bool
    compared: int
    mismatched: int
    per_head: tuple[int, ...]
    first_positions: tuple[tuple[int, int], ...]
    differs: np.ndarray  # bool [QH, D]


@record
class Readback(Record):
    """One stored tensor read back from the paged cache against the packet's: `first` is [kvHead, token, channel]."""

    tensor: str
    identical: bool
    mismatched: int
    first: tuple[int, int, int] | None


@record(eq=False)
class ArmReferences(Record):
    """The arm's output against the packet's references (docs/report.md, The report's keys: blocks C and U) on its
    eligible heads."""

    primary: Comparison
    rounded: Comparison
    fp64: Comparison
    ulp: Ulp
    equal_to_rounded_reference: int
    worst: Mapping[str, tuple[int, int] | None]  # primary / rounded / fp64 / ulp -> [query head, channel] of the max


@record
class Receipt(Record):
    """What the arm says it did (result.json) and how its launch ended (execution.json); None where unknown."""

    dispatch: Any = None
    kernel_output_dtype: Any = None
    partition_tokens: Any = None
    segment_count: Any = None
    pages: int | None = None
    exit_code: int | None = None
    seconds: float | None = None


@record
class ToolValue(Record):
    """One metric of the replay tool's analysis.json beside the explorer's (explorer/replay/agreement.py).

    `low` / `high`: what the tool can report when its FP32 reference is another correct one (None without both numbers;
    `high` None also when unbounded); `agrees`: the tool's number lies in that range, or both are None.
    """

    tool: float | None
    explorer: float | None
    agrees: bool
    low: float | None
    high: float | None


@record(eq=False)
class ArmResult(Record):
    """One arm: its state, codes and problems, and the numbers of a readable output (all None when it was not read).

    `output_values` float32 [QH, D] and `output_bits` (native patterns of `output_dtype`) are the arm's output;
    `readback` maps storedKeys / storedValues to their Readback (paged arms with readable tensors).
    """

    arm: str
    state: str | None
    problems: tuple[Problem, ...]
    own_dispatch: bool
    receipt: Receipt
    output_dtype: str | None = None
    output_values: np.ndarray | None = None
    output_bits: np.ndarray | None = None
    capture: OutputDifference | None = None
    partner: OutputDifference | None = None
    readback: Mapping[str, Readback] | None = None
    references: ArmReferences | None = None
    emulations: tuple[Emulation, ...] | None = None
    tool_analysis: Mapping[str, Mapping[str, ToolValue]] | None = None

    @property
    def codes(self) -> tuple[str, ...]:
        """The arm's own refusal codes, each once, in the order found."""
        return tuple(dict.fromkeys(problem.code for problem in self.problems))

    @property
    def readable(self) -> bool:
        return self.output_values is not None


@record
class Matrix(Record):
    """Elements that differ between every two outputs: `labels` in contract order, `mismatched[i][j]` (symmetric)."""

    labels: tuple[str, ...]
    mismatched: tuple[tuple[int, ...], ...]
    compared: int


@record(eq=False)
class Replay(InlineDisplay):
    """The replay run against its packet (and partner): the one immutable result of docs/replay.md.

    `packet` / `partner` are the packets' own analyses (None when not found / not given); `arms` maps every arm to its
    ArmResult (a refused run's without numbers); `refusals` are the run-level refusals, `reasons` the inconclusive ones.
    """

    DISPLAY_MODULE = "explorer.notebook.replay"

    path: str
    status: str
    refusals: tuple[Problem, ...]
    reasons: tuple[Reason, ...]
    input_sha256: str | None
    packet_sha256: str | None
    geometry: Mapping[str, Any] | None
    packet: Analysis | None
    partner: Analysis | None
    arms: Mapping[str, ArmResult]
    matrix: Matrix | None
    notes: tuple[str, ...]
    emulations_requested: tuple[str, ...] | None = None

    @property
    def codes(self) -> tuple[str, ...]:
        """Run-level refusal codes (with the source packet's own) of a refused run, or the reasons' codes, each once."""
        found = (problem.code for problem in self.refusals) if self.refusals else (r.code for r in self.reasons)
        return tuple(dict.fromkeys(found))

    def output(self, label: str) -> np.ndarray | None:
        """The float32 [QH, D] output named by a matrix label (capture, partner or an arm), None when unread."""
        if label not in (CAPTURE, PARTNER):
            return self.arms[label].output_values
        packet = self.packet if label == CAPTURE else self.partner
        return None if packet is None else packet.admission.tensors["output"].values[0, :, 0, :]

    def report(self) -> dict[str, Any]:
        """The JSON-ready report of docs/replay.md, The report (`explorer replay --json`)."""
        from explorer.replay.report import build_replay_report  # lazy: the result delegates to its own builder

        return build_replay_report(self)
