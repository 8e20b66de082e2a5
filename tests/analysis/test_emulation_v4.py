"""Emulation v4: the builds' launch tables, `_gqa` with float32 partials, which build wrote a packet."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import explorer
from explorer.analysis.emulation import (
    EmulationIdError,
    EmulationInputs,
    PacketShape,
    emulate,
    expand,
    native_output_bits,
    resolve_all,
)
from explorer.analysis.emulation.attribution import report_sentence
from explorer.analysis.emulation.builds import BUILD_TABLE, BUILDS
from explorer.analysis.emulation.launch import Geometry, Launch, mlx_launch
from explorer.analysis.findings import packet_findings
from explorer.cli import main
from explorer.packet.dtypes import promote, round_bits
from explorer.samples.packets import synthetic_spec, with_tensor, write_packet

from emulation_scalar import SCALAR_BUILDS, emulate_head
from emulation_scalar import mlx_launch as scalar_launch

PROMOTED_BUILDS = {"upstream", "fork-base", "fork-0.32.2"}  # two-pass partials in the promoted dtype
FLOAT32_BUILDS = {"fork-fp32-partials", "fork-d512"}

# ---------------------------------------------------------------- each build's launch table

DEVICES = ("s", "d", "other")
HEAD_DIMS = (64, 80, 96, 128, 192, 256, 512)
GROUPS = ((8, 8), (8, 2), (10, 2), (12, 2), (16, 2), (8, 1), (66, 2))  # (QH, KVH): n 1, 4, 5, 6, 8, 8, 33
TOKENS = (1, 1023, 1024, 1025, 4095, 4096, 8191, 8192, 8193, 16383, 16384, 32768, 32769, 65535, 65536, 65537)


def _expected(device: str, qh: int, kvh: int, head_dim: int, tokens: int, build: str) -> Launch:
    """The scalar transcription's launch, as a Launch (None there: MLX's unfused composition on the GPU)."""
    found = scalar_launch(device, qh, kvh, head_dim, tokens, build)
    if found is None:
        return Launch("mlx_unfused", device="gpu")
    kernel, blocks, gqa = found
    return Launch(kernel, blocks, gqa_heads_per_simdgroup=gqa)


@pytest.mark.parametrize("build", BUILDS)
def test_each_builds_launch_table_on_a_grid_around_every_threshold(build):
    for device, head_dim, (qh, kvh), tokens in itertools.product(DEVICES, HEAD_DIMS, GROUPS, TOKENS):
        geometry = Geometry(qh, kvh, head_dim, tokens)
        assert mlx_launch(device, geometry, build) == _expected(device, qh, kvh, head_dim, tokens, build), (
            device,
            geometry,
        )


@pytest.mark.parametrize(
    "geometry,launched",
    [  # the rows of emulation-v4 §1 where the builds part, written from its table
        (Geometry(8, 1, 64, 8192), {"upstream", "fork-0.32.2", "fork-fp32-partials", "fork-d512"}),  # _gqa
        (Geometry(16, 2, 128, 9000), {"upstream", "fork-0.32.2", "fork-fp32-partials", "fork-d512"}),
        (Geometry(8, 1, 64, 8191), set()),  # below 8,192: no _gqa anywhere
        (Geometry(8, 1, 256, 9000), set()),  # D 256: no _gqa
        (Geometry(4, 1, 64, 9000), set()),  # QH = 4 KVH: no _gqa
    ],
)
def test_the_gqa_variant_is_launched_by_every_build_since_the_v0322_sync(geometry, launched):
    for build, device in itertools.product(BUILDS, DEVICES):
        has = mlx_launch(device, geometry, build).gqa_heads_per_simdgroup is not None
        assert has == (build in launched), (build, device)
        assert BUILD_TABLE[build].gqa == SCALAR_BUILDS[build][0]


@pytest.mark.parametrize("tokens", [1, 100, 1023, 1024, 5000, 70000])
def test_only_fork_d512_runs_d512_two_pass_at_every_t(tokens):
    for device in DEVICES:
        geometry = Geometry(4, 1, 512, tokens)
        for build in BUILDS:
            launched = mlx_launch(device, geometry, build)
            if build == "fork-d512":
                assert launched.kernel == "mlx_two_pass" and launched.gqa_heads_per_simdgroup is None
                assert launched.blocks == _expected(device, 4, 1, 256, max(tokens, 4096), "fork-d512").blocks
            else:
                assert launched == Launch("mlx_unfused", device="gpu")


@pytest.mark.parametrize("blocks", [1, 31, 32, 33, 48, 100, 1000, 1024])
def test_mlx_sdpa_blocks_is_read_as_each_build_reads_it(blocks):
    rounded = -(-blocks // 32) * 32
    geometry = Geometry(16, 16, 128, 4096)
    for build in BUILDS:
        expected = blocks if build == "fork-base" else rounded
        assert mlx_launch("s", geometry, build, blocks) == Launch("mlx_two_pass", expected)
        (spec,) = resolve_all(f"mlx_sdpa(blocks={blocks},build={build})", PacketShape("bfloat16", geometry))
        assert spec.run.blocks == expected and spec.resolved["build"] == build


def test_each_builds_partials_and_the_default_build():
    shape = PacketShape("bfloat16", Geometry(16, 2, 256, 5585))
    for build in BUILDS:
        (spec,) = resolve_all(f"mlx_sdpa(build={build})", shape)
        assert spec.run.partial_dtype == ("float32" if build in FLOAT32_BUILDS else "bfloat16")
        assert BUILD_TABLE[build].source in " ".join(spec.assumptions())
    (default,) = resolve_all("mlx_sdpa", shape)
    assert default.parameters["build"] == "fork-fp32-partials" and default.run.partial_dtype == "float32"
    (explicit,) = resolve_all("mlx_sdpa(build=fork-fp32-partials,partialDType=float32)", shape)
    assert explicit.id == "mlx_sdpa"  # the only value is its default: it disappears from the id


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "text,named",
    [
        ("mlx_sdpa(build=engine)", "upstream, fork-base, fork-0.32.2, fork-fp32-partials, fork-d512"),
        ("mlx_sdpa(partialDType=bfloat16)", "fork-fp32-partials, fork-d512 accept only partialDType=float32"),
        ("mlx_sdpa(build=fork-d512,partialDType=float16)", "accept only partialDType=float32"),
    ],
)
def test_an_unknown_build_or_a_partial_dtype_the_build_has_not_is_a_usage_error(text, named, tmp_path, capsys):
    with pytest.raises(EmulationIdError, match=named.replace(".", r"\.")):
        expand([text])
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=8, head_dim=64, backend="contiguous"))
    assert main(["analyze", str(packet), "--emulate", text]) == 2
    assert named in capsys.readouterr().err


def test_promoted_builds_keep_their_partial_dtype_choice():
    shape = PacketShape("bfloat16", Geometry(16, 2, 256, 5585))
    for build in sorted(PROMOTED_BUILDS):
        (spec,) = resolve_all(f"mlx_sdpa(build={build},partialDType=float32)", shape)
        assert spec.run.partial_dtype == "float32" and "partialDType=float32" in spec.id


# ---------------------------------------------------------------- `_gqa` with float32 partials, bit for bit


def test_the_gqa_variant_with_float32_partials_matches_the_scalar_code():
    rng = np.random.default_rng(11)
    head_dim, tokens = 64, 8192
    queries = promote(round_bits(rng.normal(0, 2.0, (8, head_dim)).astype(np.float32), "bfloat16"), "bfloat16")
    keys, values = (
        promote(round_bits(rng.normal(0, 1.0, (1, tokens, head_dim)).astype(np.float32), "bfloat16"), "bfloat16")
        for _ in range(2)
    )
    inputs = EmulationInputs(queries, keys, values, np.float32(0.125), "bfloat16", "bfloat16", "bfloat16")
    ids = ["mlx_sdpa(device=other,build=fork-fp32-partials)", "mlx_sdpa(device=other,build=fork-0.32.2)"]
    specs = resolve_all(ids, inputs.shape)
    assert [s.run.gqa_heads_per_simdgroup for s in specs] == [8, 8]
    assert [s.run.partial_dtype for s in specs] == ["float32", "bfloat16"]
    emulated = emulate(inputs, specs, np.ones(8, dtype=bool))
    head = 5
    expected = emulate_head(
        "mlx_sdpa",
        dict(specs[0].parameters),
        queries[head],
        keys[0],
        values[0],
        inputs.scale,
        ("bfloat16", "bfloat16", "bfloat16"),
        (8, 1),
    )
    np.testing.assert_array_equal(emulated[0].values[head].view(np.uint32), expected.view(np.uint32))
    assert np.count_nonzero(emulated[0].bits != emulated[1].bits) > 0  # float32 partials change bits here


# ---------------------------------------------------------------- which build wrote a packet


def _written_by(directory, emulation_id: str, *, qh: int, kvh: int, head_dim: int, tokens: int, seed: int = 0):
    """A contiguous all-bfloat16 packet whose output is `emulation_id`'s arithmetic on its inputs."""
    spec = synthetic_spec(
        qh=qh,
        kvh=kvh,
        tokens=tokens,
        head_dim=head_dim,
        query_dtype="bfloat16",
        output_dtype="bfloat16",
        backend="contiguous",
        seed=seed,
    )
    scale = float(np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32))
    bits = native_output_bits(emulation_id, spec.tensors, scale, "bfloat16")
    return write_packet(directory, with_tensor(spec, "output", bits))


def _builds(packet):
    analysis = explorer.analyze(packet, emulate="builds")
    report = analysis.report()
    json.dumps(report, allow_nan=False)
    sentence = packet_findings(analysis)[0].text
    assert report_sentence(report) == sentence  # the CLI's text reads it from the report alone
    return report["builds"], sentence


ATTRIBUTIONS = [  # (writer, geometry, the builds sharing the writer's arithmetic there, on device s)
    # bfloat16 two-pass partials (T >= 1,024 on s): every promoted-partials build, no float32 one
    ("mlx_sdpa(device=s,build=fork-0.32.2)", (2, 1, 64, 1100), PROMOTED_BUILDS),
    ("mlx_sdpa(device=s,build=fork-fp32-partials)", (2, 1, 64, 1100), FLOAT32_BUILDS),
    # GQA 8, D 64, T >= 8,192: _gqa with bfloat16 partials, plain two-pass, _gqa with float32 partials
    ("mlx_sdpa(device=s,build=fork-0.32.2)", (8, 1, 64, 8192), {"upstream", "fork-0.32.2"}),
    ("mlx_sdpa(device=s,build=fork-base)", (8, 1, 64, 8192), {"fork-base"}),
    ("mlx_sdpa(device=s,build=fork-fp32-partials)", (8, 1, 64, 8192), FLOAT32_BUILDS),
    # D 512: two-pass only in fork-d512, MLX's unfused composition on the GPU in every other build
    ("mlx_sdpa(device=s,build=fork-d512)", (2, 1, 512, 40), {"fork-d512"}),
    ("mlx_sdpa(device=s,build=upstream)", (2, 1, 512, 40), set(BUILDS) - {"fork-d512"}),
]


@pytest.mark.parametrize("writer,geometry,sharing", ATTRIBUTIONS)
def test_a_packet_is_attributed_to_exactly_the_builds_sharing_its_arithmetic(tmp_path, writer, geometry, sharing):
    qh, kvh, head_dim, tokens = geometry
    packet = _written_by(tmp_path / "p", writer, qh=qh, kvh=kvh, head_dim=head_dim, tokens=tokens)
    block, sentence = _builds(packet)
    on_s = {entry["build"] for entry in block["reproducing"] if "s" in entry["devices"]}
    assert on_s == sharing
    assert block["closest"] is None
    compared = qh * head_dim
    others = [row for row in block["table"] if row["device"] == "s" and row["build"] not in sharing]
    assert all(row["bitEqual"] < compared for row in others)  # the geometry tells them apart
    assert {row["build"] for row in block["table"]} == set(BUILDS) and len(block["table"]) == 15
    assert sentence.startswith("Reproduced bit for bit by the launch of ")
    reproducing = {entry["build"] for entry in block["reproducing"]}
    for build in set(BUILDS) - reproducing:  # each build reproducing on no GPU class is named, with its count
        assert f"{build} (" in sentence.split("; not by ", 1)[1]
    for group in block["indistinguishable"]:
        assert group == sorted(group) and len(group) > 1


def test_builds_that_launch_alike_run_once_and_are_listed_together(tmp_path):
    packet = _written_by(tmp_path / "p", "mlx_sdpa(device=s,build=fork-0.32.2)", qh=2, kvh=1, head_dim=64, tokens=1100)
    analysis = explorer.analyze(packet, emulate="builds")
    sdpa = [i for i in analysis.emulations_requested if i.startswith("mlx_sdpa")]
    # s (64 blocks) and d (128 blocks) x (promoted, float32) partials, and other's single pass (no partials)
    assert len(sdpa) == 5
    block = analysis.report()["builds"]
    assert block["indistinguishable"] == [["fork-0.32.2", "fork-base", "upstream"], ["fork-d512", "fork-fp32-partials"]]
    assert block["table"][0] == {
        "build": "upstream",
        "device": "s",
        "kernel": "mlx_two_pass",
        "blocks": 64,
        "partialDType": "bfloat16",
        "bitEqual": 128,
        "bitEqualDecisive": block["table"][0]["bitEqualDecisive"],
    }


def test_a_packet_no_build_reproduces_gets_no_guess_but_the_closest(tmp_path):
    spec_packet = _written_by(
        tmp_path / "w", "mlx_sdpa(device=s,build=fork-0.32.2)", qh=2, kvh=1, head_dim=64, tokens=1100
    )
    analysis = explorer.analyze(spec_packet, emulate="builds")
    output = analysis.admission.tensors["output"].bits.copy()
    output[0, 1, 0, 7] ^= 0x0001  # one element no arithmetic wrote
    spec = synthetic_spec(
        qh=2, kvh=1, tokens=1100, head_dim=64, query_dtype="bfloat16", output_dtype="bfloat16", backend="contiguous"
    )
    packet = write_packet(tmp_path / "p", with_tensor(spec, "output", output))
    block, sentence = _builds(packet)
    assert block["reproducing"] == []
    assert block["closest"]["bitEqual"] == 127 and block["closest"]["build"] in PROMOTED_BUILDS
    assert "s" in block["closest"]["devices"]
    assert sentence.startswith("No build's launch reproduces the output bit for bit (none is attributed)")


def test_a_paged_packet_has_no_builds_block_and_names_the_paged_dispatcher(tmp_path):
    spec = synthetic_spec(qh=2, kvh=1, tokens=40, head_dim=64, query_dtype="bfloat16", output_dtype="bfloat16")
    report_analysis = explorer.analyze(write_packet(tmp_path / "p", spec), emulate="builds")
    report = report_analysis.report()
    assert report["builds"] is None and "paged" in report["buildsReason"]
    sentence = packet_findings(report_analysis)[0].text
    assert report_sentence(report) == sentence
    assert "paged kernel" in sentence and "current dispatcher" in sentence and "early dispatcher" in sentence


def test_without_the_builds_set_there_is_no_builds_block(tmp_path):
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=2, kvh=1, tokens=8, head_dim=64, backend="contiguous"))
    analysis = explorer.analyze(packet, emulate="default")
    report = analysis.report()
    assert report["builds"] is None and report["buildsReason"] is None
    assert all(f.key != "builds" for f in packet_findings(analysis))
    swept = explorer.analyze(packet, emulate="sweep").report()
    assert swept["builds"] is not None  # the sweep includes every build


def test_a_block_count_that_is_not_a_multiple_of_32_tells_fork_base_apart(tmp_path):
    writer = "mlx_sdpa(device=s,build=fork-base,blocks=48)"  # fork-base merges 32 of 48 blocks; the others read 64
    packet = _written_by(tmp_path / "p", writer, qh=2, kvh=1, head_dim=64, tokens=1100)
    ids = [f"mlx_sdpa(build={build},blocks=48)" for build in BUILDS]
    found = {e.parameters["build"]: e.bit_equal for e in explorer.analyze(packet, emulate=ids).emulations}
    assert found["fork-base"] == 128
    assert all(count < 128 for build, count in found.items() if build != "fork-base")


def test_the_sentence_leads_the_cli_text_and_the_emulations_view(tmp_path, capsys):
    from explorer.analysis.analyze import emulations_of
    from explorer.views.packet.emulations import EMULATION_SETS, bit_equal_tables

    packet = _written_by(tmp_path / "p", "mlx_sdpa(device=d,build=fork-0.32.2)", qh=2, kvh=1, head_dim=64, tokens=1100)
    analysis = explorer.analyze(packet)
    sentence = packet_findings(explorer.analyze(packet, emulate="builds"))[0].text
    assert main(["analyze", str(packet), "--emulate", "builds"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"Builds: {sentence}"  # right under the status
    assert "builds" in EMULATION_SETS
    html = bit_equal_tables(analysis, *emulations_of(analysis, "builds"))
    assert html.startswith('<p class="emulation-builds">') and "fork-0.32.2 on d-class GPUs" in html
