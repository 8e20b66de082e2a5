"""The one immutable analysis result every view, notebook and export reads; no I/O, no UI.

Arrays held here are read-only; per-head tuples are indexed by query head (KV head for `perKvHead`). Nothing
here is a verdict: only numbers, labels and reasons. Records holding arrays are `@record(eq=False)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from explorer.analysis.arrays import native_arrays
from explorer.analysis.display import InlineDisplay
from explorer.analysis.score import Score
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import (  # noqa: F401  (codes of NonfiniteMap.kinds, re-exported for the views)
    FINITE,
    NEGATIVE_INFINITY,
    POSITIVE_INFINITY,
    QUIET_NAN,
    SIGNALING_NAN,
)
from explorer.packet.model import Admission, Reason

# ---------------------------------------------------------------- tensor facts


@record(eq=False)
class NonfiniteMap(Record):
    """Nonfinite counts of one tensor (`nan`: quiet and signaling), its first locations, the kind codes `kinds`
    uint8 [head, token, channel] and `per_head_token` uint16 [head, token, 4] (qNaN, sNaN, +inf, -inf)."""

    tensor: str
    dtype: str
    nan: int
    signaling_nan: int
    positive_infinity: int
    negative_infinity: int
    first_locations: tuple[tuple[int, int, int], ...]
    kinds: np.ndarray
    per_head_token: np.ndarray

    @property
    def total(self) -> int:
        return self.nan + self.positive_infinity + self.negative_infinity


@record(eq=False)
class LastRow(Record):
    """Bitwise comparison of stored[0, :, T-1, :] against incoming[0, :, 0, :] (keys or values).

    `*_bits` and `xor` are native unsigned patterns [KVH, D], `*_values` their FP32 promotions; `field_mask`
    uint8 [KVH, D]: 1 sign, 2 exponent, 4 mantissa differs; `bit_position_counts` int64 [bits], LSB first.
    """

    dtype: str
    compared: int
    mismatched: int
    per_kv_head: tuple[int, ...]
    positions: tuple[tuple[int, int], ...]
    bit_flips: Mapping[str, int]
    stored_bits: np.ndarray
    incoming_bits: np.ndarray
    xor: np.ndarray
    stored_values: np.ndarray
    incoming_values: np.ndarray
    field_mask: np.ndarray
    bit_position_counts: np.ndarray


@record(eq=False)
class TensorFacts(Record):
    """Facts reported for every packet whose six files verified and geometry holds."""

    nonfinite: Mapping[str, NonfiniteMap]
    last_row_keys: LastRow
    last_row_values: LastRow


# ---------------------------------------------------------------- numerics


@record
class Metrics(Record):
    """Metric block `M` (docs/report.md): FP64 linf / rmse / relativeL2 or None with a reason; nonfinite counts."""

    linf: float | None
    rmse: float | None
    relative_l2: float | None
    undefined_reason: str | None
    nonfinite_actual: Mapping[str, int]
    nonfinite_reference: Mapping[str, int]


@record(eq=False)
class Comparison(Record):
    """A comparison `C` of an actual [QH, D] against a reference [QH, D]; `eligible_global` only when some but not
    all heads are eligible; `abs_error` float64 |actual - reference|, NaN where undefined."""

    label: str
    global_metrics: Metrics
    per_head: tuple[Metrics, ...]
    eligible_global: Metrics | None
    actual: np.ndarray
    reference: np.ndarray
    abs_error: np.ndarray


@record(eq=False)
class Ulp(Record):
    """ULP block `U` (docs/report.md): `distance` int64 [QH, D] (-1 undefined), (low, high, count) buckets."""

    max: int | None
    p99: int | None
    nonfinite_pairs: int
    histogram: tuple[tuple[int, int, int], ...]
    distance: np.ndarray


@record(eq=False)
class Rounded(Record):
    """The primary reference rounded (RNE) to `dtype` and promoted back, compared with the output."""

    label: str
    dtype: str
    identity: bool
    comparison: Comparison
    ulp: Ulp
    rounded_bits: np.ndarray


@record(eq=False)
class NarrowedQuery(Record):
    """The narrowed-Q counterfactual: q' = round(q, storage dtype), reference recomputed from q'."""

    label: str
    dtype: str
    comparison: Comparison
    difference_from_primary: Comparison
    query_rounding_difference: Comparison
    query_values: np.ndarray
    reference: np.ndarray


@record(eq=False)
class Fp64Diagnostic(Record):
    """The same formula in FP64: the primary reference's own rounding, never a replacement."""

    label: str
    reference_error: Comparison
    output_error: Comparison
    reference: np.ndarray


@record
class HeadAttention(Record):
    """Attention diagnostics of one query head (values None with `undefined_reason`)."""

    query_head: int
    kv_head: int
    max_logit: float | None
    log_sum_exp: float | None
    entropy: float | None
    last_token_weight: float | None
    top_tokens: tuple[tuple[int, float], ...] | None
    undefined_reason: str | None


@record(eq=False)
class Numerics(Record):
    """Everything computed once a packet passes the first two inconclusive tables."""

    eligible: np.ndarray
    primary: Comparison
    rounded_to_output: Rounded
    rounded_to_kernel: Rounded | None
    narrowed_query: NarrowedQuery | None
    narrowed_query_reason: str | None
    fp64: Fp64Diagnostic
    attention: tuple[HeadAttention, ...]
    weights: np.ndarray
    score: Score


@record(eq=False)
class Emulation(Record):
    """One kernel-arithmetic emulation scored against the output: a counterfactual (docs/emulations.md).

    Counts cover the eligible heads (None per ineligible head, and everywhere for an entry without numbers,
    which has `not_emulated`); `values` float32 / `bits` native [QH, D] are the emulated output.
    """

    id: str
    kernel: str
    label: str
    parameters: Mapping[str, Any]
    assumptions: tuple[str, ...]
    output_dtype: str
    compared: int
    bit_equal: int | None
    bit_equal_per_head: tuple[int | None, ...] | None
    ulp: Ulp | None
    vs_output: Comparison | None
    vs_primary_reference: Comparison | None
    values: np.ndarray | None
    bits: np.ndarray | None
    resolved: Mapping[str, Any] | None = None
    not_emulated: str | None = None
    not_emulated_code: str | None = None
    bit_equal_decisive: int | None = None
    bit_equal_decisive_per_head: tuple[int | None, ...] | None = None
    library: Mapping[str, Any] | None = None  # mlx_run: {"name", "version", "device"} of the library that ran


@record(eq=False)
class Decisive(Record):
    """The eligible output elements where the emulations with numbers are not all bit-identical."""

    count: int
    per_head: tuple[int | None, ...]
    positions: tuple[tuple[int, int], ...]
    mask: np.ndarray


@record
class Baseline(Record):
    """The primary reference rounded to the output dtype, counted like an emulation: the table's last row."""

    bit_equal: int
    bit_equal_per_head: tuple[int | None, ...]
    bit_equal_decisive: int | None
    bit_equal_decisive_per_head: tuple[int | None, ...] | None


@record(eq=False)
class EmulationCounts(Record):
    """What one request's emulations tell apart: the decisive elements (None with fewer than two), the baseline."""

    decisive: Decisive | None
    baseline: Baseline


# ---------------------------------------------------------------- the result


@record(eq=False)
class Analysis(InlineDisplay):
    """The whole analysis of one packet: admission, tensor facts, numerics, status, every inconclusive reason in
    table order, and the emulations (None unless requested and numerics exist) with their normalised ids."""

    DISPLAY_MODULE = "explorer.notebook.packet"

    admission: Admission
    status: str
    reasons: tuple[Reason, ...]
    facts: TensorFacts | None
    numerics: Numerics | None
    emulations: tuple[Emulation, ...] | None = None
    emulations_requested: tuple[str, ...] | None = None
    emulation_counts: EmulationCounts | None = None

    @property
    def score(self) -> Score | None:
        """The packet score (error / allowance, explorer/analysis/score.py), None without numerics."""
        return None if self.numerics is None else self.numerics.score

    def report(self) -> dict[str, Any]:
        """The JSON-ready report of docs/report.md, The report's keys (`explorer analyze --json`)."""
        from explorer.analysis.report import build_report  # lazy: the result delegates to its own builder

        return build_report(self)

    def element(self, head: int, channel: int | None = None):
        """Everything about one output element: `element(head, channel)` or `element(flat_index)` over [QH, D]."""
        from explorer.analysis.element import element  # lazy: the result delegates to its own builder

        return element(self, head, channel)

    def arrays(self) -> dict[str, np.ndarray]:
        """The six tensors as read-only numpy arrays in their native dtype, bit for bit, by name in packet order
        (docs/command-line.md, Python API); ValueError for a refused packet."""
        return native_arrays(self.admission)
