"""The same report whatever BLAS does: `analyze --json` under 1 and 2 BLAS threads, in-process and in a triage worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.analysis.analyze import analyze, clear_cache
from explorer.analysis.report import report_text
from explorer.catalog.workers import map_isolated
from explorer.samples import qwen_full_spec, write_packet

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


def _cli_report(packet: Path, blas_threads: str) -> str:
    environment = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": blas_threads,
                   "OMP_NUM_THREADS": blas_threads, "MKL_NUM_THREADS": blas_threads}
    done = subprocess.run([sys.executable, "-m", "explorer", "analyze", str(packet), "--json"],
                          capture_output=True, text=True, env=environment, check=True)
    return done.stdout


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
