"""The tool's analysis.json beside the explorer's numbers: agreement and the file's size bound.

Agreement means within what a second correct FP32 reference can give (docs/replay.md).
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

import explorer
from explorer.packet.admission import CPU_MAX_QUERY_HEADS
from explorer.packet.dtypes import promote, round_bits
from explorer.packet.files import JSON_SIZE_LIMIT
from explorer.replay.agreement import ElementBounds, rounding_moves, summation_slack, tool_check
from explorer.replay.model import ARMS, ToolValue
from explorer.replay.run import ANALYSIS_ENTRIES_PER_HEAD, ANALYSIS_ENTRY_BYTES, ANALYSIS_JSON_LIMIT
from explorer.samples import packets as samples
from explorer.samples.replays import tool_reference

from replay_support import SOURCE, run_of, scale_of, spec, spec_run, with_tool_analysis, write_root

FORMER_RELATIVE_L2_TOLERANCE = 1e-3  # the rule replaced: relativeL2 within 1e-3 of the larger


def _values(report: dict) -> list[tuple[str, str, str, dict]]:
    return [
        (arm, block, metric, value)
        for arm, entry in report["arms"].items()
        for block, values in (entry["toolAnalysis"] or {}).items()
        for metric, value in values.items()
    ]


def _former_rule_flags(report: dict) -> bool:
    return any(
        abs(v["tool"] - v["explorer"]) > FORMER_RELATIVE_L2_TOLERANCE * max(abs(v["tool"]), abs(v["explorer"]))
        for _, _, metric, v in _values(report)
        if metric == "relativeL2"
    )


def _assert_all_agree(report: dict) -> None:
    values = _values(report)
    assert len(values) == len(ARMS) * 2 * 3
    assert all(v["agrees"] and v["range"][0] <= v["tool"] for *_, v in values), values
    assert not [note for note in report["notes"] if note.startswith("analysis.json")]


def _crossed(reference: np.ndarray, count: int) -> np.ndarray:
    """The float32 reference with the `count` elements nearest a bfloat16 rounding midpoint moved just across it.

    A bfloat16 is the upper half of a float32, so the midpoint of its bucket is the low half 0x8000.
    """
    bits = reference.view(np.uint32)
    low = (bits & 0xFFFF).astype(np.int64)
    distance = np.where(low == 0x8000, 1 << 16, np.abs(low - 0x8000)).ravel()  # exact ties left alone
    chosen = np.argsort(distance, kind="stable")[:count]
    moved = bits.copy().ravel()
    moved[chosen] = (moved[chosen] & 0xFFFF0000) | np.where(low.ravel()[chosen] < 0x8000, 0x8001, 0x7FFF)
    return moved.reshape(bits.shape).view(np.float32)


def test_metric_ranges_by_construction():
    bounds = ElementBounds(np.full(4, 0.5), np.array([3.0, 4.0, 0.0, 0.0]))  # |R| = 5, |B| = 1, max B = rms B = 0.5
    assert bounds.metric_range("linf", 2.0) == (1.5, 2.5)
    assert bounds.metric_range("linf", 0.25) == (0.0, 0.75)
    assert bounds.metric_range("rmse", 1.0) == (0.5, 1.5)
    assert bounds.metric_range("relativeL2", 0.4) == pytest.approx((1 / 6, 3 / 4))  # e = 2: (2-1)/(5+1), (2+1)/(5-1)
    assert bounds.metric_range("relativeL2", 0.1)[0] == 0.0
    assert ElementBounds(np.full(2, 9.0), np.array([1.0, 0.0])).metric_range("relativeL2", 1.0)[1] is None


def test_a_rounding_moves_one_ulp_only_where_the_spread_can_cross_a_midpoint():
    one = 1.0
    ulp = 2.0**-7  # bfloat16 spacing in [1, 2)
    primary = np.array([one + ulp / 2 + 2.0**-20, one + ulp / 4, one + ulp / 2 - 2.0**-20])
    near = promote(round_bits(primary.astype(np.float32), "bfloat16"), "bfloat16").astype(np.float64)
    moves = rounding_moves(primary, near, "bfloat16", 2.0**-18)
    assert moves.tolist() == [ulp, 0.0, ulp]
    assert (rounding_moves(primary, primary, "float32", 1e-6) >= 1e-6).all()


@pytest.mark.parametrize("flips", [1, 2, 3])
def test_references_rounding_one_to_three_elements_differently_agree(tmp_path, flips):
    root = tmp_path
    write_root(root)
    reference = np.array(explorer.analyze(root / SOURCE).numerics.primary.reference)
    tool = _crossed(reference, flips)
    assert np.count_nonzero(round_bits(tool, "bfloat16") != round_bits(reference, "bfloat16")) == flips
    run = write_root(root / "second", with_tool_analysis(run_of(), spec("contiguous"), tool))
    report = explorer.replay(run).report()
    _assert_all_agree(report)
    rounded = [v for _, block, _, v in _values(report) if block == "rounded"]
    assert any(v["tool"] != v["explorer"] for v in rounded)  # the two rounded references differ: a real test
    assert _former_rule_flags(report)


def test_a_real_difference_is_still_flagged(tmp_path):
    write_root(tmp_path)
    reference = np.array(explorer.analyze(tmp_path / SOURCE).numerics.primary.reference)
    wrong = (reference * np.float32(1.001)).astype(np.float32)  # 1e-3 of every value: no correct reference
    run = write_root(tmp_path / "second", with_tool_analysis(run_of(), spec("contiguous"), wrong))
    report = explorer.replay(run).report()
    assert report["status"] == "analyzed"
    flagged = {(arm, block, metric) for arm, block, metric, v in _values(report) if not v["agrees"]}
    assert {(arm, "primary", "relativeL2") for arm in ARMS} <= flagged
    assert any("outside [" in note for note in report["notes"])


def _float32_packet() -> samples.PacketSpec:
    return samples.synthetic_spec(
        qh=4,
        kvh=2,
        tokens=96,
        head_dim=64,
        query_dtype="float32",
        kv_dtype="float32",
        output_dtype="float32",
        backend="contiguous",
        seed=5,
    )


def _numpy_float32_attention(packet: samples.PacketSpec) -> np.ndarray:
    """A third correct FP32 reference [QH, D]: numpy's float32 matrix products and exp, in their own order."""
    promoted = {name: promote(bits, dtype) for name, (dtype, bits) in packet.tensors.items()}
    queries, keys, values = (promoted[name][0] for name in ("queries", "storedKeys", "storedValues"))
    group = queries.shape[0] // keys.shape[0]
    logits = np.einsum("htd,hd->ht", np.repeat(keys, group, axis=0), queries[:, 0, :]) * np.float32(scale_of(packet))
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return np.einsum("ht,htd->hd", weights, np.repeat(values, group, axis=0)).astype(np.float32)


def _noise_floor_run(tmp_path, arm_output: np.ndarray):
    packet = _float32_packet()
    outputs = {arm: arm_output.view(np.uint32).reshape(1, 4, 1, 64) for arm in ARMS}
    samples.write_packet(tmp_path / "packet", packet)
    tool = tool_reference(packet.tensors, scale_of(packet))
    run = samples.write_files(tmp_path / "run", with_tool_analysis(spec_run(packet), packet, tool, outputs))
    return explorer.replay(run).report()


def test_the_fp32_noise_floor_agrees_where_an_arm_equals_the_tools_reference(tmp_path):
    packet = _float32_packet()
    report = _noise_floor_run(tmp_path, tool_reference(packet.tensors, scale_of(packet)))
    primary = report["arms"]["pagedFixed"]["toolAnalysis"]["primary"]["relativeL2"]
    assert primary["tool"] == 0.0 and 0.0 < primary["explorer"] < 1e-6  # 0 vs the explorer's noise floor
    _assert_all_agree(report)
    assert _former_rule_flags(report)


def test_the_fp32_noise_floor_agrees_where_an_arm_is_a_third_correct_reference(tmp_path):
    report = _noise_floor_run(tmp_path, _numpy_float32_attention(_float32_packet()))
    primary = report["arms"]["pagedFixed"]["toolAnalysis"]["primary"]["relativeL2"]
    assert 0.0 < primary["tool"] < 1e-6 and 0.0 < primary["explorer"] < 1e-6 and primary["tool"] != primary["explorer"]
    _assert_all_agree(report)
    assert _former_rule_flags(report)  # e.g. 2.1e-07 vs 1.2e-07


def test_the_incident_geometry_on_all_three_arms(tmp_path):
    packet = samples.pair_full_spec("contiguous")  # QH16/KVH2/D256/T5585, all bfloat16
    samples.write_packet(tmp_path / "packet", packet)
    run = samples.write_files(tmp_path / "run", spec_run(packet))
    result = explorer.replay(run)
    report = result.report()
    explorer_rounded = result.packet.numerics.rounded_to_output.rounded_bits
    tool_rounded = round_bits(tool_reference(packet.tensors, scale_of(packet)), "bfloat16")
    assert 1 <= np.count_nonzero(tool_rounded != explorer_rounded) <= 3
    _assert_all_agree(report)
    assert _former_rule_flags(report)


def _float32_query_run(tmp_path, query_heads: int):
    packet = samples.synthetic_spec(
        qh=query_heads,
        kvh=8,
        tokens=40,
        head_dim=256,
        query_dtype="float32",
        kv_dtype="float32",
        output_dtype="float32",
        backend="contiguous",
        seed=3,
    )
    samples.write_packet(tmp_path / "packet", packet)
    return samples.write_files(tmp_path / "run", spec_run(packet))


def test_a_qh64_float32_query_analysis_json_over_256_kib_is_read(tmp_path):
    run = _float32_query_run(tmp_path, 64)
    size = os.path.getsize(run / "analysis.json")
    assert size > JSON_SIZE_LIMIT  # the tool writes about 6 KB per query head here (float32 K/V)
    assert size / 64 <= ANALYSIS_ENTRIES_PER_HEAD * ANALYSIS_ENTRY_BYTES
    report = explorer.replay(run).report()
    assert all(arm["toolAnalysis"] is not None for arm in report["arms"].values())
    assert not [note for note in report["notes"] if note.startswith("analysis.json")]


def test_at_the_largest_admissible_geometry_the_file_stays_under_its_bound_and_is_read(tmp_path):
    run = _float32_query_run(tmp_path, CPU_MAX_QUERY_HEADS)  # float32 queries: narrowed-Q blocks too
    size = os.path.getsize(run / "analysis.json")
    assert size <= CPU_MAX_QUERY_HEADS * ANALYSIS_ENTRIES_PER_HEAD * ANALYSIS_ENTRY_BYTES < ANALYSIS_JSON_LIMIT
    report = explorer.replay(run).report()
    assert all(arm["toolAnalysis"] is not None for arm in report["arms"].values())


def test_an_analysis_json_over_the_bound_is_a_note_checked_before_reading(tmp_path):
    run = write_root(tmp_path)
    os.truncate(run / "analysis.json", ANALYSIS_JSON_LIMIT + 1)  # sparse: its size says it all
    report = explorer.replay(run).report()
    assert report["status"] == "analyzed"
    assert all(arm["toolAnalysis"] is None for arm in report["arms"].values())
    assert any(f"more than {ANALYSIS_JSON_LIMIT}" in note for note in report["notes"])


def test_the_largest_per_head_entry_fits_the_bounds_derivation():
    longest = -2.2250738585072014e-308  # 24 characters as Python prints a float
    count = 2**31 - 1
    nonfinite = {"nan": count, "positiveInfinity": count, "negativeInfinity": count}
    entry = {
        "linf": longest,
        "rmse": longest,
        "relativeL2": longest,
        "undefinedReason": "zero reference norm with nonzero error",
        "queryHead": 255,
        "kvHead": 255,
        "nonfinite": {"actual": nonfinite, "reference": nonfinite},
    }
    nested = {"perHead": [entry]}
    for key in ("comparison", "narrowedQueryCounterfactual", "pagedSegmented", "arms"):
        nested = {key: nested}
    assert len(json.dumps(nested, indent=2)) < ANALYSIS_ENTRY_BYTES  # the entry with the wrappers above it


def test_a_rounding_past_the_largest_value_leaves_the_range_open_and_json_finite():
    largest = 65504.0  # float16
    primary = np.array([largest])
    moves = rounding_moves(primary, primary, "float16", 64.0)
    assert np.isinf(moves).all()
    assert ElementBounds(moves, primary).metric_range("linf", 1.0) == (0.0, None)
    assert ElementBounds(moves, primary).metric_range("relativeL2", 1.0) == (0.0, None)


def test_equal_numbers_but_for_their_summation_error_agree():
    bounds = ElementBounds(np.zeros(2048), np.ones(2048))  # no rounding can flip: the reference range has zero width
    ours, theirs = 0.0011277760563121906, 0.0011277760563121904  # the issue's numbers, one float64 ULP apart
    assert bounds.metric_range("relativeL2", ours) == (ours, ours)
    low, high = bounds.tool_range("relativeL2", ours)
    assert low <= theirs <= high
    assert high - low == pytest.approx(2 * summation_slack(2048) * ours)  # 3 x gamma(2052): about 1.4e-12 x ours
    assert not low <= 0.001127776 <= high  # a genuinely different value, 5e-9 relative away


def test_the_issues_numbers_agree_in_the_tool_check_and_a_different_one_does_not():
    ours, theirs = 0.0011277760563121906, 0.0011277760563121904
    metrics = SimpleNamespace(linf=0.0078125, rmse=0.0002, relative_l2=ours)
    references = SimpleNamespace(
        primary=SimpleNamespace(global_metrics=metrics), rounded=SimpleNamespace(global_metrics=metrics)
    )
    zero_width = ElementBounds(np.zeros(2048), np.ones(2048))
    bounds = {"primary": zero_width, "rounded": zero_width}

    def checked(relative_l2: float) -> ToolValue:
        tool = {"linf": 0.0078125, "rmse": 0.0002, "relativeL2": relative_l2}
        return tool_check({"rounded": tool}, references, bounds)["rounded"]["relativeL2"]

    assert checked(theirs).agrees and checked(theirs).low < ours < checked(theirs).high
    assert not checked(0.001127776).agrees
