"""The numbers of a replay (docs/replay.md, What is computed).

Each arm's output against the captures, the references and the emulations, the readback, the matrix and the
tool-analysis cross-check; pure, no I/O.

Outputs are compared by the bit patterns of their exact float32 promotions: for one
dtype that is the native bit comparison (promotion is exact and one-to-one), +0 and
-0 differ and a NaN equals only the same NaN pattern (docs/replay.md, What is computed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from explorer.analysis.blocks import finite
from explorer.analysis.metrics import compare, readonly, rounded
from explorer.analysis.result import Analysis, Emulation, Numerics
from explorer.replay.model import (
    FIRST_POSITIONS_LIMIT,
    LINF_RMSE_TOLERANCE,
    RELATIVE_L2_TOLERANCE,
    TOOL_METRICS,
    ArmReferences,
    Matrix,
    OutputDifference,
    Readback,
    ToolValue,
)

METRIC_ATTRIBUTES = {"linf": "linf", "rmse": "rmse", "relativeL2": "relative_l2"}  # report key -> Metrics field
PRIMARY_LABEL = "replay arm {arm} output vs primary reference (original-Q FP32 softmax attention)"
ROUNDED_LABEL = "replay arm {arm} output vs primary reference rounded (RNE) to {dtype}; ULP in {dtype} units"
FP64_LABEL = "replay arm {arm} output vs the same formula evaluated in FP64 (diagnostic, not the reference)"


def float32_patterns(values: np.ndarray) -> np.ndarray:
    """The bit patterns of float32 values (a view)."""
    return np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)


def output_difference(values: np.ndarray, other: np.ndarray) -> OutputDifference:
    """`values` against `other`, both float32 [QH, D], element by element."""
    differs = float32_patterns(values) != float32_patterns(other)
    where = np.flatnonzero(differs)
    first = np.unravel_index(where[:FIRST_POSITIONS_LIMIT], differs.shape)
    return OutputDifference(
        identical=where.size == 0, compared=int(differs.size), mismatched=int(where.size),
        per_head=tuple(int(n) for n in differs.sum(axis=1)),
        first_positions=tuple(zip(*(axis.tolist() for axis in first), strict=True)), differs=readonly(differs))


def readback(name: str, replayed: np.ndarray, captured: np.ndarray, same_sha256: bool) -> Readback:
    """A stored tensor read back [KVH, T, D] against the packet's, by native bit patterns.

    `same_sha256`: both files (same dtype and shape) hash to one SHA-256, so they hold the same bytes and
    no element is compared (the content identity every cache of the explorer already rests on).
    """
    if same_sha256:
        return Readback(name, True, 0, None)
    where = np.flatnonzero(replayed != captured)
    first = tuple(int(i) for i in np.unravel_index(where[0], replayed.shape)) if where.size else None
    return Readback(name, where.size == 0, int(where.size), first)


def arm_references(arm: str, values: np.ndarray, bits: np.ndarray, dtype: str, numerics: Numerics) -> ArmReferences:
    """Blocks C and U of the arm's output against the packet's primary, rounded and FP64 references."""
    eligible, reference = numerics.eligible, numerics.primary.reference
    near = rounded(ROUNDED_LABEL.format(arm=arm, dtype=dtype), dtype, values, bits, reference, eligible)
    equal = int(np.count_nonzero((bits == near.rounded_bits)[eligible]))
    return ArmReferences(
        primary=compare(PRIMARY_LABEL.format(arm=arm), values, reference, eligible),
        rounded=near.comparison,
        fp64=compare(FP64_LABEL.format(arm=arm), values, numerics.fp64.reference, eligible),
        ulp=near.ulp,
        equal_to_rounded_reference=equal,
    )


def arm_emulations(packet: Analysis, values: np.ndarray, bits: np.ndarray, dtype: str
                   ) -> tuple[Emulation, ...] | None:
    """The packet's emulations scored against the arm's output (None without them or in another output dtype)."""
    if packet.emulations is None or packet.admission.tensors["output"].dtype != dtype:
        return None
    # the emulation machinery (and the pair's emulated outputs) load only for a replay with emulations
    from explorer.analysis.emulation import score
    from explorer.pair.emulation import emulated_outputs

    numerics = packet.numerics
    return tuple(score(emulated, values, bits, numerics.primary.reference, numerics.eligible)
                 for emulated in emulated_outputs(packet))


def _agrees(metric: str, tool: float | None, mine: float | None, reference_scale: float) -> bool:
    if tool is None or mine is None:
        return tool is None and mine is None
    if metric == "relativeL2":
        return abs(tool - mine) <= RELATIVE_L2_TOLERANCE * max(abs(tool), abs(mine))
    return abs(tool - mine) <= LINF_RMSE_TOLERANCE * reference_scale


def reference_scale(numerics: Numerics) -> float:
    """max |primary reference| over the eligible heads' finite values (0 when there are none)."""
    reference = numerics.primary.reference[numerics.eligible]
    finite = np.abs(reference[np.isfinite(reference)])
    return float(finite.max()) if finite.size else 0.0


def tool_check(tool: Mapping[str, Mapping[str, float | None]], references: ArmReferences | None,
               scale: float) -> Mapping[str, Mapping[str, ToolValue]]:
    """The tool's primary and rounded global metrics beside the explorer's, with `agrees` per metric."""
    mine = {"primary": references.primary.global_metrics if references else None,
            "rounded": references.rounded.global_metrics if references else None}
    found = {}
    for block, metrics in tool.items():
        explorer_block = mine[block]
        values = {}
        for metric in TOOL_METRICS:
            ours = None if explorer_block is None else finite(getattr(explorer_block, METRIC_ATTRIBUTES[metric]))
            values[metric] = ToolValue(metrics[metric], ours, _agrees(metric, metrics[metric], ours, scale))
        found[block] = MappingProxyType(values)
    return MappingProxyType(found)


def matrix(outputs: Sequence[tuple[str, np.ndarray]]) -> Matrix:
    """Elements differing between every two of the labelled float32 [QH, D] outputs (symmetric, diagonal 0)."""
    patterns = [float32_patterns(values) for _, values in outputs]
    counts = [[0 if i == j else int(np.count_nonzero(a != b)) for j, b in enumerate(patterns)]
              for i, a in enumerate(patterns)]
    return Matrix(tuple(label for label, _ in outputs), tuple(tuple(row) for row in counts),
                  int(patterns[0].size) if patterns else 0)


def tool_notes(arm: str, check: Mapping[str, Mapping[str, ToolValue]]) -> list[str]:
    """One note per metric where the tool's analysis.json and the explorer differ beyond the tolerance."""
    return [f"analysis.json {arm} {block} {metric}: tool {_shown(value.tool)}, explorer {_shown(value.explorer)} "
            f"(beyond the contract's tolerance)"
            for block, values in check.items() for metric, value in values.items() if not value.agrees]


def _shown(value: Any) -> str:
    return "null" if value is None else f"{value:.6g}"
