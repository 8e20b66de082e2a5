"""Emulations: ids, accuracy, ineligible heads, the analyze()/report interface, the CLI, bits.

Emulation ids, accuracy against FP64, ineligible heads, the analyze()/report interface, the CLI and native
bits.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

import explorer
from explorer.analysis.analyze import analyze as analyze_with_timings
from explorer.analysis.analyze import clear_cache
from explorer.analysis.emulation import (
    DEFAULT_SET,
    EmulationIdError,
    EmulationInputs,
    PacketShape,
    bit_equal,
    emulate,
    native_output_bits,
    parse_id,
    resolve_all,
)
from explorer.analysis.emulation.launch import Geometry
from explorer.cli import main
from explorer.packet.dtypes import promote
from explorer.samples.packets import (
    nan_stored_values_spec,
    qwen_spec,
    synthetic_spec,
    with_snapshot,
    with_tensor,
    write_packet,
)

from analysis_support import oracle

# Float32-partial emulations stay within this many float32 ULPs of each head's largest |FP64 value|.
FLOAT32_PARTIAL_HEAD_ULPS = 16
# The bfloat16-partial twin's RMSE against FP64 is at least this many times the float32 one's.
BFLOAT16_PARTIAL_RMSE_FACTOR = 100


QWEN = Geometry(16, 2, 256, 5585)


def _ids(request, output_dtype="bfloat16", geometry=QWEN):
    return [spec.id for spec in resolve_all(request, PacketShape(output_dtype, geometry))]


# ---------------------------------------------------------------- ids


def test_every_id_form_parses_and_normalises():
    assert _ids("mlx_two_pass") == ["mlx_two_pass"]
    assert _ids("mlx_two_pass(partialDType=float32)") == ["mlx_two_pass(partialDType=float32)"]
    assert _ids("paged_two_pass(partitionTokens=128)") == ["paged_two_pass(partitionTokens=128)"]
    assert _ids("mlx_two_pass(blocks=64,partialDType=float32)") == ["mlx_two_pass(blocks=64,partialDType=float32)"]
    # listed order, whatever the given order; spaces are tolerated
    normalised = ["mlx_two_pass(blocks=64,partialDType=float32)"]
    assert _ids(" mlx_two_pass( partialDType=float32 , blocks=64 ) ") == normalised
    assert _ids("single_pass()") == ["single_pass"]
    # an explicit default disappears; the mlx partial default is the output dtype
    assert _ids("mlx_two_pass(blocks=128,partialDType=bfloat16)") == ["mlx_two_pass"]
    assert _ids("mlx_two_pass(partialDType=bfloat16)", "float32") == ["mlx_two_pass(partialDType=bfloat16)"]
    assert _ids("paged_two_pass(partitionTokens=256,partialDType=float32)") == ["paged_two_pass"]
    spec = resolve_all("mlx_two_pass", PacketShape("float16", QWEN))[0]
    assert dict(spec.parameters) == {
        "blocks": 128,
        "partialDType": "float16",
        "exp": "exact",
        "fma": "off",
        "simd": "butterfly",
    }
    # hypotheses follow the kernel's own parameters, in the order exp, fma, simd
    assert _ids("mlx_two_pass(simd=sequential,fma=on,exp=exp2_scaled,partialDType=float32)") == [
        "mlx_two_pass(partialDType=float32,exp=exp2_scaled,fma=on,simd=sequential)"
    ]
    assert _ids("mlx_two_pass(exp=exact,fma=off,simd=butterfly)") == ["mlx_two_pass"]
    # the paged default simdgroups is the engine's choice for the geometry (4 on Qwen3.6), unknown without one
    assert _ids(["paged_two_pass(simdgroups=4)", "paged_two_pass(simdgroups=8)"]) == [
        "paged_two_pass",
        "paged_two_pass(simdgroups=8)",
    ]
    assert _ids("paged_two_pass(simdgroups=4)", None, None) == ["paged_two_pass(simdgroups=4)"]
    assert _ids("mlx_sdpa(device=s,build=upstream,partialDType=bfloat16)") == ["mlx_sdpa(build=upstream)"]


def test_duplicates_run_once_at_the_first_position_and_the_default_set():
    assert _ids(["paged_two_pass", "mlx_two_pass(blocks=128)", "paged_two_pass(partialDType=float32)"]) == [
        "paged_two_pass",
        "mlx_two_pass",
    ]
    # the default set gains mlx_run where MLX is importable (the test extra installs it)
    assert _ids("default") == [*DEFAULT_SET, "mlx_run"]
    assert _ids("default", "float32") == ["mlx_two_pass", "paged_two_pass", "single_pass", "mlx_run"]
    assert _ids(["single_pass", "default"]) == [
        "single_pass",
        "mlx_two_pass",
        "mlx_two_pass(partialDType=float32)",
        "paged_two_pass",
        "mlx_run",
    ]


@pytest.mark.parametrize(
    "text,message",
    [
        ("flash_attention", "unknown emulation kernel 'flash_attention'"),
        ("mlx_two_pass(block=64)", "has no parameter 'block'"),
        ("single_pass(blocks=2)", "single_pass has no parameter 'blocks'"),
        ("mlx_two_pass(blocks=0)", "'mlx_two_pass(blocks=0)': blocks=0 is not an integer from 1 to 1024"),
        (
            "mlx_two_pass(blocks=2048)",
            "blocks=2048 is not an integer from 1 to 1024 (pass 2 merges the first multiple of 32 of them)",
        ),
        ("mlx_two_pass(blocks=-3)", "is not an integer from 1 to 1024"),
        ("mlx_two_pass(blocks=1e3)", "is not an integer from 1 to 1024"),
        ("paged_two_pass(partialDType=float64)", "partialDType=float64 is not one of float16, bfloat16, float32"),
        ("mlx_sdpa(device=x)", "'mlx_sdpa(device=x)': device=x is not one of s, d, other, cpu"),
        (
            "mlx_sdpa(build=fork)",
            "'mlx_sdpa(build=fork)': build=fork is not one of upstream, fork-base, fork-0.32.2, "
            "fork-fp32-partials, fork-d512",
        ),
        ("mlx_unfused(device=d)", "'mlx_unfused(device=d)': device=d is not one of cpu, gpu"),
        ("mlx_run(device=tpu)", "'mlx_run(device=tpu)': device=tpu is not one of default, cpu, gpu"),
        ("paged_two_pass(dispatcher=old)", "dispatcher=old is not one of current, early"),
        ("paged_two_pass(simdgroups=3)", "'paged_two_pass(simdgroups=3)': simdgroups=3 is not one of 1, 2, 4, 8"),
        ("mlx_two_pass(fma=maybe)", "'mlx_two_pass(fma=maybe)': fma=maybe is not one of off, on"),
        ("mlx_single_pass(simd=tree)", "simd=tree is not one of butterfly, sequential"),
        ("mlx_two_pass(exp=fast)", "exp=fast is not one of exact, exp2_scaled"),
        ("paged_two_pass(exp=exp2_scaled)", "paged_two_pass has no parameter 'exp'"),
        ("single_pass(fma=on)", "single_pass has no parameter 'fma'"),
        ("mlx_two_pass(blocks=64,blocks=32)", "given twice"),
        ("mlx_two_pass(blocks)", "malformed parameter 'blocks'"),
        ("mlx_two_pass(blocks=64", "malformed emulation id"),
    ],
)
def test_unknown_or_malformed_ids_are_errors_naming_the_fault(text, message):
    with pytest.raises(EmulationIdError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_id(text)


def test_cli_usage_error_for_an_unknown_emulation(tmp_path, capsys):
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=3, head_dim=4))
    assert main(["analyze", str(packet), "--emulate", "mlx_two_pass(partialDtype=float32)"]) == 2
    assert "--emulate: mlx_two_pass has no parameter 'partialDtype'" in capsys.readouterr().err
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "analyze", str(packet), "--emulate", "nope"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "unknown emulation kernel 'nope'" in done.stderr and not done.stdout


# ---------------------------------------------------------------- accuracy on Qwen-like data


@pytest.fixture(scope="module")
def qwen_like():
    spec = qwen_spec(tokens=600)
    tensors = {name: promote(bits, dtype) for name, (dtype, bits) in spec.tensors.items()}
    q, k, v = tensors["queries"][0, :, 0, :], tensors["storedKeys"][0], tensors["storedValues"][0]
    scale = np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32)
    inputs = EmulationInputs(q, k, v, scale, "bfloat16", "bfloat16", "float32")  # float32 output: partials show
    return inputs, oracle(q, k, v, float(scale))


def _emulated(inputs, ids):
    """The emulated outputs of `ids`; the paged kernel's on float32 K/V (the same values: it writes a float32 output
    only from float32 stored keys)."""
    found = {}
    for emulation_id in ids:
        on = dataclasses.replace(inputs, kv_dtype="float32") if emulation_id.startswith("paged") else inputs
        (e,) = emulate(on, resolve_all(emulation_id, on.shape), np.ones(inputs.queries.shape[0], dtype=bool))
        found[e.spec.id] = e
    return found


def test_float32_partial_variants_are_within_a_few_float32_ulp_of_fp64(qwen_like):
    inputs, exact = qwen_like
    head_ulp = np.spacing(np.abs(exact).max(axis=1).astype(np.float32)).astype(np.float64)[:, None]
    for emulation_id, e in _emulated(inputs, ["mlx_two_pass", "paged_two_pass"]).items():
        error = np.abs(e.values.astype(np.float64) - exact) / head_ulp
        assert 0 < error.max() <= FLOAT32_PARTIAL_HEAD_ULPS, emulation_id


def test_bfloat16_partials_are_measurably_farther_from_fp64_than_float32_partials(qwen_like):
    inputs, exact = qwen_like
    emulated = _emulated(
        inputs,
        [
            "mlx_two_pass",
            "mlx_two_pass(partialDType=bfloat16)",
            "paged_two_pass",
            "paged_two_pass(partialDType=bfloat16)",
        ],
    )

    def rmse(emulation_id):
        return np.sqrt(np.mean((emulated[emulation_id].values.astype(np.float64) - exact) ** 2))

    assert rmse("mlx_two_pass(partialDType=bfloat16)") > BFLOAT16_PARTIAL_RMSE_FACTOR * rmse("mlx_two_pass")
    assert rmse("paged_two_pass(partialDType=bfloat16)") > BFLOAT16_PARTIAL_RMSE_FACTOR * rmse("paged_two_pass")


# ---------------------------------------------------------------- analyze, report, cache


def test_a_packet_written_with_an_emulated_output_is_reproduced_by_that_emulation(tmp_path):
    spec = qwen_spec(tokens=300)  # more tokens than blocks: partials hold sums, and their rounding matters
    scale = np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32)
    bits = native_output_bits("mlx_two_pass", spec.tensors, scale, "bfloat16")
    assert bits.shape == spec.tensors["output"][1].shape and bits.dtype == np.uint16
    packet = write_packet(tmp_path / "mlx", with_tensor(spec, "output", bits))
    result = explorer.analyze(packet, emulate="default")
    by_id = {e.id: e for e in result.emulations}
    assert list(by_id) == [*DEFAULT_SET, "mlx_run"] == list(result.emulations_requested)
    mlx = by_id["mlx_two_pass"]
    assert mlx.bit_equal == mlx.compared == 16 * 256 and mlx.ulp.max == 0
    assert mlx.bit_equal_per_head == (256,) * 16
    assert by_id["mlx_two_pass(partialDType=float32)"].bit_equal < mlx.compared  # the partials matter here
    np.testing.assert_array_equal(mlx.bits, bits[0, :, 0, :])


def test_analyze_caches_emulations_by_content_and_ids_and_reuses_the_numerics(tmp_path):
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=4, kvh=2, tokens=9, head_dim=32, seed=4))
    clear_cache()
    plain = explorer.analyze(packet)
    assert plain.emulations is None and plain.emulations_requested is None
    report = plain.report()
    assert report["emulations"] is None and report["emulationsRequested"] is None
    timings: dict[str, float] = {}
    first = analyze_with_timings(
        packet, emulate=["single_pass", "paged_two_pass(partitionTokens=256)"], timings=timings
    )
    assert timings["cached"] == 1.0 and "emulations" in timings  # numerics reused, emulations computed
    assert first.numerics is plain.numerics
    assert first.emulations_requested == ("single_pass", "paged_two_pass")
    again = explorer.analyze(packet, emulate=["single_pass", "paged_two_pass"])
    assert again.emulations is first.emulations  # same normalised ids: the cached tuple
    other = explorer.analyze(packet, emulate=["paged_two_pass", "single_pass"])
    assert other.emulations is not first.emulations and other.emulations_requested == ("paged_two_pass", "single_pass")
    e = first.emulations[0]
    for array in (e.values, e.bits, e.ulp.distance, e.vs_output.abs_error):
        assert not array.flags.writeable
    with pytest.raises(AttributeError):
        e.bit_equal = 0
    report = first.report()
    json.dumps(report, allow_nan=False)
    entry = report["emulations"][0]
    assert set(entry) == {
        "id",
        "kernel",
        "label",
        "parameters",
        "assumptions",
        "outputDType",
        "compared",
        "bitEqual",
        "ulp",
        "vsOutput",
        "vsPrimaryReference",
        "resolved",
        "notEmulated",
        "notEmulatedCode",
        "bitEqualDecisive",
        "library",
    }
    assert entry["bitEqual"]["global"] == sum(entry["bitEqual"]["perHead"])
    assert any("fuse multiply-adds" in sentence for sentence in entry["assumptions"])
    assert report["emulationsRequested"] == ["single_pass", "paged_two_pass"]


def test_ineligible_heads_are_not_emulated_and_not_compared(tmp_path):
    packet = write_packet(tmp_path / "nan", nan_stored_values_spec())
    result = explorer.analyze(packet, emulate="default")
    eligible = result.numerics.eligible
    assert result.status == "inconclusive" and not eligible.all() and eligible.any()
    assert sum(e.bit_equal is not None for e in result.emulations) >= 3
    for e in (e for e in result.emulations if e.bit_equal is not None):
        assert e.compared == int(eligible.sum()) * 64
        assert [n is None for n in e.bit_equal_per_head] == list(~eligible)
        assert np.isnan(e.values[~eligible]).all() and np.isfinite(e.values[eligible]).all()
        assert e.vs_primary_reference.per_head[int(np.flatnonzero(~eligible)[0])].undefined_reason == "nonfinite_inputs"
        assert (e.ulp.distance[~eligible] == -1).all()
    report = result.report()
    json.dumps(report, allow_nan=False)


def test_emulations_need_numerics(tmp_path):
    spec = synthetic_spec(qh=2, kvh=1, tokens=3, head_dim=4)
    packet = write_packet(tmp_path / "d", with_snapshot(spec, sampleOutcome="discarded"))
    result = explorer.analyze(packet, emulate="single_pass")
    assert result.numerics is None and result.emulations is None
    assert result.emulations_requested == ("single_pass",)


def test_one_run_scores_two_outputs_for_a_pair():
    spec = qwen_spec(tokens=20)
    scale = np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32)
    a = native_output_bits("mlx_two_pass", spec.tensors, scale, "bfloat16")[0, :, 0, :]
    b = native_output_bits("paged_two_pass", spec.tensors, scale, "bfloat16")[0, :, 0, :]
    tensors = {name: promote(bits, dtype) for name, (dtype, bits) in spec.tensors.items()}
    inputs = EmulationInputs(
        tensors["queries"][0, :, 0, :],
        tensors["storedKeys"][0],
        tensors["storedValues"][0],
        scale,
        "bfloat16",
        "bfloat16",
        "bfloat16",
    )
    eligible = np.ones(16, dtype=bool)
    mlx, paged = emulate(inputs, resolve_all(["mlx_two_pass", "paged_two_pass"], inputs.shape), eligible)
    assert bit_equal(mlx.bits, a, eligible)[0] == 4096 and bit_equal(paged.bits, b, eligible)[0] == 4096
    assert bit_equal(mlx.bits, b, eligible)[0] == int(np.count_nonzero(a == b))


def test_cli_summary_and_json(tmp_path, capsys):
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=3, head_dim=4, output_dtype="bfloat16"))
    assert main(["analyze", str(packet), "--emulate", "default", "--emulate", "mlx_two_pass(blocks=64)"]) == 0
    out = capsys.readouterr().out
    assert "Kernel emulations" in out and "mlx_two_pass(blocks=64)" in out and " of 8" in out
    assert out.index("mlx_two_pass(blocks=64)") < out.index("rounded reference (baseline)")
    assert main(["analyze", str(packet), "--json", "--emulate", "single_pass"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["emulationsRequested"] == ["single_pass"] and report["emulations"][0]["compared"] == 8
    assert main(["analyze", str(packet), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["emulations"] is None and report["emulationsRequested"] is None


def test_no_verdict_wording_in_emulation_reports(tmp_path):
    from report_words import VERDICT_WORDS, strings_and_keys

    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=5, head_dim=32, output_dtype="bfloat16"))
    report = explorer.analyze(
        packet, emulate=["sweep", "mlx_two_pass(blocks=64)", "paged_two_pass(partitionTokens=2,partialDType=float16)"]
    ).report()
    texts = list(strings_and_keys(report["emulations"]))
    assert texts and not [text for text in texts if VERDICT_WORDS.search(text)]


def test_overflowing_scores_give_nonfinite_emulations_not_errors(tmp_path):
    spec = synthetic_spec(qh=4, kvh=2, tokens=6, head_dim=32, query_dtype="bfloat16", output_dtype="bfloat16")
    queries = spec.tensors["queries"][1].copy()
    queries[0, 1, 0, :] = 0x7F7F  # the largest finite bfloat16: every score of head 1 overflows
    packet = write_packet(tmp_path / "huge", with_tensor(spec, "queries", queries))
    result = explorer.analyze(packet, emulate="default")
    assert result.numerics.eligible.all()
    assert sum(e.values is not None for e in result.emulations) >= 3  # the paged kernel refuses D 32
    # mlx_run is the real library, whose composition scales q in bfloat16 first: its scores stay finite here
    for e in (e for e in result.emulations if e.values is not None and e.kernel != "mlx_run"):
        assert not np.isfinite(e.values[1]).any() and np.isfinite(e.values[[0, 2, 3]]).all()
        assert e.ulp.nonfinite_pairs >= 32
    json.dumps(result.report(), allow_nan=False)
