"""The packet score (error / allowance) on constructed outputs, samples, report and triage.

The packet score (error / allowance) on constructed outputs, on the samples, in the report and in triage's
order.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer import analyze
from explorer.analysis.facts import tensor_facts
from explorer.analysis.numerics import compute_numerics
from explorer.analysis.score import packet_score, spacing
from explorer.catalog.summary import list_order, summarize, summary_json
from explorer.packet.dtypes import round_bits
from explorer.packet.model import ANALYZED

from analysis_support import make_admission

SAMPLES = Path(__file__).resolve().parents[2] / "sample_packets"
OUTPUT_DTYPES = ("bfloat16", "float16", "float32")


def _inputs(seed: int = 3):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(4, 32)).astype(np.float32)
    k = rng.normal(size=(2, 50, 32)).astype(np.float32)
    v = rng.normal(size=(2, 50, 32)).astype(np.float32)
    return q, k, v


def _numerics(output_bits: np.ndarray, output_dtype: str, seed: int = 3):
    """The numerics of the packet `_inputs(seed)` whose output holds `output_bits` [QH, D]."""
    q, k, v = _inputs(seed)
    admission = make_admission(
        q,
        k,
        v,
        np.zeros_like(q),
        dtypes=("float32", "bfloat16", output_dtype),
        scale=0.125,
        bits={"output": output_bits[None, :, None, :]},
    )
    return compute_numerics(admission, tensor_facts(admission.tensors))


def _rounded_reference_bits(output_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(the primary reference [QH, D], its RNE rounding to `output_dtype` as bit patterns)."""
    zero = np.zeros((4, 32), dtype=np.uint32 if output_dtype == "float32" else np.uint16)
    reference = _numerics(zero, output_dtype).primary.reference
    return reference, round_bits(reference, output_dtype)


@pytest.mark.parametrize("dtype", OUTPUT_DTYPES)
def test_spacing_matches_numpy_for_float16_and_float32_values(dtype):
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.normal(size=200) * 10.0 ** rng.integers(-8, 4, size=200), [0.0, -0.0, 1.0, -2.0]])
    if dtype == "bfloat16":
        assert spacing(np.array([1.0, 1.5, 2.0, 0.0]), dtype).tolist() == [2**-7, 2**-7, 2**-6, 2**-133]
        return
    native = values.astype(np.float16 if dtype == "float16" else np.float32)
    native = native[np.isfinite(native)]
    assert np.array_equal(spacing(native, dtype), np.spacing(np.abs(native)).astype(np.float64))


@pytest.mark.parametrize("dtype", OUTPUT_DTYPES)
def test_the_rounded_reference_itself_scores_at_most_one(dtype):
    _, bits = _rounded_reference_bits(dtype)
    score = _numerics(bits, dtype).score
    assert score.heads_not_compared == 0 and score.heads == 4
    assert 0.0 <= score.value <= 1.0
    assert score.value == max(score.per_head)
    if dtype == "float32":
        assert score.value == 0.0  # the output is the reference


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("ulps", [1, 3, 20])
def test_one_element_moved_by_k_output_ulps_scores_about_2k(dtype, ulps):
    reference, bits = _rounded_reference_bits(dtype)
    head, channel = 2, int(np.argmax(reference[2]))  # positive and largest: k steps up stay in its binade
    moved = bits.copy()
    moved[head, channel] += ulps
    score = _numerics(moved, dtype).score
    assert 2 * ulps - 1.01 <= score.per_head[head] <= 2 * ulps + 1
    assert score.value == score.per_head[head]
    assert all(value <= 1.0 for h, value in enumerate(score.per_head) if h != head)


def test_an_injected_error_scores_far_above_the_rounding():
    reference, _ = _rounded_reference_bits("float32")
    wrong = reference.copy()
    wrong[1, 5] += 0.01
    score = _numerics(wrong.view(np.uint32), "float32").score
    assert score.value == score.per_head[1] > 1e3
    assert all(value == 0.0 for h, value in enumerate(score.per_head) if h != 1)


def test_the_allowance_adds_the_head_noise_floor():
    abs_error = np.array([[0.5, 0.25], [np.nan, 0.0]])
    reference = np.array([[1.0, 1.0], [1.0, 1.0]], dtype=np.float32)
    score = packet_score(abs_error, reference, (2**-8, None), "bfloat16")
    assert score.per_head == (0.5 / (2**-8 + 2**-8), None)  # half a bfloat16 spacing at 1.0 is 2**-8
    assert (score.value, score.heads_not_compared, score.heads) == (score.per_head[0], 1, 2)
    nothing = packet_score(abs_error[1:], reference[1:], (1e-9,), "float32")
    assert (nothing.value, nothing.per_head, nothing.heads_not_compared) == (None, (None,), 1)


def test_samples_scores_in_the_report():
    injected = analyze(SAMPLES / "injected-error-head5")
    report = injected.report()
    assert list(report["score"]) == ["value", "perHead", "headsNotCompared", "worstHead"]
    assert report["score"]["value"] == injected.score.value == max(injected.score.per_head)
    assert int(np.argmax(report["score"]["perHead"])) == 5 == report["score"]["worstHead"]
    json.dumps(report, allow_nan=False)
    nan = analyze(SAMPLES / "nan-stored-values")
    assert nan.score.heads_not_compared == 4
    assert nan.report()["score"]["perHead"].count(None) == 4
    for refused_or_without_numerics in ("refused-hash-mismatch", "discarded-sample"):
        analysis = analyze(SAMPLES / refused_or_without_numerics)
        assert analysis.score is None and analysis.report()["score"] is None


def test_list_orders_the_samples_by_score_within_each_status():
    names = sorted(p.parent.name for p in SAMPLES.glob("*/packet.json"))
    summaries = {name: summarize(SAMPLES / name) for name in names}
    ordered = sorted(names, key=lambda name: list_order(name, summaries[name]))
    analyzed = [name for name in ordered if summaries[name].status == ANALYZED]
    assert analyzed[0] == "injected-error-head5"
    assert analyzed.index("qwen36-bf16-t64") >= len(analyzed) // 2
    assert summaries["qwen36-bf16-t64"].score <= 1.0
    scores = [summaries[name].score for name in analyzed]
    assert scores == sorted(scores, reverse=True)
    line = summary_json(summaries["nan-stored-values"])
    assert line["score"] == summaries["nan-stored-values"].score and line["headsNotCompared"] == 4
