"""Emulations beyond the arithmetic (docs/emulations.md).

The launch rules table by table, decisive and baseline counts known by hand, the sweep's normalised list, the
memory bound, entries without numbers, and bad ids as bounded usage errors.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import explorer
from explorer.analysis.emulation import SWEEP, PacketShape, decisive, normalised_ids, ranked, resolve_all, with_counts
from explorer.analysis.emulation.builds import BUILDS
from explorer.analysis.emulation.launch import (
    EMULATION_MEMORY_BYTES,
    MEMORY_BOUND,
    PAGED_SHAPE,
    Geometry,
    Launch,
    memory_estimate,
    mlx_launch,
    paged_simdgroups,
)
from explorer.analysis.result import Emulation
from explorer.cli import main
from explorer.foundations.bounded import MESSAGE_TEXT_CHARS
from explorer.samples.packets import synthetic_spec, write_packet

# ---------------------------------------------------------------- MLX's launch rule, per device class

# (T, QH, KVH) -> expected (kernel, blocks) per device class "s", "d", "other", written from the contract's text.
S, D, OTHER = "s", "d", "other"
SINGLE = Launch("mlx_single_pass")


def two(blocks):
    return Launch("mlx_two_pass", blocks)


LAUNCH_TABLE = [  # (T, QH, KVH, {device: expected}), D 128 unless the _gqa case needs another
    (1023, 16, 16, {S: SINGLE, D: SINGLE, OTHER: SINGLE}),
    (1024, 16, 16, {S: two(64), D: two(128), OTHER: SINGLE}),
    (1025, 16, 16, {S: two(64), D: two(128), OTHER: SINGLE}),  # n = 1: s keeps 64
    (1024, 16, 2, {S: two(64), D: two(128), OTHER: SINGLE}),  # n = 8, T not above 1,024
    (1025, 16, 2, {S: two(128), D: two(128), OTHER: SINGLE}),  # n > 4 above 1,024
    (4095, 16, 4, {S: two(64), D: two(128), OTHER: SINGLE}),  # n = 4: s keeps 64 (n > 4 needed)
    (4096, 16, 4, {S: two(64), D: two(128), OTHER: two(64)}),  # other: two-pass with GQA from 4,096
    (4096, 16, 8, {S: two(64), D: two(128), OTHER: two(32)}),  # n = 2: other 32
    (8192, 16, 8, {S: two(64), D: two(128), OTHER: two(32)}),
    (8193, 16, 8, {S: two(64), D: two(256), OTHER: two(32)}),  # d: n <= 2 above 8,192
    (8192, 12, 2, {S: two(128), D: two(128), OTHER: two(64)}),  # n = 6
    (8193, 12, 2, {S: two(256), D: two(128), OTHER: two(64)}),
    (16384, 12, 2, {S: two(256), D: two(512), OTHER: two(64)}),  # d: n >= 6 from 16,384
    (32768, 12, 2, {S: two(256), D: two(512), OTHER: two(64)}),
    (32769, 12, 2, {S: two(512), D: two(512), OTHER: two(64)}),
    (65536, 12, 2, {S: two(512), D: two(1024), OTHER: two(64)}),
    (65537, 12, 2, {S: two(1024), D: two(1024), OTHER: two(64)}),
    (4096, 16, 16, {S: two(64), D: two(128), OTHER: SINGLE}),  # no GQA: other stays single
]


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("tokens,query_heads,kv_heads,expected", LAUNCH_TABLE)
def test_mlx_launch_rule_per_device_class(tokens, query_heads, kv_heads, expected, build):
    geometry = Geometry(query_heads, kv_heads, 128, tokens)  # no _gqa case here: both builds agree
    assert {device: mlx_launch(device, geometry, build) for device in expected} == expected


@pytest.mark.parametrize(
    "head_dim,tokens,hpt", [(64, 8192, 8), (128, 8192, 4), (64, 8191, None), (96, 8192, None), (256, 8192, None)]
)
def test_upstream_launches_its_gqa_variant_and_the_fork_base_build_has_none(head_dim, tokens, hpt):
    for device in (S, D, OTHER):
        geometry = Geometry(16, 2, head_dim, tokens)  # QH = 8 x KVH
        upstream, engine = mlx_launch(device, geometry, "upstream"), mlx_launch(device, geometry, "fork-base")
        assert upstream.kernel == engine.kernel == "mlx_two_pass" and upstream.blocks == engine.blocks
        assert upstream.gqa_heads_per_simdgroup == hpt and engine.gqa_heads_per_simdgroup is None


@pytest.mark.parametrize(
    "head_dim,query_heads,engine",
    [
        (192, 8, Launch("mlx_unfused", device="gpu")),
        (80, 8, Launch("mlx_unfused", device="gpu")),
        (512, 8, Launch("mlx_two_pass", 64)),  # fork-d512 has D 512 two-pass kernels at every T
        (128, 66, Launch("mlx_unfused", device="gpu")),
    ],
)
def test_unfused_branches_resolve_to_mlx_unfused_on_the_gpu(head_dim, query_heads, engine):
    geometry = Geometry(query_heads, 2, head_dim, 100)
    assert mlx_launch(S, geometry, "upstream") == Launch("mlx_unfused", device="gpu")
    assert mlx_launch(S, geometry, "fork-d512") == engine


def test_the_cpu_always_runs_mlx_unfused():
    for build in BUILDS:
        for geometry in (Geometry(16, 2, 128, 9000), Geometry(8, 8, 80, 1), Geometry(8, 1, 512, 4096)):
            assert mlx_launch("cpu", geometry, build) == Launch("mlx_unfused", device="cpu")


@pytest.mark.parametrize("blocks,upstream,engine", [(48, 64, 48), (64, 64, 64), (1, 32, 1), (1000, 1024, 1000)])
def test_each_build_reads_mlx_sdpa_blocks_its_own_way(blocks, upstream, engine):
    geometry = Geometry(16, 16, 128, 4096)
    assert mlx_launch(S, geometry, "upstream", blocks) == Launch("mlx_two_pass", upstream)
    assert mlx_launch(S, geometry, "fork-base", blocks) == Launch("mlx_two_pass", engine)
    (spec,) = resolve_all(f"mlx_sdpa(blocks={blocks},build=fork-base)", PacketShape("bfloat16", geometry))
    assert spec.run.blocks == engine and spec.resolved["build"] == "fork-base"


# (QH, KVH, D) -> the engine's simdgroups, from hpt and the 32 KiB threadgroup budget.
SIMDGROUP_TABLE = [
    (16, 2, 256, 4),  # hpt 4: 4 x (1024 + 8 x 4 x 258) > 32768, with 4 it fits
    (8, 1, 64, 8),  # D64/GQA8: hpt 8, 8 simdgroups fit
    (4, 1, 128, 8),  # D128/GQA4: hpt 4
    (8, 1, 128, 4),  # D128/GQA8: hpt 8 does not fit 8
    (2, 2, 128, 8),  # no GQA: hpt 1
    (2, 1, 4096, None),  # not even one simdgroup fits
    (12, 1, 80, 4),  # hpt: largest divisor of 12 not above 12.8 = 12
]


@pytest.mark.parametrize("query_heads,kv_heads,head_dim,expected", SIMDGROUP_TABLE)
def test_paged_simdgroups_rule(query_heads, kv_heads, head_dim, expected):
    assert paged_simdgroups(Geometry(query_heads, kv_heads, head_dim, 10)) == expected


def test_a_shape_the_engine_refuses_has_no_numbers():
    (spec,) = resolve_all("paged_two_pass", PacketShape("float32", Geometry(2, 1, 4096, 10)))
    assert spec.run is None and spec.not_emulated.code == "paged_head_dim_refused"  # no kernel for D 4096
    assert paged_simdgroups(Geometry(2, 1, 4096, 10)) is None  # nor would a simdgroup fit
    assert spec.not_emulated.code != PAGED_SHAPE


# ---------------------------------------------------------------- decisive and baseline, known by hand


def _entry(name: str, bits) -> Emulation:
    bits = np.array(bits, dtype=np.uint16)
    return Emulation(
        id=name,
        kernel=name,
        label=name,
        parameters={},
        assumptions=(),
        output_dtype="bfloat16",
        compared=bits.size,
        bit_equal=0,
        bit_equal_per_head=(0,) * bits.shape[0],
        ulp=None,
        vs_output=None,
        vs_primary_reference=None,
        values=None,
        bits=bits,
    )


def test_decisive_and_baseline_counts_on_a_constructed_output():
    output = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 9, 9, 9]], dtype=np.uint16)
    eligible = np.array([True, True, False])
    first = _entry("first", [[1, 2, 3, 4], [5, 6, 7, 0], [0, 0, 0, 0]])  # differs from the output at (1, 3)
    second = _entry("second", [[1, 2, 0, 4], [5, 6, 7, 8], [1, 1, 1, 1]])  # differs at (0, 2)
    third = _entry("third", [[1, 2, 3, 4], [5, 6, 7, 8], [2, 2, 2, 2]])  # equal on every eligible element
    absent = Emulation(
        **{
            **first.__dict__,
            "id": "absent",
            "bits": None,
            "bit_equal": None,
            "bit_equal_per_head": None,
            "not_emulated": "no numbers",
        }
    )
    rounded = np.array([[1, 2, 3, 0], [5, 6, 0, 8], [9, 9, 9, 9]], dtype=np.uint16)
    counted, counts = with_counts((first, second, absent, third), output, rounded, eligible)
    # Decisive: the eligible elements where the emulations with numbers disagree: (0, 2) and (1, 3).
    assert counts.decisive.count == 2 and counts.decisive.per_head == (1, 1, None)
    assert counts.decisive.positions == ((0, 2), (1, 3))
    by_id = {e.id: e for e in counted}
    assert by_id["first"].bit_equal_decisive == 1 and by_id["first"].bit_equal_decisive_per_head == (1, 0, None)
    assert by_id["second"].bit_equal_decisive == 1 and by_id["third"].bit_equal_decisive == 2
    assert by_id["absent"].bit_equal_decisive is None
    # Baseline: the rounded reference equals the output at 6 of 8 eligible elements, both decisive ones among them.
    assert counts.baseline.bit_equal == 6 and counts.baseline.bit_equal_per_head == (3, 3, None)
    assert counts.baseline.bit_equal_decisive == 2 and counts.baseline.bit_equal_decisive_per_head == (1, 1, None)
    # Table order: decisive count, ties in request order, no numbers last.
    assert [e.id for e in ranked(counted)] == ["third", "first", "second", "absent"]


def test_fewer_than_two_emulations_have_no_decisive_elements():
    only = _entry("only", [[1, 2]])
    assert decisive((only,), np.array([True])) is None
    counted, counts = with_counts(
        (only,), np.array([[1, 3]], dtype=np.uint16), np.array([[1, 2]], dtype=np.uint16), np.array([True])
    )
    assert counts.decisive is None and counted[0].bit_equal_decisive is None
    assert counts.baseline.bit_equal == 1 and counts.baseline.bit_equal_decisive is None


def test_decisive_counts_on_a_real_pair_and_the_differing_elements():
    from test_compare_emulation import CONTIGUOUS, PAGED

    pair = explorer.compare(PAGED, CONTIGUOUS, emulate="default")
    report = pair.report()
    differing = report["emulationDiffering"]
    assert differing["global"] == pair.output.bits.mismatched == sum(differing["perHead"])
    rows = {row["id"]: row for row in report["emulationMatrix"]["rows"]}
    # The sides' own kernels explain all of their side's differing elements and none of the other's.
    assert rows["paged_two_pass"]["bitEqualDiffering"] == {"a": differing["global"], "b": 0}
    assert rows["mlx_two_pass"]["bitEqualDiffering"] == {"a": 0, "b": differing["global"]}
    # Each side's decisive entries and baseline are what analyze reports for that side.
    for side in ("a", "b"):
        own = explorer.analyze(pair.side(side).admission.path, emulate="default").report()
        assert report["emulationDecisive"][side] == own["emulationDecisive"]
        assert report["emulationBaseline"][side] == own["emulationBaseline"]
    baseline = report["emulationMatrix"]["baseline"]
    assert baseline["bitEqual"]["a"] == report["emulationBaseline"]["a"]["bitEqual"]
    assert set(baseline["bitEqualDiffering"]) == {"a", "b"}
    json.dumps(report, allow_nan=False)


# ---------------------------------------------------------------- the sweep


QWEN = PacketShape("bfloat16", Geometry(16, 2, 256, 5585))
QWEN_SWEEP = [
    "mlx_two_pass",
    "mlx_two_pass(partialDType=float32)",
    "paged_two_pass",
    "single_pass",
    "mlx_run",  # in the default set where MLX is importable; the sweep always has it
    "mlx_sdpa",  # the builds set, the default build first: one launch each (s and d launch alike here)
    "mlx_sdpa(device=other)",
    "mlx_sdpa(build=fork-0.32.2)",
    "mlx_sdpa(device=other,build=fork-0.32.2)",
    "paged_two_pass(dispatcher=early)",  # its simdgroups (2 here) are its own default
    "mlx_sdpa(device=cpu)",
    "mlx_unfused",
    "mlx_unfused(device=gpu)",
    "mlx_single_pass",
    "mlx_two_pass(blocks=32)",
    "mlx_two_pass(blocks=32,partialDType=float32)",
    "mlx_two_pass(blocks=64)",
    "mlx_two_pass(blocks=64,partialDType=float32)",
    "mlx_two_pass(blocks=256)",
    "mlx_two_pass(blocks=256,partialDType=float32)",
    "paged_two_pass(partitionTokens=64)",
    "paged_two_pass(partitionTokens=128)",
    "paged_two_pass(simdgroups=8)",  # simdgroups=4 is the engine's choice here: the default, already listed
    "mlx_two_pass(exp=exp2_scaled)",
    "mlx_two_pass(fma=on)",
    "mlx_two_pass(simd=sequential)",
    "mlx_two_pass(partialDType=float32,exp=exp2_scaled)",
    "mlx_two_pass(partialDType=float32,fma=on)",
    "mlx_two_pass(partialDType=float32,simd=sequential)",
    "paged_two_pass(fma=on)",
    "paged_two_pass(simd=sequential)",
]


def test_the_sweep_normalised_for_the_qwen_geometry():
    assert list(normalised_ids("sweep", QWEN)) == QWEN_SWEEP
    assert list(normalised_ids(list(SWEEP), QWEN)) == QWEN_SWEEP


def test_the_sweep_on_a_float32_output_drops_what_becomes_a_duplicate():
    found = list(normalised_ids("sweep", PacketShape("float32", Geometry(8, 1, 64, 100))))
    assert len(found) == len(set(found))
    assert "mlx_two_pass(partialDType=float32)" not in found and "mlx_sdpa(partialDType=float32)" not in found
    assert "paged_two_pass(simdgroups=4)" in found and "paged_two_pass(simdgroups=8)" not in found  # 8 is the default


def test_analyze_runs_the_sweep(tmp_path):
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=4, kvh=1, tokens=40, head_dim=64, output_dtype="bfloat16"))
    result = explorer.analyze(packet, emulate="sweep")
    assert list(result.emulations_requested) == [e.id for e in result.emulations]
    report = result.report()
    assert report["emulationsRequested"] == list(result.emulations_requested)
    order = [(e["bitEqualDecisive"] or e["bitEqual"])["global"] for e in report["emulations"]]
    assert order == sorted(order, reverse=True)
    sdpa = next(e for e in report["emulations"] if e["id"] == "mlx_sdpa")
    assert sdpa["resolved"] == {
        "kernel": "mlx_single_pass",
        "blocks": None,
        "build": "fork-fp32-partials",
        "device": None,
        "gqaHeadsPerSimdgroup": None,
    }
    cpu = next(e for e in report["emulations"] if e["id"] == "mlx_sdpa(device=cpu)")
    unfused = next(e for e in report["emulations"] if e["id"] == "mlx_unfused")
    assert cpu["resolved"]["kernel"] == "mlx_unfused" and cpu["bitEqual"] == unfused["bitEqual"]
    run = next(e for e in report["emulations"] if e["id"] == "mlx_run")
    assert run["library"]["name"] == "mlx" and run["bitEqual"] == unfused["bitEqual"]


# ---------------------------------------------------------------- entries without numbers


def test_the_gqa_variant_is_emulated_where_the_build_has_it(tmp_path):
    spec = synthetic_spec(qh=8, kvh=1, tokens=8192, head_dim=64, output_dtype="bfloat16")
    packet = write_packet(tmp_path / "gqa", spec)
    report = explorer.analyze(
        packet, emulate=["mlx_sdpa(build=fork-base)", "mlx_sdpa(build=upstream)", "mlx_two_pass(blocks=128)"]
    ).report()
    found = {e["id"]: e for e in report["emulations"]}
    upstream, engine = found["mlx_sdpa(build=upstream)"], found["mlx_sdpa(build=fork-base)"]
    assert upstream["resolved"]["gqaHeadsPerSimdgroup"] == 8 and upstream["bitEqual"] is not None
    assert any("_gqa" in sentence for sentence in upstream["assumptions"])
    assert engine["resolved"]["gqaHeadsPerSimdgroup"] is None  # fork-base has no _gqa launch
    assert engine["bitEqual"] == found["mlx_two_pass"]["bitEqual"]
    json.dumps(report, allow_nan=False)


def test_an_emulation_beyond_the_memory_bound_is_refused_before_allocating():
    hostile = Geometry(8, 1, 64, 195_312)
    (spec,) = resolve_all("paged_two_pass(partitionTokens=1)", PacketShape("float16", hostile))
    assert spec.run is None and spec.not_emulated.code == MEMORY_BOUND
    assert memory_estimate(hostile, 195_312) > EMULATION_MEMORY_BYTES
    assert "MiB" in spec.not_emulated.message
    (default,) = resolve_all("paged_two_pass", PacketShape("float16", hostile))
    assert default.run is not None  # the default partitions stay within the bound


def test_a_refused_emulation_reports_its_code_on_a_packet(tmp_path, monkeypatch):
    from explorer.analysis.emulation import launch

    monkeypatch.setattr(launch, "EMULATION_MEMORY_BYTES", 1)  # everything is beyond this bound
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=5, head_dim=64, output_dtype="bfloat16"))
    report = explorer.analyze(packet, emulate="default").report()
    assert {e["notEmulatedCode"] for e in report["emulations"]} == {MEMORY_BOUND}


# ---------------------------------------------------------------- bad ids


@pytest.mark.parametrize(
    "text,allowed",
    [
        ("mlx_two_pass(blocks=0)", "an integer from 1 to 1024"),
        ("mlx_sdpa(device=x)", "one of s, d, other, cpu"),
        ("mlx_sdpa(build=fork)", "one of upstream, fork-base, fork-0.32.2, fork-fp32-partials, fork-d512"),
        ("mlx_unfused(device=s)", "one of cpu, gpu"),
        ("mlx_run(device=tpu)", "one of default, cpu, gpu"),
        ("paged_two_pass(dispatcher=old)", "one of current, early"),
        ("paged_two_pass(simdgroups=3)", "one of 1, 2, 4, 8"),
        ("mlx_two_pass(fma=maybe)", "one of off, on"),
        ("mlx_two_pass(warp=1)", "its parameters: blocks, partialDType, exp, fma, simd"),
        (
            "flash(x=1)",
            "known: mlx_two_pass, mlx_single_pass, mlx_sdpa, mlx_unfused, mlx_run, paged_two_pass, single_pass",
        ),
    ],
)
def test_bad_ids_are_usage_errors_naming_the_id_and_the_allowed_values(tmp_path, text, allowed):
    missing = tmp_path / "no-such-packet"  # independent of packet content: nothing is read
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "analyze", str(missing), "--emulate", text], capture_output=True, text=True
    )
    assert done.returncode == 2 and not done.stdout
    assert allowed in done.stderr and (text in done.stderr or text.split("(")[0] in done.stderr)


def test_a_huge_id_gives_a_bounded_message(tmp_path, capsys):
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=3, head_dim=4))
    for text in ("mlx_two_pass(blocks=" + "9" * 100_000 + ")", "x" * 100_000, "mlx_two_pass(" + "a=1," * 25_000 + ")"):
        assert main(["analyze", str(packet), "--emulate", text]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and len(error) < 4 * MESSAGE_TEXT_CHARS + 200, len(error)


def test_work_chunks_never_change_a_bit(tmp_path, monkeypatch):
    """The sequential dot (D not a multiple of 32) runs in chunks of tokens and the online softmax reads the
    scores chunk by chunk: chunks of 7 tokens and of 5 steps give the bits of the default chunking."""
    from explorer.analysis.emulation import arithmetic, unfused

    packets = [
        write_packet(
            tmp_path / f"d{head_dim}",
            synthetic_spec(qh=4, kvh=2, tokens=100, head_dim=head_dim, output_dtype="float32", kv_dtype="float32"),
        )
        for head_dim in (3, 64)
    ]  # the paged kernel runs only for D 64, 128, 256, 512
    request = [
        "mlx_two_pass(blocks=32)",
        "paged_two_pass(partitionTokens=16)",
        "single_pass",
        "mlx_single_pass",
        "mlx_unfused",
        "mlx_unfused(device=gpu)",
    ]
    default = [explorer.analyze(packet, emulate=request) for packet in packets]
    explorer.analysis.analyze.clear_cache()
    monkeypatch.setattr(arithmetic, "SEQUENTIAL_CHUNK_ELEMENTS", 7 * 4)  # 7 tokens of 4 heads
    monkeypatch.setattr(arithmetic, "STEP_CHUNK_ELEMENTS", 1)
    monkeypatch.setattr(unfused, "WEIGHTED_CHUNK_ELEMENTS", 1)
    chunked = [explorer.analyze(packet, emulate=request) for packet in packets]
    for before, after in zip(default, chunked, strict=True):
        assert [e.bits.tobytes() for e in before.emulations if e.bits is not None] == [
            e.bits.tobytes() for e in after.emulations if e.bits is not None
        ]
    assert sum(e.bits is not None for result in default for e in result.emulations) == 2 * len(request) - 1
    explorer.analysis.analyze.clear_cache()
