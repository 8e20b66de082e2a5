"""The replay report's blocks as typed dicts: the keys its text summary reads (docs/replay.md).

Shared blocks are analysis/typed.py's; a block keyed by a keyword ("global") is declared in the functional form.
"""

from __future__ import annotations

from typing import Any, TypedDict

from explorer.analysis.typed import Comparison, Location, Reason, UlpBlock


class Matrix(TypedDict):
    outputs: list[str]
    mismatched: list[list[int]]
    compared: int
    sentence: str


class Receipt(TypedDict):
    dispatch: str | None
    kernelOutputDType: str | None
    partitionTokens: int | None
    segmentCount: int | None
    pages: int | None
    exitCode: int | None
    seconds: float | None


class Problem(TypedDict):
    code: str
    pointer: str | None
    message: str


class CaptureDifference(TypedDict):
    compared: int
    mismatched: int


class ReadbackEntry(TypedDict):
    identical: bool
    mismatched: int
    firstDifference: list[int] | None


class References(TypedDict):
    """An arm's output against the primary, rounded and FP64 references (blocks C and U) and `worstAt`: for each of them
    the location block of its largest value (docs/replay.md)."""

    primary: Comparison
    rounded: Comparison
    fp64: Comparison
    ulp: UlpBlock
    equalToRoundedReference: int
    worstAt: dict[str, Location | None]


class ToolValue(TypedDict):
    tool: float | None
    explorer: float | None
    agrees: bool


class Emulation(TypedDict):
    id: str
    compared: int
    bitEqual: dict[str, Any]


class Arm(TypedDict):
    state: str
    codes: list[str]
    ownDispatch: bool
    receipt: Receipt
    problems: list[Problem]
    capture: CaptureDifference | None
    partner: CaptureDifference | None
    readback: dict[str, ReadbackEntry] | None
    references: References | None
    toolAnalysis: dict[str, dict[str, ToolValue]] | None
    emulations: list[Emulation] | None


class PacketLine(TypedDict):
    path: str
    status: str


class RunPath(TypedDict):
    path: str


class ReplayReport(TypedDict):
    """The replay report (explorer replay --json), as far as its text summary reads it."""

    run: RunPath
    packet: PacketLine | None
    partner: PacketLine | None
    status: str
    refusals: list[Problem]
    matrix: Matrix | None
    reasons: list[Reason]
    arms: dict[str, Arm]
    notes: list[str]
    limitations: list[str]
