"""Emulation v3: real MLX outputs as ground truth, each build's launch, the paged kernel as run.

Real MLX outputs as ground truth (mlx_unfused, mlx_sdpa(device=cpu) and mlx_run reproduce them bit for bit), each
build's launch, the paged kernel as the engine runs it, and mlx_run's entries without numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

import explorer
from explorer.analysis.emulation import EmulationInputs, PacketShape, emulate, library, resolve_all
from explorer.analysis.emulation.launch import (
    LIBRARY_FAILED,
    MEMORY_BOUND,
    NO_LIBRARY,
    PAGED_HEAD_DIM,
    PAGED_OUTPUT_DTYPE,
    Geometry,
    Launch,
    mlx_launch,
    paged_simdgroups,
)
from explorer.packet.dtypes import promote, round_bits
from explorer.samples.packets import synthetic_spec, with_tensor, write_packet

from emulation_scalar import emulate_head

mx = pytest.importorskip("mlx.core")  # the test extra installs it: CI always has a real kernel

MLX_IDS = ["mlx_unfused", "mlx_sdpa(device=cpu)", "mlx_run(device=cpu)"]
KEY_BIT_FLIP = 0x0040  # flips one mantissa bit of a bfloat16 / float16 element


def _real_output(spec) -> tuple[str, np.ndarray]:
    """(dtype, bits [1, QH, 1, D]) of the real mx.fast.scaled_dot_product_attention on the CPU on `spec`'s inputs."""
    arrays = {}
    for name in ("queries", "storedKeys", "storedValues"):
        dtype, bits = spec.tensors[name]
        arrays[name] = mx.array(promote(bits, dtype)).astype(getattr(mx, dtype))
    scale = float(np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32))
    with mx.stream(mx.cpu):
        out = mx.fast.scaled_dot_product_attention(
            arrays["queries"], arrays["storedKeys"], arrays["storedValues"], scale=scale
        )
        values = np.array(out.astype(mx.float32))
    dtype = str(out.dtype).rsplit(".", 1)[-1]
    return dtype, round_bits(values, dtype)


def _real_packet(directory, *, query_dtype, kv_dtype, qh, kvh, head_dim, tokens, seed):
    """A packet whose output is the real MLX call on the CPU (its output dtype is MLX's promoted dtype)."""
    promoted = query_dtype if query_dtype == kv_dtype else "float32"
    spec = synthetic_spec(
        qh=qh,
        kvh=kvh,
        tokens=tokens,
        head_dim=head_dim,
        query_dtype=query_dtype,
        kv_dtype=kv_dtype,
        output_dtype=promoted,
        seed=seed,
        backend="contiguous",
    )
    dtype, bits = _real_output(spec)
    assert dtype == promoted
    return write_packet(directory, with_tensor(spec, "output", bits))


REAL_CASES = [  # (query dtype, KV dtype, QH, KVH, D, T): every output dtype, GQA 1 and > 1, T 1 and thousands
    ("bfloat16", "bfloat16", 8, 1, 64, 1),
    ("bfloat16", "bfloat16", 16, 2, 128, 3000),
    ("float16", "float16", 4, 4, 80, 500),  # D outside MLX's vector set
    ("float16", "float16", 8, 2, 256, 1),
    ("float32", "float32", 8, 2, 256, 2000),
    ("float32", "float32", 4, 4, 128, 4500),
    ("float32", "bfloat16", 16, 2, 192, 700),  # float32 queries with bfloat16 K/V; D 192
]


@pytest.mark.parametrize("query_dtype,kv_dtype,qh,kvh,head_dim,tokens", REAL_CASES)
def test_real_mlx_outputs_are_reproduced_bit_for_bit(tmp_path, query_dtype, kv_dtype, qh, kvh, head_dim, tokens):
    packet = _real_packet(
        tmp_path / "real",
        query_dtype=query_dtype,
        kv_dtype=kv_dtype,
        qh=qh,
        kvh=kvh,
        head_dim=head_dim,
        tokens=tokens,
        seed=tokens + head_dim,
    )
    result = explorer.analyze(packet, emulate=[*MLX_IDS, "mlx_two_pass", "single_pass"])
    found = {e.id: e for e in result.emulations}
    for emulation_id in MLX_IDS:
        entry = found[emulation_id]
        assert entry.bit_equal == entry.compared == qh * head_dim and entry.ulp.max == 0, emulation_id
    assert found["mlx_sdpa(device=cpu)"].resolved["kernel"] == "mlx_unfused"
    assert dict(found["mlx_run(device=cpu)"].library) == {"name": "mlx", "version": mx.__version__, "device": "cpu"}
    if tokens > 1 and query_dtype == "float32":  # not vacuous: a kernel arithmetic does not reproduce it all
        assert found["mlx_two_pass"].bit_equal < found["mlx_two_pass"].compared
    json.dumps(result.report(), allow_nan=False)


def test_mlx_exp_is_mlx_cpus_own_exp():
    from explorer.analysis.emulation.unfused import mlx_exp

    x = np.concatenate([np.linspace(-90, 0, 200_001, dtype=np.float32), np.float32([0.5, 1.0, 88.5, -88.5, np.inf])])
    with mx.stream(mx.cpu):
        real = np.array(mx.exp(mx.array(x)))
    np.testing.assert_array_equal(mlx_exp(x).view(np.uint32), real.view(np.uint32))


# ---------------------------------------------------------------- the paged kernel as the engine runs it


def _mismatched(tmp_path):
    """(packet, consistent packet): stored row T-1 differs from the incoming row; the output is what the kernel
    writes from the incoming row, i.e. the paged emulation of a packet whose stored row equals the incoming one."""
    spec = synthetic_spec(
        qh=8,
        kvh=2,
        tokens=600,
        head_dim=64,
        query_dtype="bfloat16",
        kv_dtype="bfloat16",
        output_dtype="bfloat16",
        seed=7,
    )
    incoming = {name: spec.tensors[name][1] ^ np.uint16(KEY_BIT_FLIP) for name in ("incomingKeys", "incomingValues")}
    consistent = spec
    for stored, name in (("storedKeys", "incomingKeys"), ("storedValues", "incomingValues")):
        rows = spec.tensors[stored][1].copy()
        rows[:, :, -1:, :] = incoming[name]
        consistent = with_tensor(with_tensor(consistent, stored, rows), name, incoming[name])
    scale = np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32)
    bits = explorer.analysis.emulation.native_output_bits("paged_two_pass", consistent.tensors, scale, "bfloat16")
    mismatched = spec
    for name in ("incomingKeys", "incomingValues"):
        mismatched = with_tensor(mismatched, name, incoming[name])
    return (
        write_packet(tmp_path / "mismatched", with_tensor(mismatched, "output", bits)),
        write_packet(tmp_path / "consistent", with_tensor(consistent, "output", bits)),
    )


def test_the_paged_kernel_reads_token_t_minus_1_from_the_incoming_row(tmp_path):
    packet, consistent = _mismatched(tmp_path)
    result = explorer.analyze(packet, emulate=["paged_two_pass", "mlx_run(device=cpu)", "mlx_unfused"])
    found = {e.id: e for e in result.emulations}
    paged = found["paged_two_pass"]
    assert "last_row_mismatch" in {reason.code for reason in result.reasons}
    assert paged.bit_equal == paged.compared  # the output the kernel writes, though the stored row differs
    assert any("differs bitwise from the stored row" in sentence for sentence in paged.assumptions)
    # A real run reads the cache after the write too: it equals the run on the consistent packet.
    same = {e.id: e for e in explorer.analyze(consistent, emulate=["mlx_run(device=cpu)", "mlx_unfused"]).emulations}
    assert np.array_equal(found["mlx_run(device=cpu)"].bits, same["mlx_run(device=cpu)"].bits)
    assert np.array_equal(same["mlx_run(device=cpu)"].bits, same["mlx_unfused"].bits)
    # mlx_unfused reads the stored rows (as every other MLX emulation): on this packet it differs from the run.
    assert not np.array_equal(found["mlx_unfused"].bits, found["mlx_run(device=cpu)"].bits)
    reread = {e.id: e for e in explorer.analyze(consistent, emulate="paged_two_pass").emulations}
    assert any("bitwise equal to the stored row" in s for s in reread["paged_two_pass"].assumptions)


@pytest.mark.parametrize(
    "head_dim,kv_dtype,output_dtype,code",
    [
        (96, "bfloat16", "bfloat16", PAGED_HEAD_DIM),
        (80, "float16", "float16", PAGED_HEAD_DIM),
        (64, "bfloat16", "float32", PAGED_OUTPUT_DTYPE),
        (128, "float16", "bfloat16", PAGED_OUTPUT_DTYPE),
        (512, "bfloat16", "bfloat16", None),
        (64, "float32", "float32", None),
    ],
)
def test_the_paged_kernel_has_no_numbers_where_it_cannot_have_run(head_dim, kv_dtype, output_dtype, code):
    (spec,) = resolve_all("paged_two_pass", PacketShape(output_dtype, Geometry(8, 2, head_dim, 100), kv_dtype))
    assert (spec.not_emulated.code if spec.not_emulated else None) == code
    if code == PAGED_OUTPUT_DTYPE:
        assert f"cannot have written a {output_dtype} output" in spec.not_emulated.message
    if code == PAGED_HEAD_DIM:
        assert "refuses head dim" in spec.not_emulated.message


@pytest.mark.parametrize(
    "geometry,current,early",
    [
        (Geometry(16, 2, 256, 5585), 4, 2),  # the Qwen3.6 geometry: the earlier dispatcher ran 2 simdgroups
        (Geometry(8, 8, 128, 10), 8, 8),  # no GQA: both take hpt 1
        (Geometry(64, 2, 512, 10), 4, 1),  # the whole GQA factor (32) fits no simdgroup: the early rule falls back to 1
    ],
)
def test_each_dispatcher_chooses_its_simdgroups(geometry, current, early):
    assert paged_simdgroups(geometry, "current") == current and paged_simdgroups(geometry, "early") == early
    specs = resolve_all(["paged_two_pass", "paged_two_pass(dispatcher=early)"], PacketShape("bfloat16", geometry))
    assert [spec.run.simdgroups for spec in specs] == [current, early]
    assert specs[1].id == "paged_two_pass(dispatcher=early)"


# ---------------------------------------------------------------- each build's launch


BUILD_TABLE = [  # (device, QH, KVH, D, T) -> (upstream, fork-base; fork-d512 for D 512)
    ("s", 16, 2, 128, 9000, Launch("mlx_two_pass", 256, gqa_heads_per_simdgroup=4), Launch("mlx_two_pass", 256)),
    ("d", 8, 1, 64, 20000, Launch("mlx_two_pass", 512, gqa_heads_per_simdgroup=8), Launch("mlx_two_pass", 512)),
    ("other", 16, 2, 64, 8192, Launch("mlx_two_pass", 64, gqa_heads_per_simdgroup=8), Launch("mlx_two_pass", 64)),
    ("s", 16, 2, 512, 100, Launch("mlx_unfused", device="gpu"), Launch("mlx_two_pass", 64)),
    ("other", 4, 4, 512, 1, Launch("mlx_unfused", device="gpu"), Launch("mlx_two_pass", 32)),
    ("s", 16, 2, 192, 100, Launch("mlx_unfused", device="gpu"), Launch("mlx_unfused", device="gpu")),
    ("s", 16, 2, 96, 100, Launch("mlx_single_pass"), Launch("mlx_single_pass")),
    ("cpu", 16, 2, 128, 9000, Launch("mlx_unfused", device="cpu"), Launch("mlx_unfused", device="cpu")),
]


@pytest.mark.parametrize("device,qh,kvh,head_dim,tokens,upstream,engine", BUILD_TABLE)
def test_each_builds_launch_table(device, qh, kvh, head_dim, tokens, upstream, engine):
    geometry = Geometry(qh, kvh, head_dim, tokens)
    assert mlx_launch(device, geometry, "upstream") == upstream
    engine_build = "fork-d512" if head_dim == 512 else "fork-base"
    assert mlx_launch(device, geometry, engine_build) == engine
    for build, expected in (("upstream", upstream), (engine_build, engine)):
        (spec,) = resolve_all(f"mlx_sdpa(device={device},build={build})", PacketShape("bfloat16", geometry))
        assert spec.resolved["build"] == build and spec.resolved["kernel"] == expected.kernel
        assert spec.run.kernel == expected.kernel and spec.not_emulated is None


def test_the_gqa_variant_matches_the_scalar_code():
    rng = np.random.default_rng(5)
    head_dim, tokens = 64, 8192
    queries = promote(round_bits(rng.normal(0, 2.0, (8, head_dim)).astype(np.float32), "bfloat16"), "bfloat16")
    keys, values = (
        promote(round_bits(rng.normal(0, 1.0, (1, tokens, head_dim)).astype(np.float32), "bfloat16"), "bfloat16")
        for _ in range(2)
    )
    inputs = EmulationInputs(queries, keys, values, np.float32(0.125), "bfloat16", "bfloat16", "float32")
    specs = resolve_all(
        ["mlx_sdpa(build=upstream,device=other)", "mlx_sdpa(device=other,build=fork-base)"], inputs.shape
    )
    emulated = emulate(inputs, specs, np.ones(8, dtype=bool))
    assert specs[0].run.gqa_heads_per_simdgroup == 8 and specs[1].run.gqa_heads_per_simdgroup is None
    head = 3
    for result in emulated:
        expected = emulate_head(
            result.spec.kernel,
            dict(result.spec.parameters),
            queries[head],
            keys[0],
            values[0],
            inputs.scale,
            ("bfloat16", "bfloat16", "float32"),
            (8, 1),
        )
        np.testing.assert_array_equal(result.values[head].view(np.uint32), expected.view(np.uint32), result.spec.id)
    assert np.count_nonzero(emulated[0].bits != emulated[1].bits) > 0  # the variant's arithmetic is its own


def test_an_unrounded_block_count_merges_as_pass_2_reads_it():
    rng = np.random.default_rng(9)
    queries = rng.normal(0, 2.0, (4, 64)).astype(np.float32)
    keys, values = (rng.normal(0, 1.0, (1, 300, 64)).astype(np.float32) for _ in range(2))
    inputs = EmulationInputs(queries, keys, values, np.float32(0.125), "float32", "float32", "float32")
    ids = ["mlx_two_pass(blocks=48)", "mlx_two_pass(blocks=16)"]
    emulated = emulate(inputs, resolve_all(ids, inputs.shape), np.ones(4, dtype=bool))
    for result in emulated:
        expected = emulate_head(
            result.spec.kernel,
            dict(result.spec.parameters),
            queries[1],
            keys[0],
            values[0],
            inputs.scale,
            ("float32",) * 3,
            (4, 1),
        )
        np.testing.assert_array_equal(result.values[1].view(np.uint32), expected.view(np.uint32), result.spec.id)
    assert not emulated[1].values.any()  # fewer than 32 blocks: pass 2 merges none (its S == 0 case)


# ---------------------------------------------------------------- mlx_run without numbers


def test_without_mlx_the_entry_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(library, "available", lambda: False)
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=4, kvh=2, tokens=20, head_dim=64, output_dtype="bfloat16"))
    result = explorer.analyze(packet, emulate="default")
    assert "mlx_run" not in result.emulations_requested  # default has it only where MLX is importable
    report = explorer.analyze(packet, emulate=["mlx_run", "single_pass"]).report()
    entry = next(e for e in report["emulations"] if e["id"] == "mlx_run")
    assert entry["notEmulatedCode"] == NO_LIBRARY and "pip install -e '.[mlx]'" in entry["notEmulated"]
    assert entry["bitEqual"] is None and entry["library"] is None and report["emulations"][-1] is entry
    json.dumps(report, allow_nan=False)


def test_mlx_raising_is_said_in_the_entry_and_the_report_stands(tmp_path):
    if mx.metal.is_available():
        pytest.skip("this machine has MLX's GPU backend: device=gpu runs")
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=4, kvh=2, tokens=20, head_dim=64, output_dtype="bfloat16"))
    report = explorer.analyze(packet, emulate=["mlx_run(device=gpu)", "mlx_run(device=cpu)"]).report()
    entries = {e["id"]: e for e in report["emulations"]}
    failed = entries["mlx_run(device=gpu)"]
    assert failed["notEmulatedCode"] == LIBRARY_FAILED and "MLX raised" in failed["notEmulated"]
    assert entries["mlx_run(device=cpu)"]["bitEqual"] is not None


def test_a_real_run_obeys_the_memory_bound_before_allocating(tmp_path, monkeypatch):
    from explorer.analysis.emulation import launch

    def refused(*_args, **_kwargs):
        raise AssertionError("the library must not be called beyond the memory bound")

    monkeypatch.setattr(launch, "EMULATION_MEMORY_BYTES", 1024)
    monkeypatch.setattr(library, "run", refused)
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=4, kvh=2, tokens=200, head_dim=64))
    (entry,) = explorer.analyze(packet, emulate="mlx_run").emulations
    assert entry.not_emulated_code == MEMORY_BOUND and "library's run" in entry.not_emulated
