"""Every metric block checked against hand-computed values on tiny packets (QH4 / KVH2 / T3 / D4).

All packets use q[h] = [100, ., 0, 0] and keys whose logits are [-100, -100, 100]
(scale 1): in FP32 exp(-200) underflows to 0, so the weights are exactly
[0, 0, 1] and the primary reference of head h is exactly V[h // 2, 2]. In FP64
exp(-200) ~ 1e-87 is not zero, but the first two value rows are zero and
1 / (1 + 2e-87) == 1, so the FP64 reference equals V[kv, 2] too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from explorer.analysis.facts import tensor_facts
from explorer.analysis.numerics import after_numerics_reasons, compute_numerics

from analysis_support import make_admission, to_bits

QUERIES = np.tile([100.0, 0.0, 0.0, 0.0], (4, 1))
KEYS = np.tile([[-1.0, 0, 0, 0], [-1.0, 0, 0, 0], [1.0, 0, 0, 0]], (2, 1, 1))
ZERO_COUNTS = {"nan": 0, "positiveInfinity": 0, "negativeInfinity": 0}
F32_ONE = 0x3F800000  # ordinal of 1.0 on the float32 line


def stored_values(row0, row1):
    values = np.zeros((2, 3, 4))
    values[0, 2], values[1, 2] = row0, row1
    return values


def run(queries, values, output, **kwargs):
    admission = make_admission(queries, KEYS, values, output, scale=1.0, **kwargs)
    facts = tensor_facts(admission.tensors)
    numerics = compute_numerics(admission, facts)
    return numerics, after_numerics_reasons(facts, numerics)


def triple(m):
    return (m.linf, m.rmse, m.relative_l2, m.undefined_reason)


def approx(linf, rmse, relative, reason=None):
    relative = None if relative is None else pytest.approx(relative, rel=1e-15)
    return (linf, pytest.approx(rmse, rel=1e-15), relative, reason)


def histogram(counts: dict[int, int], top: int) -> tuple[tuple[int, int, int], ...]:
    """Buckets [0,0], [1,1], [2,3], ... up to bucket index `top`, with counts by index."""
    bounds = [(0, 0)] + [(1 << (i - 1), (1 << i) - 1) for i in range(1, top + 1)]
    return tuple((low, high, counts.get(i, 0)) for i, (low, high) in enumerate(bounds))


# ---------------------------------------------------------------- packet A: all float32, zero-norm KV head


A_OUTPUT = np.array([[1, 1, 1, 1], [1.5, 1, 1, 1], [0, 0, 0, -1], [0, 0, 0, 0]], dtype=float)


@pytest.fixture(scope="module")
def packet_a():
    return run(QUERIES, stored_values([1, 1, 1, 1], [0, 0, 0, 0]), A_OUTPUT)


def test_a_primary_reference_and_metrics(packet_a):
    numerics, reasons = packet_a
    assert reasons == ()
    assert np.array_equal(numerics.primary.reference, [[1, 1, 1, 1]] * 2 + [[0, 0, 0, 0]] * 2)
    assert [triple(m) for m in numerics.primary.per_head] == [
        approx(0.0, 0.0, 0.0),
        approx(0.5, 0.25, 0.25),
        approx(1.0, 0.5, None, "zero_reference_norm"),
        approx(0.0, 0.0, None, "zero_reference_norm"),
    ]
    assert triple(numerics.primary.global_metrics) == approx(1.0, math.sqrt(1.25 / 16), math.sqrt(1.25) / math.sqrt(8))
    assert numerics.primary.eligible_global is None
    for m in (*numerics.primary.per_head, numerics.primary.global_metrics):
        assert dict(m.nonfinite_actual) == ZERO_COUNTS and dict(m.nonfinite_reference) == ZERO_COUNTS
    expected_error = np.abs(A_OUTPUT - numerics.primary.reference)
    assert np.array_equal(numerics.primary.abs_error, expected_error)


def test_a_rounded_to_float32_is_identity_with_ulp(packet_a):
    numerics, _ = packet_a
    rounded = numerics.rounded_to_output
    assert rounded.dtype == "float32" and rounded.identity is True and "identity" in rounded.label
    assert [triple(m) for m in rounded.comparison.per_head] == [triple(m) for m in numerics.primary.per_head]
    # 1.5 vs 1.0 is 2^22 float32 steps; -1.0 vs 0.0 is the ordinal of 1.0; 14 pairs are equal.
    assert rounded.ulp.max == F32_ONE and rounded.ulp.p99 == F32_ONE and rounded.ulp.nonfinite_pairs == 0
    assert rounded.ulp.histogram == histogram({0: 14, 23: 1, 30: 1}, top=30)
    assert rounded.ulp.distance[1, 0] == 1 << 22 and rounded.ulp.distance[2, 3] == F32_ONE
    assert numerics.rounded_to_kernel is None


def test_a_narrowed_query_absent_and_fp64(packet_a):
    numerics, _ = packet_a
    assert numerics.narrowed_query is None and numerics.narrowed_query_reason == "storage_not_narrow"
    assert np.array_equal(numerics.fp64.reference, numerics.primary.reference)
    assert [triple(m) for m in numerics.fp64.reference_error.per_head] == [
        approx(0.0, 0.0, 0.0),
        approx(0.0, 0.0, 0.0),
        approx(0.0, 0.0, None, "zero_reference_norm"),
        approx(0.0, 0.0, None, "zero_reference_norm"),
    ]
    assert [triple(m) for m in numerics.fp64.output_error.per_head] == [triple(m) for m in numerics.primary.per_head]
    assert "not a replacement reference" in numerics.fp64.label


def test_a_attention_diagnostics(packet_a):
    numerics, _ = packet_a
    for h, head in enumerate(numerics.attention):
        assert (head.query_head, head.kv_head) == (h, h // 2)
        assert (head.max_logit, head.log_sum_exp, head.entropy, head.last_token_weight) == (100.0, 100.0, 0.0, 1.0)
        assert head.top_tokens == ((2, 1.0), (0, 0.0), (1, 0.0))
        assert head.undefined_reason is None
    assert np.array_equal(numerics.weights, np.tile([0.0, 0.0, 1.0], (4, 1)).astype(np.float32))


# ---------------------------------------------------------------- packet B: float32 Q, bfloat16 K/V and output


B_OUTPUT = np.array([[1, 1, 1, 1], [1 + 2**-7, 1, 1, 1], [2 + 3 * 2**-6, 0, -0.0, 0], [2 - 2**-7, 0, 0, 0]])
B_QUERY_EXTRA = 1 + 2**-10  # rounds to 1.0 in bfloat16; multiplies a zero key channel


@pytest.fixture(scope="module")
def packet_b():
    queries = QUERIES.copy()
    queries[:, 1] = B_QUERY_EXTRA
    return run(
        queries,
        stored_values([1, 1, 1, 1], [2, 0, 0, 0]),
        B_OUTPUT,
        dtypes=("float32", "bfloat16", "bfloat16"),
        kernel_output_dtype="float16",
    )


B_PRIMARY = [
    approx(0.0, 0.0, 0.0),
    approx(2**-7, 2**-8, 2**-8),
    approx(3 * 2**-6, 3 * 2**-7, 3 * 2**-7),
    approx(2**-7, 2**-8, 2**-8),
]
B_GLOBAL = approx(3 * 2**-6, math.sqrt(19 * 2**-13 / 16), math.sqrt(19 * 2**-13) / 4)


def test_b_primary_and_rounded_to_bfloat16(packet_b):
    numerics, reasons = packet_b
    assert reasons == ()
    assert [triple(m) for m in numerics.primary.per_head] == B_PRIMARY
    assert triple(numerics.primary.global_metrics) == B_GLOBAL
    rounded = numerics.rounded_to_output
    assert rounded.dtype == "bfloat16" and rounded.identity is False
    assert [triple(m) for m in rounded.comparison.per_head] == B_PRIMARY
    # bfloat16 steps: 1 above 1.0, 3 above 2.0, -0 vs +0 is 0, 1 below 2.0.
    assert (rounded.ulp.max, rounded.ulp.p99, rounded.ulp.nonfinite_pairs) == (3, 3, 0)
    assert rounded.ulp.histogram == ((0, 0, 13), (1, 1, 2), (2, 3, 1))
    assert np.array_equal(rounded.rounded_bits, to_bits(numerics.primary.reference, "bfloat16"))


def test_b_rounded_to_kernel_float16(packet_b):
    numerics, _ = packet_b
    kernel = numerics.rounded_to_kernel
    assert kernel.dtype == "float16" and kernel.identity is False and "kernelOutputDType float16" in kernel.label
    assert [triple(m) for m in kernel.comparison.per_head] == B_PRIMARY
    # The same differences in float16 steps: 2^-7 / 2^-10 = 8 (twice), 3 * 2^-6 / 2^-9 = 24.
    assert (kernel.ulp.max, kernel.ulp.p99, kernel.ulp.nonfinite_pairs) == (24, 24, 0)
    assert kernel.ulp.histogram == histogram({0: 13, 4: 2, 5: 1}, top=5)


def test_b_narrowed_query(packet_b):
    numerics, _ = packet_b
    narrowed = numerics.narrowed_query
    assert numerics.narrowed_query_reason is None
    assert narrowed.dtype == "bfloat16"
    assert narrowed.label == "narrowed-Q counterfactual (float32 -> bfloat16 -> float32)"
    assert np.array_equal(narrowed.query_values[:, 1], np.ones(4, np.float32))
    assert [triple(m) for m in narrowed.comparison.per_head] == B_PRIMARY
    assert [triple(m) for m in narrowed.difference_from_primary.per_head] == [approx(0.0, 0.0, 0.0)] * 4
    norm = math.sqrt(100.0**2 + B_QUERY_EXTRA**2)
    rounding = approx(2**-10, 2**-11, 2**-10 / norm)
    assert [triple(m) for m in narrowed.query_rounding_difference.per_head] == [rounding] * 4
    assert triple(narrowed.query_rounding_difference.global_metrics) == rounding
    assert "not the reference" in narrowed.comparison.label


def test_b_fp64(packet_b):
    numerics, _ = packet_b
    assert [triple(m) for m in numerics.fp64.reference_error.per_head] == [approx(0.0, 0.0, 0.0)] * 4
    assert [triple(m) for m in numerics.fp64.output_error.per_head] == B_PRIMARY


# ---------------------------------------------------------------- packets C and D: nonfinite inputs and output


def test_c_nan_query_and_infinite_output():
    queries = QUERIES.copy()
    queries[1, 2] = np.nan
    output = A_OUTPUT.copy()
    output[1, 0] = np.nan
    output[3, 1] = np.inf
    numerics, reasons = run(queries, stored_values([1, 1, 1, 1], [0, 0, 0, 0]), output)
    assert numerics.eligible.tolist() == [True, False, True, True]
    assert [r.code for r in reasons] == ["nonfinite_inputs", "nonfinite_comparison"]
    primary = numerics.primary
    assert [triple(m) for m in primary.per_head] == [
        approx(0.0, 0.0, 0.0),
        (None, None, None, "nonfinite_inputs"),
        approx(1.0, 0.5, None, "zero_reference_norm"),
        (None, None, None, "nonfinite_values"),
    ]
    nan1 = {**ZERO_COUNTS, "nan": 1}
    inf1 = {**ZERO_COUNTS, "positiveInfinity": 1}
    # The ineligible head's reference was never computed: nothing is counted there.
    assert [dict(m.nonfinite_actual) for m in primary.per_head] == [ZERO_COUNTS, nan1, ZERO_COUNTS, inf1]
    assert [dict(m.nonfinite_reference) for m in primary.per_head] == [ZERO_COUNTS] * 4
    assert triple(primary.global_metrics) == (None, None, None, "nonfinite_inputs")
    assert dict(primary.global_metrics.nonfinite_actual) == {"nan": 1, "positiveInfinity": 1, "negativeInfinity": 0}
    assert triple(primary.eligible_global) == (None, None, None, "nonfinite_values")
    assert dict(primary.eligible_global.nonfinite_actual) == inf1
    ulp = numerics.rounded_to_output.ulp
    assert (ulp.max, ulp.nonfinite_pairs) == (F32_ONE, 1)
    assert ulp.histogram == histogram({0: 10, 30: 1}, top=30)
    assert (ulp.distance[1] == -1).all() and ulp.distance[3, 1] == -1
    assert [a.undefined_reason for a in numerics.attention] == [None, "nonfinite_inputs", None, None]
    assert np.isnan(numerics.primary.abs_error[1]).all() and np.isnan(numerics.primary.abs_error[3, 1])


def test_d_infinite_key_leaves_an_eligible_global():
    values = stored_values([1, 1, 1, 1], [2, 0, 0, 0])
    keys = to_bits(KEYS[None], "float32").copy()
    keys[0, 1, 0, 3] = 0x7F800000
    admission = make_admission(QUERIES, KEYS, values, A_OUTPUT, bits={"storedKeys": keys})
    facts = tensor_facts(admission.tensors)
    numerics = compute_numerics(admission, facts)
    assert numerics.eligible.tolist() == [True, True, False, False]
    assert [r.code for r in after_numerics_reasons(facts, numerics)] == ["nonfinite_inputs"]
    primary = numerics.primary
    assert triple(primary.global_metrics) == (None, None, None, "nonfinite_inputs")
    assert triple(primary.eligible_global) == approx(0.5, math.sqrt(0.25 / 8), math.sqrt(0.25) / math.sqrt(8))
    assert [m.undefined_reason for m in primary.per_head] == [None, None, "nonfinite_inputs", "nonfinite_inputs"]
    assert np.isnan(primary.reference[2:]).all()
    assert [a.undefined_reason for a in numerics.attention] == [None, None, "nonfinite_inputs", "nonfinite_inputs"]
    ulp = numerics.rounded_to_output.ulp
    assert ulp.nonfinite_pairs == 0 and ulp.histogram == histogram({0: 7, 23: 1}, top=23)


def test_last_row_mismatch_reason():
    values = stored_values([1, 1, 1, 1], [0, 0, 0, 0])
    incoming = to_bits(values[None, :, 2:, :], "float32").copy()
    incoming[0, 1, 0, 0] ^= 0x80000000  # +0 vs -0 is a mismatch
    admission = make_admission(QUERIES, KEYS, values, A_OUTPUT, bits={"incomingValues": incoming})
    facts = tensor_facts(admission.tensors)
    reasons = after_numerics_reasons(facts, compute_numerics(admission, facts))
    assert [r.code for r in reasons] == ["last_row_mismatch"]
    assert "1 of 8 value elements" in reasons[0].message


def test_the_per_head_blocks_are_the_blocks_of_single_rows():
    """`row_blocks` reads every head's block from the per-row statistics; it equals `block` of that one row."""
    from explorer.analysis.metrics import _RowStatistics

    rng = np.random.default_rng(21)
    actual = rng.normal(size=(6, 8))
    reference = rng.normal(size=(6, 8))
    actual[1, 3], reference[2, 0], reference[4] = np.nan, np.inf, 0.0  # nonfinite values, a zero reference norm
    eligible = np.array([True, True, True, False, True, True])
    stats = _RowStatistics(actual, reference, eligible, actual_computed=False, reference_computed=True)
    rows = stats.row_blocks(eligible)
    assert len(rows) == 6
    for head, metrics in enumerate(rows):
        assert metrics == stats.block(np.array([head]), bool(eligible[head])), head
    assert [m.undefined_reason for m in rows] == [
        None,
        "nonfinite_values",
        "nonfinite_values",
        "nonfinite_inputs",
        "zero_reference_norm",
        None,
    ]


# ---------------------------------------------------------------- where the worst values are


def test_largest_at_skips_undefined_values_and_takes_the_first_on_a_tie():
    from explorer.analysis.metrics import largest_at

    errors = np.array([[0.5, np.nan, 2.0], [2.0, 1.0, np.nan]])
    assert largest_at(errors) == (0, 2)  # 2.0 twice: the first in row-major order
    assert largest_at(np.array([[-1, 3, 7], [7, -1, 0]], dtype=np.int64)) == (0, 2)  # -1: an undefined ULP distance
    assert largest_at(np.full((2, 2), np.nan)) is None and largest_at(np.full((1, 3), -1)) is None


def test_report_locations_name_the_element_of_each_worst_value():
    """The injected error sits in head 5 (samples.py): every location key points at an element of head 5 whose
    |error| (ULP distance) is the block's linf (max), and a head's linfAt lies in that head."""
    from pathlib import Path

    import explorer

    analysis = explorer.analyze(Path(__file__).resolve().parents[2] / "sample_packets" / "injected-error-head5")
    report = analysis.report()
    primary, rounded = report["reference"]["primary"], report["reference"]["roundedToOutputDType"]
    errors = analysis.numerics.primary.abs_error
    at = primary["global"]["linfAt"]
    assert at["queryHead"] == 5 and errors[at["queryHead"], at["channel"]] == primary["global"]["linf"]
    for head, entry in enumerate(primary["perHead"]):
        assert entry["linfAt"]["queryHead"] == head
        assert errors[head, entry["linfAt"]["channel"]] == entry["linf"] == np.max(errors[head])
    ulp = rounded["ulp"]
    distance = analysis.numerics.rounded_to_output.ulp.distance
    assert ulp["maxAt"]["queryHead"] == 5 and distance[ulp["maxAt"]["queryHead"], ulp["maxAt"]["channel"]] == ulp["max"]
    assert report["score"]["worstHead"] == 5
