"""Metric blocks (FP64 linf / rmse / relativeL2), comparisons, rounded references and ULP distances.

An ineligible head's metrics are None with "nonfinite_inputs". Nonfinite counts cover the values that exist:
a computed array's rows of an ineligible head were never computed and count as zero; data arrays count in full.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from explorer.analysis.reference import NONFINITE_INPUTS
from explorer.analysis.result import Comparison, Metrics, Rounded, Ulp
from explorer.packet.dtypes import promote, round_bits, ulp_ordinal

NONFINITE_VALUES = "nonfinite_values"
ZERO_REFERENCE_NORM = "zero_reference_norm"
NONFINITE_COUNT_KEYS = ("nan", "positiveInfinity", "negativeInfinity")
P99_PERCENT = 99
UNDEFINED_DISTANCE = -1
# Lower edges of the ULP histogram buckets after [0, 0]: [1, 1], [2, 3], [4, 7], ...
_BUCKET_EDGES = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))


def readonly(array: np.ndarray) -> np.ndarray:
    """`array` itself, marked read-only."""
    array.flags.writeable = False
    return array


def _nonfinite_counts(values: np.ndarray) -> np.ndarray:
    """int64 [rows, 3]: NaN, +inf, -inf counts per row of a 2-D array."""
    return np.stack(
        [np.isnan(values).sum(axis=1), np.isposinf(values).sum(axis=1), np.isneginf(values).sum(axis=1)], axis=1
    ).astype(np.int64)


def _count_mapping(counts: list[int]) -> Mapping[str, int]:
    return MappingProxyType(dict(zip(NONFINITE_COUNT_KEYS, counts, strict=True)))


class _RowStatistics:
    """Per-row sufficient statistics of |actual - reference| from which any set of rows is aggregated."""

    def __init__(
        self,
        actual: np.ndarray,
        reference: np.ndarray,
        eligible: np.ndarray,
        actual_computed: bool,
        reference_computed: bool,
    ) -> None:
        a = actual.astype(np.float64)
        r = reference.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = a - r
            self.abs_diff = np.abs(diff)
            self.linf = self.abs_diff.max(axis=1)
            self.sum_squares = np.add.reduce(diff * diff, axis=1)  # pairwise, the same order everywhere
            self.reference_squares = np.add.reduce(r * r, axis=1)
        self.columns = a.shape[1]
        self.pair_finite = np.isfinite(a) & np.isfinite(r)
        self.nonfinite_actual = _nonfinite_counts(a)
        self.nonfinite_reference = _nonfinite_counts(r)
        if actual_computed:
            self.nonfinite_actual[~eligible] = 0
        if reference_computed:
            self.nonfinite_reference[~eligible] = 0

    def block(self, rows: np.ndarray, inputs_finite: bool) -> Metrics:
        """The metric block over `rows` (an index array); None metrics with a reason where undefined."""
        return _metrics(
            self.nonfinite_actual[rows].sum(axis=0).tolist(),
            self.nonfinite_reference[rows].sum(axis=0).tolist(),
            inputs_finite,
            float(self.linf[rows].max()),
            float(self.sum_squares[rows].sum()),
            float(self.reference_squares[rows].sum()),
            rows.size * self.columns,
        )

    def row_blocks(self, eligible: np.ndarray) -> tuple[Metrics, ...]:
        """`block` of every single row, read from the per-row statistics at once (a row's sums are its own)."""
        rows = zip(
            self.nonfinite_actual.tolist(),
            self.nonfinite_reference.tolist(),
            eligible.tolist(),
            self.linf.tolist(),
            self.sum_squares.tolist(),
            self.reference_squares.tolist(),
            strict=True,
        )
        return tuple(_metrics(*row, self.columns) for row in rows)


def _metrics(
    actual_counts: list[int],
    reference_counts: list[int],
    inputs_finite: bool,
    linf: float,
    sum_squares: float,
    reference_squares: float,
    count: int,
) -> Metrics:
    """One metric block from the statistics of its rows (`count` elements)."""
    counts = (_count_mapping(actual_counts), _count_mapping(reference_counts))
    if not inputs_finite:
        return Metrics(None, None, None, NONFINITE_INPUTS, *counts)
    if any(actual_counts) or any(reference_counts):
        return Metrics(None, None, None, NONFINITE_VALUES, *counts)
    rmse = math.sqrt(sum_squares / count)
    if reference_squares == 0.0:
        return Metrics(linf, rmse, None, ZERO_REFERENCE_NORM, *counts)
    return Metrics(linf, rmse, math.sqrt(sum_squares) / math.sqrt(reference_squares), None, *counts)


def compare(
    label: str,
    actual: np.ndarray,
    reference: np.ndarray,
    eligible: np.ndarray,
    *,
    actual_computed: bool = False,
    reference_computed: bool = True,
) -> Comparison:
    """Per-head, global and eligible-only metrics of `actual` [QH, D] against `reference` [QH, D] (both stored
    read-only); `*_computed`: computed from the inputs (no values in ineligible rows), not packet data."""
    stats = _RowStatistics(actual, reference, eligible, actual_computed, reference_computed)
    heads = np.arange(eligible.size)
    eligible_heads = np.flatnonzero(eligible)
    per_head = stats.row_blocks(eligible)
    global_metrics = stats.block(heads, bool(eligible.all()))
    eligible_global = stats.block(eligible_heads, True) if 0 < eligible_heads.size < eligible.size else None
    abs_error = np.where(stats.pair_finite & eligible[:, None], stats.abs_diff, np.nan)
    arrays = (readonly(actual), readonly(reference), readonly(abs_error))
    return Comparison(label, global_metrics, per_head, eligible_global, *arrays)


def largest_at(values: np.ndarray) -> tuple[int, int] | None:
    """(query head, channel) of the largest defined value of a [QH, D] array, the first in row-major order on a tie;
    None when nothing is defined. Undefined: NaN (an |error| with no reference) or negative (a ULP distance of -1)."""
    defined = np.asarray(values, dtype=np.float64) >= 0  # False for NaN
    if not defined.any():
        return None
    head, channel = np.unravel_index(np.argmax(np.where(defined, values, -1)), values.shape)
    return int(head), int(channel)


def _bucket_bounds(index: int) -> tuple[int, int]:
    return (0, 0) if index == 0 else (1 << (index - 1), (1 << index) - 1)


def ulp_distance(actual_bits: np.ndarray, reference_bits: np.ndarray, dtype: str, eligible: np.ndarray) -> Ulp:
    """ULP distances in `dtype` units between two [QH, D] bit arrays over eligible finite pairs; p99 nearest-rank."""
    finite = np.isfinite(promote(actual_bits, dtype)) & np.isfinite(promote(reference_bits, dtype))
    rows = np.broadcast_to(eligible[:, None], finite.shape)
    defined = finite & rows
    distance = np.where(
        defined, np.abs(ulp_ordinal(actual_bits, dtype) - ulp_ordinal(reference_bits, dtype)), UNDEFINED_DISTANCE
    )
    nonfinite_pairs = int(np.count_nonzero(rows & ~finite))
    values = np.sort(distance[defined])
    if values.size == 0:
        return Ulp(None, None, nonfinite_pairs, (), readonly(distance))
    rank = -(-P99_PERCENT * values.size // 100)
    counts = np.bincount(np.searchsorted(_BUCKET_EDGES, values, side="right"))
    histogram = tuple((*_bucket_bounds(i), int(c)) for i, c in enumerate(counts))
    return Ulp(int(values[-1]), int(values[rank - 1]), nonfinite_pairs, histogram, readonly(distance))


def rounded(
    label: str,
    dtype: str,
    output_values: np.ndarray,
    output_bits: np.ndarray,
    reference: np.ndarray,
    eligible: np.ndarray,
) -> Rounded:
    """The float32 `reference` rounded (RNE) to `dtype`, compared with the output's values and `dtype` bits."""
    bits = round_bits(reference, dtype)
    comparison = compare(label, output_values, promote(bits, dtype), eligible)
    ulp = ulp_distance(output_bits, bits, dtype, eligible)
    return Rounded(label, dtype, dtype == "float32", comparison, ulp, readonly(bits))
