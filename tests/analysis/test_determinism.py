"""The same report whatever BLAS does, in-process and in a triage worker.

The same report whatever BLAS does: `analyze --json` under 1 and 2 BLAS threads, in-process and in a triage
worker; the same attention pass on one thread or several.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from explorer.analysis import reference
from explorer.analysis.analyze import analyze, clear_cache
from explorer.analysis.reference import attend
from explorer.analysis.report import report_text
from explorer.catalog.workers import map_isolated
from explorer.foundations.parallel import run_on_threads
from explorer.samples.packets import qwen_full_spec, write_packet

REPO = Path(__file__).resolve().parents[2]
PACKETS = {  # the --full sample (QH16/KVH2/D256/T5585) and a float32-output packet of the same size
    "qwen36-bf16-full-t5585": {},
    "float32-output-t5585": {"query_dtype": "float32", "output_dtype": "float32"},
}
BLAS_THREADS = ("1", "2")


@pytest.fixture(scope="module")
def packets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("determinism")
    return {name: write_packet(root / name, qwen_full_spec(**dtypes)) for name, dtypes in PACKETS.items()}


def _cli_report(packet: Path, blas_threads: str, *options: str, disabled_cpu_features: str = "") -> str:
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OPENBLAS_NUM_THREADS": blas_threads,
        "OMP_NUM_THREADS": blas_threads,
        "MKL_NUM_THREADS": blas_threads,
        "NPY_DISABLE_CPU_FEATURES": disabled_cpu_features,
    }
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "analyze", str(packet), "--json", *options],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return done.stdout


# The default set (with mlx_run, the real library, whose CPU path is sequential) and the v3 emulations.
EMULATE = (
    "--emulate",
    "default",
    "--emulate",
    "mlx_unfused",
    "--emulate",
    "mlx_unfused(device=gpu)",
    "--emulate",
    "mlx_sdpa(build=upstream)",
    "--emulate",
    "paged_two_pass(dispatcher=early)",
)


def _older_cpus() -> list[str]:
    """NPY_DISABLE_CPU_FEATURES values under which numpy runs its loops as on older CPUs: each tail of the dispatch
    targets this CPU has turned off (on an AVX-512 machine: without AVX-512, then without AVX2 as well)."""
    from numpy._core import _multiarray_umath

    found = [name for name in _multiarray_umath.__cpu_dispatch__ if _multiarray_umath.__cpu_features__.get(name)]
    return [" ".join(found[start:]) for start in range(len(found))]


def printed_report(path: str) -> str:
    """The report as `explorer analyze --json` prints it, computed afresh (also run in a triage worker process)."""
    clear_cache()
    return report_text(analyze(path))


@pytest.mark.parametrize("name", PACKETS)
def test_reports_are_byte_identical_under_any_blas_threads_and_in_a_worker(packets, name):
    packet = packets[name]
    printed = {threads: _cli_report(packet, threads) for threads in BLAS_THREADS}
    ((_, in_worker),) = list(map_isolated(printed_report, [str(packet)], jobs=1))
    assert json.loads(printed["1"])["status"] == "analyzed"
    assert printed["1"] == printed["2"]
    assert in_worker == printed["1"]
    assert printed_report(str(packet)) == printed["1"]  # this process: the app's and the notebooks' way


@pytest.mark.parametrize("name", PACKETS)
def test_reports_are_byte_identical_whatever_loops_numpy_picks_for_the_cpu(packets, name):
    """numpy's exp and log round differently with AVX-512, AVX2 or neither; the explorer's reports (the emulations'
    numbers included) do not, so two machines with one numpy give the same bytes."""
    if not _older_cpus():
        pytest.skip("numpy has no CPU-specific loop to turn off on this machine")
    here = _cli_report(packets[name], "1", *EMULATE)
    for disabled in _older_cpus():
        assert _cli_report(packets[name], "1", *EMULATE, disabled_cpu_features=disabled) == here, disabled


def test_the_v3_emulations_give_the_same_bytes_on_one_thread_or_several(packets):
    packet = packets[next(iter(PACKETS))]
    assert _cli_report(packet, "1", *EMULATE) == _cli_report(packet, "2", *EMULATE)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("query_heads, kv_heads", [(16, 2), (8, 1), (6, 6), (3, 1)])
def test_attention_passes_give_the_same_bits_on_one_thread_or_several(monkeypatch, dtype, query_heads, kv_heads):
    rng = np.random.default_rng(query_heads * 10 + kv_heads)
    queries = rng.standard_normal((query_heads, 64)).astype(np.float32)
    keys, values = (rng.standard_normal((kv_heads, 3001, 64)).astype(np.float32) for _ in range(2))
    eligible = np.ones(query_heads, dtype=bool)
    eligible[query_heads // 2] = False  # an ineligible head in the middle of a batch
    passes = {}
    for threads in (1, 2, 3):
        monkeypatch.setattr(reference, "PASS_THREADS", threads)
        passes[threads] = attend(queries, keys, values, 0.125, eligible, dtype, keep_weights=True)
    for threads in (2, 3):
        for field in ("reference", "weights", "logits_finite", "max_logit", "sum_exp"):
            one, many = getattr(passes[1], field), getattr(passes[threads], field)
            assert one.tobytes() == many.tobytes(), (threads, field)
    assert np.isnan(passes[1].reference[query_heads // 2]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_heads_numbers_do_not_depend_on_the_heads_beside_it(monkeypatch, dtype):
    """Each dot product is one einsum call on one head's row: evaluated alone, in a batch of one or in a
    batch of all its group, and from keys not 16-byte aligned, a head gets the same bits."""
    rng = np.random.default_rng(7)
    queries = rng.standard_normal((8, 96)).astype(np.float32)
    keys, values = (rng.standard_normal((2, 2500, 96)).astype(np.float32) for _ in range(2))
    together = attend(queries, keys, values, 0.1, np.ones(8, dtype=bool), dtype, keep_weights=True)
    monkeypatch.setattr(reference, "ROW_ELEMENTS", 1)  # batches of one head
    for head in range(8):
        alone = np.zeros(8, dtype=bool)
        alone[head] = True
        single = attend(queries, keys, values, 0.1, alone, dtype, keep_weights=True)
        assert single.reference[head].tobytes() == together.reference[head].tobytes(), head
        assert single.weights[head].tobytes() == together.weights[head].tobytes(), head
    moved = np.empty(keys.size + 1, dtype=np.float32)[1:].reshape(keys.shape)  # 4 bytes past an allocation
    moved[...] = keys
    assert moved.ctypes.data % 16 != 0
    assert (
        attend(queries, moved, values, 0.1, np.ones(8, dtype=bool), dtype).reference.tobytes()
        == together.reference.tobytes()
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("head_dim", [1, 3, 64])
def test_token_blocks_give_the_same_sums_one_at_a_time_or_in_groups(monkeypatch, dtype, head_dim):
    rng = np.random.default_rng(head_dim)
    weights = rng.random((3, 5000)).astype(dtype)  # 4 whole blocks of 1,024 tokens and a shorter one
    values = rng.standard_normal((5000, head_dim)).astype(np.float32)
    grouped = reference._weighted_values(weights, values)
    monkeypatch.setattr(reference, "PRODUCT_ELEMENTS", 1)  # one block per group
    assert max(count for _, count, _ in reference._block_groups(5000, head_dim)) == 1
    one_at_a_time = reference._weighted_values(weights, values)
    assert grouped.tobytes() == one_at_a_time.tobytes()
    exact = [
        [math.fsum(float(w) * float(v) for w, v in zip(weights[h], values[:, d], strict=True)) for d in range(head_dim)]
        for h in range(3)
    ]
    np.testing.assert_allclose(grouped, exact, rtol=1e-4 if dtype is np.float32 else 1e-12)


def test_an_error_on_a_worker_thread_reaches_the_caller_after_every_thread_stopped():
    seen = []

    def evaluate(kv, rows):
        seen.append(kv)
        if kv == 1:
            raise MemoryError("no room for the logits")

    threads_before = threading.active_count()
    with pytest.raises(MemoryError, match="no room"):
        run_on_threads(lambda batch: evaluate(*batch), [(kv, np.arange(1)) for kv in range(4)], 2)
    assert 1 in seen and threading.active_count() == threads_before


def test_the_work_runs_on_the_calling_thread_when_no_thread_can_start(monkeypatch):
    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    done = run_on_threads(lambda item: (item, threading.get_ident()), list(range(5)), 4)
    assert [item for item, _ in done] == list(range(5)) and {ident for _, ident in done} == {threading.get_ident()}
