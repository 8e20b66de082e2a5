"""The comparison report's blocks as typed dicts: the keys its text summary reads (docs/pairs.md).

Shared blocks are analysis/typed.py's; a block keyed by a keyword ("global") is declared in the functional form.
"""

from __future__ import annotations

from typing import Any, TypedDict

from explorer.analysis.typed import BitFlips, Metrics, Reason, Refusal, UlpBlock


class Side(TypedDict):
    path: str
    status: str
    backend: str | None
    dispatch: str | None
    outputDType: str | None
    kernelOutputDType: str | None


class SideRefusal(Refusal):
    side: str


class TensorDifference(TypedDict):
    identical: bool
    compared: int
    mismatched: int
    perHead: list[int]


class Inputs(TypedDict):
    identical: bool
    tensors: dict[str, TensorDifference]


class SidePair(TypedDict):
    a: Any
    b: Any


Difference = TypedDict("Difference", {"global": Metrics})


class Output(TypedDict):
    dtypes: SidePair
    outputDTypesDiffer: bool
    compared: int
    mismatched: int
    perHead: list[int]
    bitFlips: BitFlips
    ulp: UlpBlock
    difference: Difference


class LadderRow(TypedDict):
    primary: Metrics
    roundedToOutputDType: Metrics
    fp64OutputError: Metrics
    equalToRoundedReference: int
    compared: int


class Tokens(TypedDict):
    seedToken: int | None
    targetToken: SidePair
    targetTokensDiffer: bool


Nearer = TypedDict("Nearer", {"global": dict[str, int]})  # a, b, tie, undefined


class SelectionDifference(SidePair):
    field: str


class PairReport(TypedDict):
    """The comparison report (explorer compare --json), as far as its text summary reads it."""

    a: Side
    b: Side
    status: str
    refusals: list[SideRefusal]
    inconclusiveReasons: list[Reason]
    inputs: Inputs | None
    output: Output | None
    ladder: dict[str, LadderRow | None] | None  # "a", "b"
    tokens: Tokens | None
    nearerPrimaryReference: Nearer | None
    nearerReason: str | None
    emulationsRequested: list[str] | None
    emulationMatrix: dict[str, Any] | None
    emulationMatrixReason: str | None
    emulationDiffering: Any
    emulationDecisive: Any
    selectionDifferences: list[SelectionDifference]
    notes: list[str]
    limitations: list[str]
