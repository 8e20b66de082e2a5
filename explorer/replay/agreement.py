"""When the replay tool's analysis.json agrees with the explorer's numbers; pure numpy, no I/O.

Each metric gets the range a second correct FP32 reference can give it, widened by the float64 summation error
of two evaluations of one metric; the bounds, the per-metric ranges and their derivation are in docs/replay.md,
"When the tool's numbers agree". A tool number inside its range agrees.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from explorer.analysis.blocks import finite
from explorer.analysis.result import Comparison, Metrics, Numerics
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import promote, round_bits
from explorer.replay.model import NOISE_FLOOR_SIDES, REFERENCE_SPREAD, TOOL_METRICS, ArmReferences, ToolValue

METRIC_ATTRIBUTES = {"linf": "linf", "rmse": "rmse", "relativeL2": "relative_l2"}  # report key -> Metrics field
FLOAT64_UNIT_ROUNDOFF = 2.0**-53  # u: a float64 operation's largest relative rounding error
RANGE_OPERATIONS = 4  # roundings counted beyond the n summands (the range: |R| root, product, sum, division)
EVALUATIONS = 3  # the tool's metric, the explorer's and the range computed from the explorer's


@record(eq=False)
class ElementBounds(Record):
    """How far each compared element of one reference can move under a second correct reference.

    `bounds` and `reference` are float64 over the compared elements (eligible heads, finite reference), flat.
    """

    bounds: np.ndarray
    reference: np.ndarray

    def metric_range(self, metric: str, value: float) -> tuple[float, float | None]:
        """(low, high) of what the tool can report for `metric` when the explorer reports `value`; high None: unbounded.

        A bound that overflowed (a rounding past the dtype's largest value) leaves the range open above and at 0 below.
        """
        low, high = self._range(metric, value)
        if not math.isfinite(low) or (high is not None and not math.isfinite(high)):
            return 0.0, None
        return low, high

    def _range(self, metric: str, value: float) -> tuple[float, float | None]:
        if metric == "linf":
            slack = float(self.bounds.max()) if self.bounds.size else 0.0
            return max(0.0, value - slack), value + slack
        if metric == "rmse":
            slack = math.sqrt(float(np.mean(self.bounds**2))) if self.bounds.size else 0.0
            return max(0.0, value - slack), value + slack
        norm, slack = float(np.linalg.norm(self.reference)), float(np.linalg.norm(self.bounds))
        error = value * norm
        return max(0.0, error - slack) / (norm + slack), (error + slack) / (norm - slack) if norm > slack else None

    def tool_range(self, metric: str, value: float) -> tuple[float, float | None]:
        """`metric_range` widened by the summation error of three float64 evaluations (docs/replay.md)."""
        low, high = self.metric_range(metric, value)
        widening = summation_slack(self.bounds.size) * max(value, 0.0 if high is None else high)
        return max(0.0, low - widening), None if high is None else high + widening


def summation_slack(count: int) -> float:
    """EVALUATIONS x gamma(count + RANGE_OPERATIONS): how far float64 evaluations over `count` terms move (gamma
    bounds a sum of non-negative terms: Higham, "Accuracy and Stability of Numerical Algorithms" 4.2)."""
    operations = (count + RANGE_OPERATIONS) * FLOAT64_UNIT_ROUNDOFF
    return EVALUATIONS * operations / (1.0 - operations)


def reference_spread(numerics: Numerics) -> float:
    """How far two correct FP32 references of the packet can differ in one element (docs/replay.md)."""
    eligible = numerics.eligible
    reference = np.abs(numerics.primary.reference[eligible].astype(np.float64))
    floor = numerics.fp64.reference_error.abs_error[eligible]
    scale = float(reference[np.isfinite(reference)].max(initial=0.0))
    noise = float(floor[np.isfinite(floor)].max(initial=0.0))
    return max(REFERENCE_SPREAD * scale, NOISE_FLOOR_SIDES * noise)


def _compared(comparison: Comparison, eligible: np.ndarray) -> np.ndarray:
    """The block's reference over its compared elements (eligible heads, finite values), float64, flat."""
    reference = comparison.reference[eligible].astype(np.float64)
    return reference[np.isfinite(reference)]


def rounding_moves(primary: np.ndarray, near: np.ndarray, dtype: str, spread: float) -> np.ndarray:
    """Per element, the largest |round(x) - near| for x within `spread` of the FP32 reference `primary` (float64).

    Rounding is monotone, so the ends of the interval give the largest move; each end is
    taken as the float32 at or beyond it, so the float32 step before rounding never hides a flip.
    """
    moves = []
    for direction in (-1.0, 1.0):
        end = primary + direction * spread
        end32 = end.astype(np.float32)
        short = direction * (end32.astype(np.float64) - end) < 0
        end32 = np.where(short, np.nextafter(end32, np.float32(direction * np.inf)), end32)
        moves.append(np.abs(promote(round_bits(end32, dtype), dtype).astype(np.float64) - near))
    return np.maximum(*moves)


def element_bounds(references: ArmReferences, numerics: Numerics, dtype: str) -> Mapping[str, ElementBounds]:
    """The bounds of the FP32 (`primary`) and rounded (`rounded`) references for an arm of output dtype `dtype`."""
    eligible, spread = numerics.eligible, reference_spread(numerics)
    primary = _compared(references.primary, eligible)
    exact, near = references.primary.reference[eligible], references.rounded.reference[eligible]
    both_finite = np.isfinite(exact) & np.isfinite(near)
    exact, near = exact[both_finite].astype(np.float64), near[both_finite].astype(np.float64)
    return MappingProxyType(
        {
            "primary": ElementBounds(np.full(primary.shape, spread), primary),
            "rounded": ElementBounds(rounding_moves(exact, near, dtype, spread), near),
        }
    )


def _value(metrics: Metrics | None, metric: str) -> float | None:
    return None if metrics is None else finite(getattr(metrics, METRIC_ATTRIBUTES[metric]))


def tool_check(
    tool: Mapping[str, Mapping[str, float | None]],
    references: ArmReferences | None,
    bounds: Mapping[str, ElementBounds] | None,
) -> Mapping[str, Mapping[str, ToolValue]]:
    """The tool's primary and rounded global metrics beside the explorer's, each with its range and `agrees`."""
    mine = {
        "primary": references.primary.global_metrics if references else None,
        "rounded": references.rounded.global_metrics if references else None,
    }
    found = {}
    for block, metrics in tool.items():
        values = {}
        for metric in TOOL_METRICS:
            theirs, ours = metrics[metric], _value(mine[block], metric)
            if theirs is None or ours is None or bounds is None:
                values[metric] = ToolValue(theirs, ours, theirs is None and ours is None, None, None)
                continue
            low, high = bounds[block].tool_range(metric, ours)
            values[metric] = ToolValue(theirs, ours, low <= theirs and (high is None or theirs <= high), low, high)
        found[block] = MappingProxyType(values)
    return MappingProxyType(found)


def tool_notes(arm: str, check: Mapping[str, Mapping[str, ToolValue]]) -> list[str]:
    """One note per metric where the tool's analysis.json lies outside what two correct FP32 references can give."""
    return [
        f"analysis.json {arm} {block} {metric}: tool {_shown(value.tool)}, explorer {_shown(value.explorer)} "
        f"({_range(value)})"
        for block, values in check.items()
        for metric, value in values.items()
        if not value.agrees
    ]


def _range(value: ToolValue) -> str:
    if value.low is None:
        return "one of the two is null"
    high = "no upper end" if value.high is None else _shown(value.high)
    return f"outside [{_shown(value.low)}, {high}], what a second correct FP32 reference can give"


def _shown(value: Any) -> str:
    return "null" if value is None else f"{value:.6g}"
