"""The ULP finding says when its worst distance is large by construction: opposite signs, subnormals."""

from __future__ import annotations

import numpy as np

import explorer
from explorer.analysis.findings import packet_findings
from explorer.foundations.formatting import short_number
from explorer.pair.findings import pair_findings
from explorer.samples import packets as samples

OUTPUT_SUBNORMAL = 2.0**-20  # a float16 subnormal (below 2^-14), same sign as every reference value it replaces


def _spec(output_dtype: str) -> samples.PacketSpec:
    return samples.synthetic_spec(
        qh=4, kvh=2, tokens=32, head_dim=16, query_dtype="bfloat16", kv_dtype="bfloat16", output_dtype=output_dtype
    )


def _ulp_sentence(tmp_path, output_dtype: str, replaced_by) -> tuple[dict, float, float]:
    """The ulp finding's text and numbers of a packet whose output near the smallest |reference| is replaced."""
    spec = _spec(output_dtype)
    dtype, bits = spec.tensors["output"]
    values = samples.bits_to_values(bits, dtype)
    head, channel = np.unravel_index(np.argmin(np.abs(values[0, :, 0, :])), values[0, :, 0, :].shape)
    reference = float(values[0, head, 0, channel])
    values[0, head, 0, channel] = replaced_by(reference)
    output = float(samples.bits_to_values(samples.values_to_bits(values, dtype), dtype)[0, head, 0, channel])
    analysis = explorer.analyze(
        samples.write_packet(
            tmp_path / "packet", samples.with_tensor(spec, "output", samples.values_to_bits(values, dtype))
        )
    )
    ulp = next(f for f in packet_findings(analysis) if f.key == "ulp")
    assert ulp.numbers["maxAt"] == {"queryHead": int(head), "channel": int(channel)}
    assert ulp.numbers["max"] == analysis.report()["reference"]["roundedToOutputDType"]["ulp"]["max"]  # kept
    return {"text": ulp.text, **ulp.numbers}, output, reference


def test_a_worst_ulp_distance_across_zero_says_so_with_the_absolute_difference(tmp_path):
    ulp, output, reference = _ulp_sentence(tmp_path, "bfloat16", lambda value: -value)
    assert ulp["max"] > 1000 and output == -reference
    assert ulp["maxAcross"] == "zero" and ulp["maxAbsDifference"] == abs(output - reference)
    assert (
        f"; there the output {short_number(output)} and the rounded reference {short_number(reference)} have "
        f"opposite signs, so the count runs through zero and every smaller value, |difference| "
        f"{short_number(abs(output - reference))}."
    ) in ulp["text"]


def test_a_worst_ulp_distance_at_subnormals_says_so_with_the_absolute_difference(tmp_path):
    ulp, output, reference = _ulp_sentence(tmp_path, "float16", lambda value: np.copysign(OUTPUT_SUBNORMAL, value))
    assert ulp["maxAcross"] == "subnormals" and ulp["maxAbsDifference"] == abs(output - reference)
    assert (
        "reach the subnormals" in ulp["text"]
        and f"|difference| {short_number(abs(output - reference))}." in ulp["text"]
    )


def test_an_ordinary_worst_ulp_distance_says_nothing_more(tmp_path):
    ulp, _, _ = _ulp_sentence(tmp_path, "bfloat16", lambda value: value * 1.5)
    assert "maxAcross" not in ulp and "|difference|" not in ulp["text"] and ulp["text"].endswith("bfloat16.")


def test_a_pairs_worst_ulp_distance_across_zero_says_so_with_the_absolute_difference(tmp_path):
    _, b_value, a_value = _ulp_sentence(tmp_path / "b", "bfloat16", lambda value: -value)
    samples.write_packet(tmp_path / "a", _spec("bfloat16"))
    output = next(
        f for f in pair_findings(explorer.compare(tmp_path / "a", tmp_path / "b" / "packet")) if f.key == "output"
    )
    assert output.numbers["ulpMaxAcross"] == "zero" and output.numbers["ulpMaxAbsDifference"] == abs(a_value - b_value)
    assert (
        f" (the a {short_number(a_value)} and the b {short_number(b_value)} have opposite signs, so the count runs "
        f"through zero and every smaller value, |difference| {short_number(abs(a_value - b_value))})."
    ) in output.text
