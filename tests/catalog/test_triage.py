"""`explorer triage` on a generated root of hundreds of packets of every status, hostile ones included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import explorer
from explorer.catalog.discovery import discover
from explorer.catalog.summary import ERROR, INTERNAL_ERROR, WORKER_CRASHED, summarize
from explorer.catalog.triage import triage
from explorer.packet.files import JSON_SIZE_LIMIT
from explorer.samples.packets import synthetic_spec, with_snapshot, write_packet

REPO = Path(__file__).resolve().parents[2]
PACKETS_PER_KIND = 40
CRASH_NAME, RAISE_NAME = "analyzed-007", "analyzed-011"


def _refused(directory: Path, seed: int) -> None:
    write_packet(directory, synthetic_spec(seed=seed))
    payload = directory / "output.bin"
    data = bytearray(payload.read_bytes())
    data[0] ^= 0x01
    payload.write_bytes(bytes(data))


def _fifo_packet_json(directory: Path, seed: int) -> None:
    directory.mkdir(parents=True)
    os.mkfifo(directory / "packet.json")


def _fifo_tensor(directory: Path, seed: int) -> None:
    write_packet(directory, synthetic_spec(seed=seed))
    (directory / "queries.bin").unlink()
    os.mkfifo(directory / "queries.bin")


def _huge_json(directory: Path, seed: int) -> None:
    write_packet(directory, synthetic_spec(seed=seed))
    (directory / "packet.json").write_text("[" + "0," * JSON_SIZE_LIMIT + "0]")


KINDS = {
    "analyzed": lambda directory, seed: write_packet(directory, synthetic_spec(seed=seed)),
    "contiguous": lambda directory, seed: write_packet(directory, synthetic_spec(seed=seed, backend="contiguous")),
    "discarded": lambda directory, seed: write_packet(
        directory, with_snapshot(synthetic_spec(seed=seed), sampleOutcome="discarded")
    ),
    "refused": _refused,
    "fifo-json": _fifo_packet_json,
    "fifo-tensor": _fifo_tensor,
    "huge-json": _huge_json,
}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("triage-root")
    for kind, make in KINDS.items():
        for index in range(PACKETS_PER_KIND):
            group = root / "nested" if index % 2 else root  # one and two levels below the root
            make(group / f"{kind}-{index:03d}", index)
    return root


def crashing_summarize(path: str):
    """summarize, except that one packet kills its worker process and another raises."""
    if path.endswith(CRASH_NAME):
        os._exit(70)
    if path.endswith(RAISE_NAME):
        raise RuntimeError("a programming error")
    return summarize(path)


def test_every_packet_is_reported_once_with_the_status_analyze_gives(root):
    entries = discover(root)
    assert len(entries) == len(KINDS) * PACKETS_PER_KIND
    items = list(triage(entries, jobs=2))
    assert sorted(item.name for item in items) == [entry.name for entry in entries]
    for item in items:
        analysis = explorer.analyze(root / item.name)
        assert item.summary.status == analysis.status, item.name
        assert item.summary.path == str(root / item.name)
    statuses = {item.name.split("/")[-1].rsplit("-", 1)[0]: item.summary for item in items}
    assert statuses["fifo-json"].codes == ("path_not_regular",)
    assert statuses["fifo-tensor"].status == "refused"
    assert statuses["huge-json"].status == "refused"
    assert statuses["discarded"].codes == ("sample_not_confirmed",)
    assert {item.summary.status for item in items} == {"analyzed", "inconclusive", "refused"}


def test_a_crashing_or_raising_worker_costs_only_its_own_packet(root):
    entries = discover(root)
    items = {item.name: item.summary for item in triage(entries, jobs=2, work=crashing_summarize)}
    assert len(items) == len(entries)
    errors = {name: summary.codes for name, summary in items.items() if summary.status == ERROR}
    assert errors == {f"nested/{CRASH_NAME}": (WORKER_CRASHED,), f"nested/{RAISE_NAME}": (INTERNAL_ERROR,)}
    others = [summarize(root / name) for name in items if name not in errors]
    assert [summary.status for name, summary in items.items() if name not in errors] == [
        summary.status for summary in others
    ]


def test_the_command_prints_json_lines_and_the_table_and_exits_zero(root):
    completed = subprocess.run(
        [sys.executable, "-m", "explorer", "triage", str(root), "--json", "--jobs", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    assert sorted(line["name"] for line in lines) == [entry.name for entry in discover(root)]
    analyzed = next(line for line in lines if line["name"] == "analyzed-000")
    summary = summarize(root / "analyzed-000")
    assert (analyzed["worstLinf"], analyzed["noiseFloorRatio"], analyzed["worstUlp"]) == (
        summary.worst_linf,
        summary.noise_floor_ratio,
        summary.worst_ulp,
    )
    assert analyzed["selection"] == dict(summary.selection)
    table = completed.stderr
    assert f"Triage of {len(lines)} packets" in table
    counts = {status: sum(line["status"] == status for line in lines) for status in ("analyzed", "refused")}
    assert f"analyzed      {counts['analyzed']}" in table and f"refused       {counts['refused']}" in table
    assert "Pairs (partners: packets sharing the selection fields)" in table


def test_pairs_join_the_paged_and_contiguous_capture_of_one_selection(root):
    completed = subprocess.run(
        [sys.executable, "-m", "explorer", "triage", str(root), "--jobs", "1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert completed.returncode == 0
    pair_lines = completed.stdout.split("Pairs (partners: packets sharing the selection fields): ")[1].splitlines()
    assert "analyzed-000 (paged)  contiguous-000 (contiguous)" in pair_lines[1]


def test_a_root_that_is_no_directory_is_a_usage_error(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "explorer", "triage", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert completed.returncode == 2 and "not a directory" in completed.stderr
