"""Emulations within their memory bound: mlx_unfused in chunks, mlx_run in its own process (40.9).

mlx_unfused is computed a few query rows at a time (the bits of the whole), its peak measured against its estimate;
mlx_run runs in a child, whose death is the entry's library_failed note naming the signal; a refusal's two numbers
differ.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import explorer
from explorer.analysis.emulation import PacketShape, launch, library, resolve_all
from explorer.analysis.emulation.launch import (
    EMULATION_MEMORY_BYTES,
    LIBRARY_FAILED,
    MEMORY_BOUND,
    Geometry,
    memory_refusal,
    unfused_estimate,
)
from explorer.analysis.emulation.run import native_output_bits
from explorer.samples.packets import synthetic_spec, write_packet

PROBE = Path(__file__).with_name("unfused_memory_probe.py")
REPO = Path(__file__).resolve().parents[2]
ONE_ROW = 1  # UNFUSED_CHUNK_ELEMENTS below any T: one query row per chunk
WHOLE = 1 << 40  # every row of a KV head in one chunk: the computation before chunks


def _bits(spec, emulation: str) -> np.ndarray:
    scale = float(np.uint32(spec.snapshot["records"][0]["scaleBits"]).view(np.float32))
    return native_output_bits(emulation, dict(spec.tensors), scale, spec.tensors["output"][0])


@pytest.mark.parametrize("emulation", ["mlx_unfused", "mlx_unfused(device=gpu)"])
@pytest.mark.parametrize(
    "query_dtype, kv_dtype", [("bfloat16", "bfloat16"), ("float16", "float16"), ("float32", "bfloat16")]
)
def test_mlx_unfused_in_chunks_gives_the_bits_of_one_pass(monkeypatch, emulation, query_dtype, kv_dtype):
    spec = synthetic_spec(
        qh=8, kvh=2, tokens=300, head_dim=64, query_dtype=query_dtype, kv_dtype=kv_dtype, output_dtype=kv_dtype
    )
    monkeypatch.setattr(launch, "UNFUSED_CHUNK_ELEMENTS", WHOLE)
    whole = _bits(spec, emulation)
    monkeypatch.setattr(launch, "UNFUSED_CHUNK_ELEMENTS", ONE_ROW)
    assert launch.unfused_rows(Geometry(8, 2, 64, 300)) == 1
    assert np.array_equal(_bits(spec, emulation), whole)


def test_mlx_unfused_on_the_issues_packet_stays_within_its_estimate():
    """Measured by the peak resident size (VmHWM) of a subprocess; before the chunks it grew by 5.3 GB."""
    completed = subprocess.run(
        [sys.executable, str(PROBE), "mlx_unfused(device=gpu)"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    measured = json.loads(completed.stdout)
    assert measured["computed"] and 0 < measured["grown"] <= measured["estimate"] <= EMULATION_MEMORY_BYTES


def test_mlx_unfused_beyond_its_bound_is_refused_before_allocating():
    long = Geometry(1, 1, 1, 4_000_000)  # one row of 4M scores: its chunk alone is beyond the bound
    (spec,) = resolve_all("mlx_unfused", PacketShape("bfloat16", long))
    assert unfused_estimate(long) > EMULATION_MEMORY_BYTES
    assert spec.run is None and spec.not_emulated.code == MEMORY_BOUND
    assert "the unfused composition's chunks would need about 611 MiB" in spec.not_emulated.message


def test_a_refusal_never_shows_the_bound_as_its_estimate():
    refusal = memory_refusal(Geometry(1, 1, 1, 1), 1, ("the library's run", EMULATION_MEMORY_BYTES + 1))
    assert "would need about 513 MiB, above the emulation bound of 512 MiB" in refusal.message
    assert memory_refusal(Geometry(1, 1, 1, 1), 1, ("the library's run", EMULATION_MEMORY_BYTES)) is None


def crash_by_segfault() -> list[str]:
    """The child's command replaced: it dies by SIGSEGV, as MLX did under an address-space limit."""
    return [sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(signal.SIGSEGV)})"]


def test_a_library_that_dies_by_a_signal_is_an_entrys_library_failed_note(tmp_path, monkeypatch):
    if not library.available():
        pytest.skip("MLX is not installed here")
    monkeypatch.setattr(library, "child_command", crash_by_segfault)
    packet = write_packet(tmp_path / "p", synthetic_spec(qh=4, kvh=2, tokens=20, head_dim=64, output_dtype="bfloat16"))
    analysis = explorer.analyze(packet, emulate=["mlx_run(device=cpu)", "mlx_unfused"])
    entries = {e["id"]: e for e in analysis.report()["emulations"]}
    failed = entries["mlx_run(device=cpu)"]
    assert failed["notEmulatedCode"] == LIBRARY_FAILED and failed["bitEqual"] is None
    assert "MLX died in its process on this packet (cpu) by signal SIGSEGV" in failed["notEmulated"]
    assert entries["mlx_unfused"]["bitEqual"] is not None  # the explorer went on
