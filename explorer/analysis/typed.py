"""The packet report's blocks as typed dicts: the keys its text summary reads (docs/report.md).

Types only: analysis/blocks.py and analysis/report.py build these dicts, analysis/text.py reads them. Only the
keys a renderer reads are declared; a block whose key is a Python keyword ("global") is in the functional form.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Location(TypedDict):
    """Where a worst value sits in the output [QH, D] (location_block): the one shape of a location."""

    queryHead: int
    channel: int


class Metrics(TypedDict):
    """Block M, with the element of its linf (`linfAt`) where the report adds it."""

    linf: float | None
    rmse: float | None
    relativeL2: float | None
    undefinedReason: str | None
    linfAt: Location | None


class HeadMetrics(Metrics):
    queryHead: int
    kvHead: int


class UlpBlock(TypedDict):
    """Block U: the largest ULP distance and where it is, p99, nonfinite pairs and the histogram."""

    max: int | None
    maxAt: Location | None
    p99: float | None
    nonfinitePairs: int
    histogram: list[list[int]]


Comparison = TypedDict("Comparison", {"global": Metrics, "perHead": list[HeadMetrics]})
PrimaryReference = TypedDict(
    "PrimaryReference",
    {"label": str, "global": Metrics, "perHead": list[HeadMetrics], "eligibleGlobal": Metrics | None},
)
RoundedReference = TypedDict(
    "RoundedReference",
    {"label": str, "dtype": str, "identity": bool, "global": Metrics, "perHead": list[HeadMetrics], "ulp": UlpBlock},
)


class Reference(TypedDict):
    primary: PrimaryReference
    roundedToOutputDType: RoundedReference
    roundedToKernelOutputDType: RoundedReference | None


class ScoreBlock(TypedDict):
    value: float | None
    perHead: list[float | None]
    worstHead: int | None
    headsNotCompared: int


class Refusal(TypedDict):
    code: str
    field: str | None
    message: str


class Reason(TypedDict):
    code: str
    message: str


class BitFlips(TypedDict):
    sign: int
    exponent: int
    mantissa: int


class LastRowPart(TypedDict):
    compared: int
    mismatched: int
    bitFlips: BitFlips


class LastRow(TypedDict):
    keys: LastRowPart
    values: LastRowPart


class Nonfinite(TypedDict):
    nan: int
    signalingNan: int
    positiveInfinity: int
    negativeInfinity: int


class TensorFacts(TypedDict):
    dtype: str
    shape: list[int]
    nonfinite: Nonfinite


class Geometry(TypedDict):
    queryHeads: int
    kvHeads: int
    groupSize: int
    headDim: int
    tokens: int


class Selection(TypedDict):
    requestID: Any
    outputIndex: int
    phase: str
    modelLayerIndex: int
    storageLayerIndex: int
    offsetBefore: int
    offsetAfter: int
    scale: float
    scaleBits: int
    dispatch: str
    kernelOutputDType: str


class Sample(TypedDict):
    sampleOutcome: str
    forwardSucceeded: bool
    seedToken: int
    targetToken: int
    selectedForwards: int


class Identity(TypedDict):
    modelID: str
    artifactSHA256: str
    inputSHA256: str
    backend: str


class PacketPath(TypedDict):
    path: str


class PacketReport(TypedDict):
    """The packet report (explorer analyze --json), as far as its text summary reads it."""

    status: str
    score: ScoreBlock | None
    refusals: list[Refusal]
    inconclusiveReasons: list[Reason]
    reference: Reference | None
    emulationsRequested: list[str] | None
    emulations: list[dict[str, Any]] | None
    emulationDecisive: dict[str, Any] | None
    emulationBaseline: dict[str, Any] | None
    packet: PacketPath
    identity: Identity | None
    selection: Selection | None
    geometry: Geometry | None
    sample: Sample | None
    tensors: dict[str, TensorFacts] | None
    lastRow: LastRow | None
    limitations: list[str]
