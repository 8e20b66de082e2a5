"""The FP32 primary reference against an independent FP64 oracle, on random geometries and edge cases.

Tolerance, per query head and output channel c, from the rounding of each FP32
step (unit roundoff u = 2^-24, gamma_n = n u / (1 - n u); exact quantities from the
oracle: logits l_t, x_t = l_t - max l, weights w_t):

- logit t is a length-D dot product in any summation order, then * s: off by at
  most Delta_t = (gamma_D + u) s sum_i |K[t, i] q[i]|;
- the max subtracted is common to every token and cancels in the normalisation;
  the subtraction rounds by u |x_t|; numpy's FP32 exp adds EXP_ULPS u relative:
  exponential t is off by a factor exp(+-a_t), a_t = Delta_t + u |x_t| + EXP_ULPS u;
- the FP32 sum of T exponentials is off by a factor within exp(+-n), with
  n = ln(sum_t w_t exp(a_t)) + gamma_T, and the division adds u: weight t is off
  by a factor exp(+-e_t), e_t = a_t + n + u;
- out_c = sum_t w~_t V[t, c] in FP32 adds gamma_T sum_t w~_t |V[t, c]|;
- exponentials, weights and products that underflow lose at most the smallest
  subnormal each: TINY (sum_t |V[t, c]| + T).

So |ref_c - exact_c| <= sum_t w_t expm1(e_t) |V[t, c]| + gamma_T sum_t w_t exp(e_t) |V[t, c]| + TINY (...).
The test allows SAFETY = 2 times that (second-order terms; the oracle's own FP64
rounding, ~1e-16 relative, is far below). The FP64 diagnostic is checked with the
same bound at FP64's u and TINY.

This worst-case bound grows linearly in D and T. The random tests also check the
probabilistic bound of Higham and Mary (2019): gamma_n replaced by lambda sqrt(n) u,
which holds for each sum with probability at least 1 - 2n exp(-lambda^2 / 2)
(lambda = 8: about 1e-13 per sum). That bound is sharp enough to reject a
reference computed from bfloat16-rounded queries (checked below).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.analysis.facts import tensor_facts
from explorer.analysis.numerics import after_numerics_reasons, compute_numerics
from explorer.analysis.reference import AttentionPass, attend, attend_two, head_attention, narrowed_query_plan

from analysis_support import DTYPE_NAMES, from_bits, make_admission, oracle, to_bits

FP32 = (2.0**-24, 2.0**-149)  # (unit roundoff, smallest subnormal)
FP64 = (2.0**-53, 2.0**-1074)
EXP_ULPS = 4
SAFETY = 2.0
PROBABILISTIC_LAMBDA = 8.0


def gamma(n: int, u: float) -> float:
    return n * u / (1 - n * u)


def probabilistic_gamma(n: int, u: float) -> float:
    return PROBABILISTIC_LAMBDA * math.sqrt(n) * u


def tolerance(q, k, v, scale: float, precision=FP32, gamma=gamma) -> np.ndarray:
    """[QH, D] bound on |reference - exact| (module docstring), from the oracle's exact quantities."""
    u, tiny = precision
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    group = q.shape[0] // k.shape[0]
    tokens, head_dim = k.shape[1], k.shape[2]
    bounds = np.empty_like(q)
    for h in range(q.shape[0]):
        kv = h // group
        logits = (k[kv] @ q[h]) * scale
        x = logits - logits.max()
        w = np.exp(x) / np.exp(x).sum()
        argument = (gamma(head_dim, u) + u) * scale * (np.abs(k[kv]) @ np.abs(q[h])) + u * np.abs(x) + EXP_ULPS * u
        normalisation = math.log(w @ np.exp(argument)) + gamma(tokens, u)
        e = argument + normalisation + u
        abs_v = np.abs(v[kv])
        bound = (w * np.expm1(e)) @ abs_v + gamma(tokens, u) * ((w * np.exp(e)) @ abs_v)
        bounds[h] = SAFETY * (bound + tiny * (abs_v.sum(axis=0) + tokens))
    return bounds


def inputs(admission):
    t = admission.tensors
    return t["queries"].values[0, :, 0, :], t["storedKeys"].values[0], t["storedValues"].values[0]


def analyzed(q, k, v, output=None, **kwargs):
    """compute_numerics and the after-numerics reasons of an in-memory packet."""
    output = np.zeros_like(np.asarray(q, dtype=np.float64)) if output is None else output
    admission = make_admission(q, k, v, output, **kwargs)
    facts = tensor_facts(admission.tensors)
    numerics = compute_numerics(admission, facts)
    return admission, numerics, after_numerics_reasons(facts, numerics)


def assert_within_oracle(admission, numerics):
    q, k, v = inputs(admission)
    exact = oracle(q, k, v, admission.scale)
    error = np.abs(numerics.primary.reference.astype(np.float64) - exact)
    assert np.all(error <= tolerance(q, k, v, admission.scale))
    assert np.all(np.abs(numerics.fp64.reference - exact) <= tolerance(q, k, v, admission.scale, FP64))


@st.composite
def geometries(draw):
    kv_heads = draw(st.integers(1, 32))
    group = draw(st.integers(1, 32 // kv_heads))
    return {
        "query_heads": kv_heads * group,
        "kv_heads": kv_heads,
        "head_dim": draw(st.integers(1, 128)),
        "tokens": draw(st.integers(1, 300)),
        "dtypes": tuple(draw(st.sampled_from(DTYPE_NAMES)) for _ in range(3)),
        "query_std": draw(st.sampled_from([0.01, 1.0, 4.0])),
        "scale": draw(st.sampled_from([1.0, 0.0625, 1e-3])),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


@settings(max_examples=40, deadline=None)
@given(geometries())
def test_primary_reference_matches_fp64_oracle(g):
    rng = np.random.default_rng(g["seed"])
    q = rng.normal(0, g["query_std"], (g["query_heads"], g["head_dim"]))
    k = rng.normal(0, 1, (g["kv_heads"], g["tokens"], g["head_dim"]))
    v = rng.normal(0, 1, (g["kv_heads"], g["tokens"], g["head_dim"]))
    output = oracle(q, k, v, g["scale"])
    admission, numerics, reasons = analyzed(q, k, v, output, dtypes=g["dtypes"], scale=g["scale"])
    assert numerics.eligible.all()
    assert_within_oracle(admission, numerics)
    q, k, v = inputs(admission)
    likely = tolerance(q, k, v, admission.scale, gamma=probabilistic_gamma)
    assert np.all(np.abs(numerics.primary.reference - oracle(q, k, v, admission.scale)) <= likely)
    assert [r.code for r in reasons] == []
    weights = numerics.weights.astype(np.float64)
    assert np.allclose(weights.sum(axis=1), 1.0, atol=gamma(g["tokens"] + 1, FP32[0]))
    for head in numerics.attention:
        assert head.undefined_reason is None
        assert len(head.top_tokens) == min(5, g["tokens"])


def test_single_token_reference_is_the_value_row():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(4, 8)), rng.normal(size=(2, 1, 8)), rng.normal(size=(2, 1, 8))
    admission, numerics, _ = analyzed(q, k, v)
    values = admission.tensors["storedValues"].values[0, :, 0, :]
    assert np.array_equal(numerics.primary.reference, np.repeat(values, 2, axis=0))
    for head in numerics.attention:
        assert head.entropy == 0.0 and head.last_token_weight == 1.0 and head.top_tokens == ((0, 1.0),)


def test_huge_logits_do_not_overflow_the_softmax():
    # Logits around 1e4: exp() without the max subtraction would overflow FP32.
    rng = np.random.default_rng(2)
    q = rng.normal(0, 1, (2, 16)) * 100
    k = rng.normal(0, 1, (1, 50, 16)) * 10
    v = rng.normal(0, 1, (1, 50, 16))
    admission, numerics, reasons = analyzed(q, k, v, oracle(q, k, v, 1.0))
    assert np.isfinite(numerics.primary.reference).all()
    assert_within_oracle(admission, numerics)
    assert all(a.max_logit > 1000 and a.undefined_reason is None for a in numerics.attention)
    assert reasons == ()


def test_all_equal_logits_give_uniform_weights():
    rng = np.random.default_rng(3)
    tokens = 7
    q = rng.normal(size=(2, 4))
    k = np.broadcast_to(rng.normal(size=(1, 1, 4)), (1, tokens, 4))
    v = rng.normal(size=(1, tokens, 4))
    admission, numerics, _ = analyzed(q, k, v)
    assert np.all(numerics.weights == numerics.weights[:, :1])
    assert_within_oracle(admission, numerics)
    for head in numerics.attention:
        assert head.entropy == pytest.approx(math.log(tokens), rel=1e-6)
        assert [t for t, _ in head.top_tokens] == [0, 1, 2, 3, 4]  # ties by lower token


def test_zero_values_give_zero_reference_norm():
    rng = np.random.default_rng(4)
    q, k, v = rng.normal(size=(2, 4)), rng.normal(size=(1, 5, 4)), np.zeros((1, 5, 4))
    output = np.array([[0, 0, 0, 0.5], [0, 0, 0, 0]])
    _, numerics, reasons = analyzed(q, k, v, output)
    assert np.array_equal(numerics.primary.reference, np.zeros((2, 4), np.float32))
    m0, m1 = numerics.primary.per_head
    assert (m0.linf, m0.rmse, m0.relative_l2, m0.undefined_reason) == (0.5, 0.25, None, "zero_reference_norm")
    assert (m1.linf, m1.rmse, m1.relative_l2, m1.undefined_reason) == (0.0, 0.0, None, "zero_reference_norm")
    assert numerics.primary.global_metrics.undefined_reason == "zero_reference_norm"
    assert reasons == ()


def test_tiny_scale_gives_uniform_weights():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(2, 8)), rng.normal(size=(2, 9, 8)), rng.normal(size=(2, 9, 8))
    admission, numerics, _ = analyzed(q, k, v, scale=1e-30)
    assert np.allclose(numerics.weights, 1 / 9, rtol=1e-6)
    assert_within_oracle(admission, numerics)


@pytest.mark.parametrize(
    "tensor, head, ineligible",
    [
        ("queries", 1, [1]),
        ("storedKeys", 0, [0, 1]),
        ("storedValues", 1, [2, 3]),
    ],
)
@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_nonfinite_input_makes_heads_ineligible(tensor, head, ineligible, special):
    rng = np.random.default_rng(6)
    arrays = {
        "queries": rng.normal(size=(4, 4)),
        "storedKeys": rng.normal(size=(2, 3, 4)),
        "storedValues": rng.normal(size=(2, 3, 4)),
    }
    arrays[tensor][head, ..., 2] = special
    q, k, v = arrays["queries"], arrays["storedKeys"], arrays["storedValues"]
    with np.errstate(invalid="ignore"):
        output = oracle(q, k, v, 1.0)
    admission, numerics, reasons = analyzed(q, k, v, np.nan_to_num(output, nan=0.0, posinf=0.0, neginf=0.0))
    assert np.flatnonzero(~numerics.eligible).tolist() == ineligible
    assert np.isnan(numerics.primary.reference[ineligible]).all()
    assert np.isfinite(numerics.primary.reference[numerics.eligible]).all()
    for block in (
        numerics.primary,
        numerics.rounded_to_output.comparison,
        numerics.fp64.reference_error,
        numerics.fp64.output_error,
    ):
        assert block.global_metrics.undefined_reason == "nonfinite_inputs"
        assert [m.undefined_reason for m in block.per_head] == [
            "nonfinite_inputs" if h in ineligible else None for h in range(4)
        ]
        assert block.eligible_global is not None and block.eligible_global.undefined_reason is None
    assert [a.undefined_reason for a in numerics.attention] == [
        "nonfinite_inputs" if h in ineligible else None for h in range(4)
    ]
    assert [r.code for r in reasons] == ["nonfinite_inputs"]
    assert_within_oracle_eligible(admission, numerics)


def assert_within_oracle_eligible(admission, numerics):
    q, k, v = inputs(admission)
    with np.errstate(invalid="ignore"):
        exact = oracle(q, k, v, admission.scale)
    group = q.shape[0] // k.shape[0]
    for h in np.flatnonzero(numerics.eligible):
        kv = h // group
        bound = tolerance(q[h : h + 1], k[kv : kv + 1], v[kv : kv + 1], admission.scale)[0]
        assert np.all(np.abs(numerics.primary.reference[h] - exact[h]) <= bound)


def test_probabilistic_tolerance_rejects_bfloat16_rounded_queries():
    """The oracle check is sharp enough to notice a reference that narrowed the queries."""
    rng = np.random.default_rng(10)
    q, k, v = rng.normal(size=(16, 128)), rng.normal(size=(2, 300, 128)), rng.normal(size=(2, 300, 128))
    admission = make_admission(q, k, v, np.zeros((16, 128)), dtypes=("float32", "float32", "float32"), scale=0.088)
    q, k, v = inputs(admission)
    everyone = np.ones(16, dtype=bool)
    narrowed = attend(from_bits(to_bits(q, "bfloat16"), "bfloat16"), k, v, admission.scale, everyone, np.float32)
    faithful = attend(q, k, v, admission.scale, everyone, np.float32)
    exact = oracle(q, k, v, admission.scale)
    likely = tolerance(q, k, v, admission.scale, gamma=probabilistic_gamma)
    assert np.all(np.abs(faithful.reference - exact) <= likely)
    assert np.any(np.abs(narrowed.reference - exact) > likely)


def test_nonfinite_output_is_a_nonfinite_comparison():
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(2, 4)), rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 3, 4))
    output = oracle(q, k, v, 1.0)
    output[1, 0] = np.inf
    output[1, 1] = np.nan
    _, numerics, reasons = analyzed(q, k, v, output)
    m0, m1 = numerics.primary.per_head
    assert m0.undefined_reason is None
    assert m1.undefined_reason == "nonfinite_values" and m1.linf is None
    assert dict(m1.nonfinite_actual) == {"nan": 1, "positiveInfinity": 1, "negativeInfinity": 0}
    assert dict(m1.nonfinite_reference) == {"nan": 0, "positiveInfinity": 0, "negativeInfinity": 0}
    assert numerics.primary.global_metrics.undefined_reason == "nonfinite_values"
    assert numerics.primary.eligible_global is None
    assert numerics.rounded_to_output.ulp.nonfinite_pairs == 2
    assert [r.code for r in reasons] == ["nonfinite_comparison"]


def test_finite_inputs_with_overflowing_logits():
    q = np.array([[1e20, 0.0], [1.0, 0.0]])
    k = np.array([[[1e20, 0.0], [1.0, 0.0]]])
    v = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    _, numerics, reasons = analyzed(q, k, v, np.ones((2, 2)))
    assert numerics.eligible.all()
    overflowed, finite = numerics.attention
    assert overflowed.undefined_reason == "nonfinite_logits" and overflowed.max_logit is None
    assert overflowed.top_tokens is None and np.isnan(numerics.weights[0]).all()
    assert finite.undefined_reason is None
    assert not np.isfinite(numerics.primary.reference[0]).all()
    assert numerics.primary.per_head[0].undefined_reason == "nonfinite_values"
    assert [r.code for r in reasons] == ["nonfinite_comparison"]
    assert "overflow in query heads [0]" in reasons[0].message


def test_reference_overflowing_float16_when_rounded_is_a_nonfinite_comparison():
    q, k = np.zeros((1, 2)), np.zeros((1, 2, 2))
    v = np.full((1, 2, 2), 1e5)
    _, numerics, reasons = analyzed(q, k, v, np.full((1, 2), 65504.0), dtypes=("float32", "float32", "float16"))
    assert np.isfinite(numerics.primary.reference).all()
    assert np.isinf(numerics.rounded_to_output.comparison.reference).all()
    assert [r.code for r in reasons] == ["nonfinite_comparison"]


def test_attend_is_group_wise_and_fp64_matches_formula():
    rng = np.random.default_rng(8)
    q = rng.normal(size=(6, 5)).astype(np.float32)
    k = rng.normal(size=(3, 4, 5)).astype(np.float32)
    v = rng.normal(size=(3, 4, 5)).astype(np.float32)
    eligible = np.array([True, False, True, True, True, True])
    single = attend(q, k, v, 0.5, eligible, np.float64)
    assert np.isnan(single.reference[1]).all()
    exact = oracle(q, k, v, 0.5)
    assert np.allclose(single.reference[eligible], exact[eligible], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("tokens", [3, 1500])  # 1500: more than one token block and one product chunk
def test_attend_two_gives_both_passes_bit_for_bit(tokens):
    rng = np.random.default_rng(12)
    q = rng.normal(size=(8, 16)).astype(np.float32)
    q[5, 0] = np.inf  # nonfinite logits: weights NaN, logits_finite False
    second = (q * np.float32(1.5)).astype(np.float32)
    k = rng.normal(size=(2, tokens, 16)).astype(np.float32)
    v = rng.normal(size=(2, tokens, 16)).astype(np.float32)
    eligible = np.array([True, True, False, True, True, True, True, False])
    primary, reference = attend_two(q, second, k, v, 0.25, eligible, np.float32)
    alone = attend(q, k, v, 0.25, eligible, np.float32, keep_weights=True)
    for name in ("reference", "weights", "logits_finite", "max_logit", "sum_exp"):
        assert np.array_equal(getattr(primary, name), getattr(alone, name), equal_nan=name != "logits_finite"), name
    assert np.array_equal(reference, attend(second, k, v, 0.25, eligible, np.float32).reference, equal_nan=True)
    assert not primary.logits_finite[5] and np.isnan(primary.weights[5]).all()


def test_attend_keeps_the_weights_of_the_masked_heads_in_head_order():
    rng = np.random.default_rng(13)
    q, k, v = (rng.normal(size=shape).astype(np.float32) for shape in ((4, 3), (2, 5, 3), (2, 5, 3)))
    every = attend(q, k, v, 0.5, np.ones(4, dtype=bool), np.float32, keep_weights=True)
    masked = attend(q, k, v, 0.5, np.ones(4, dtype=bool), np.float32, keep_weights=np.array([False, True, False, True]))
    assert masked.weights.shape == (2, 5) and np.array_equal(masked.weights, every.weights[[1, 3]])
    assert attend(q, k, v, 0.5, np.ones(4, dtype=bool), np.float32).weights is None


@pytest.mark.parametrize("query_dtype", DTYPE_NAMES)
@pytest.mark.parametrize("kv_dtype", DTYPE_NAMES)
def test_narrowed_query_exists_exactly_for_float32_queries_and_narrow_storage(query_dtype, kv_dtype):
    rng = np.random.default_rng(9)
    q, k, v = rng.normal(size=(2, 4)), rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 3, 4))
    admission, numerics, _ = analyzed(q, k, v, dtypes=(query_dtype, kv_dtype, "float32"))
    exists = query_dtype == "float32" and kv_dtype in ("float16", "bfloat16")
    assert (numerics.narrowed_query is not None) == exists
    assert narrowed_query_plan(query_dtype, kv_dtype)[0] == (kv_dtype if exists else None)
    if not exists:
        expected = "queries_not_float32" if query_dtype != "float32" else "storage_not_narrow"
        assert numerics.narrowed_query_reason == expected
        return
    assert numerics.narrowed_query_reason is None
    narrowed = numerics.narrowed_query
    assert narrowed.label == f"narrowed-Q counterfactual (float32 -> {kv_dtype} -> float32)"
    queries = admission.tensors["queries"].values[0, :, 0, :]
    assert np.array_equal(narrowed.query_values, from_bits(to_bits(queries, kv_dtype), kv_dtype))
    expected = attend(narrowed.query_values, *inputs(admission)[1:], admission.scale, numerics.eligible, np.float32)
    assert np.array_equal(narrowed.reference, expected.reference)


@pytest.mark.parametrize("query_dtype", DTYPE_NAMES)
@pytest.mark.parametrize("kv_dtype", DTYPE_NAMES)
@pytest.mark.parametrize("output_dtype", DTYPE_NAMES)
def test_every_dtype_mix_matches_the_oracle(query_dtype, kv_dtype, output_dtype):
    rng = np.random.default_rng(11)
    q, k, v = rng.normal(size=(6, 24)), rng.normal(size=(3, 40, 24)), rng.normal(size=(3, 40, 24))
    admission, numerics, reasons = analyzed(
        q, k, v, oracle(q, k, v, 0.2), dtypes=(query_dtype, kv_dtype, output_dtype), scale=0.2
    )
    assert_within_oracle(admission, numerics)
    assert numerics.rounded_to_output.dtype == output_dtype
    assert numerics.rounded_to_output.identity == (output_dtype == "float32")
    assert reasons == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.125, 0.25, 0.5, 1.0]), min_size=1, max_size=40))
def test_top_tokens_are_largest_first_ties_by_lower_token(weights):
    row = np.asarray(weights, dtype=np.float32)[None, :]
    primary = AttentionPass(row, row, np.ones(1, bool), np.zeros(1), np.ones(1))
    (head,) = head_attention(primary, np.ones(1, bool), 1)
    expected = sorted(range(len(weights)), key=lambda t: (-weights[t], t))[: min(5, len(weights))]
    assert [t for t, _ in head.top_tokens] == expected
    assert [w for _, w in head.top_tokens] == [weights[t] for t in expected]
