"""Memory of `analyze`: the measured peak within the documented bound, ceiling, address limits.

Memory of `analyze`: the measured peak within the documented bound, the ceiling, and address-space limits.

The limits are set with `resource.setrlimit(RLIMIT_AS)` in a subprocess, after the explorer and numpy
are loaded, so that only the analysis itself meets them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import explorer.cli
from explorer.analysis.memory import CEILING_BYTES, MEMORY_BOUND_EXCEEDED, MIB, bound_bytes
from explorer.packet.admission import CPU_MAX_HEAD_DIM, CPU_MAX_MULTIPLY_ADDS, CPU_MAX_QUERY_HEADS
from explorer.packet.files import TENSOR_SIZE_LIMIT
from explorer.samples.packets import synthetic_spec, write_packet

REPO = Path(__file__).resolve().parents[2]
# Extreme geometries, small packets: every query head over a long history of one-channel keys.
WIDE = {"qh": 256, "kvh": 1, "tokens": 20_000, "head_dim": 1}
LONG = {"qh": 1, "kvh": 1, "tokens": 400_000, "head_dim": 1, "kv_dtype": "float16", "output_dtype": "float16"}
ROOM_FOR_ADMISSION = 24 * MIB  # address space granted beyond what the loaded process maps: reading fits, numerics not

PROBE = """
import json, resource, sys
import explorer.cli
from explorer.analysis import analyze as analyze_module
from explorer.analysis.memory import analysis_bound
from explorer.packet.admission import admit
packet, mode = sys.argv[1], sys.argv[2]
admit(packet)  # warm: every module and table loaded before measuring or limiting


def resident(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field + ":"))


with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # restart the peak (VmHWM) from the resident size now
before = resident("VmRSS")
if mode != "measure":
    if mode == "no-preflight":  # the estimate passes: the limit is met by the computation itself
        analyze_module.shortfall = lambda needed, what: None
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    limit = mapped + int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    code = explorer.cli.main(["analyze", packet, "--json"])
    sys.stdout.flush()
    sys.exit(code)
analysis = analyze_module.analyze(packet)
print(json.dumps({"status": analysis.status, "grown": resident("VmHWM") - before,
                  "bound": analysis_bound(analysis.admission)}))
"""


@pytest.fixture(scope="module")
def packets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("memory")
    return {
        "wide": write_packet(root / "wide", synthetic_spec(**WIDE)),
        "long": write_packet(root / "long", synthetic_spec(**LONG)),
    }


def _probe(packet: Path, mode: str, room: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(packet), mode, str(room)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
    )


@pytest.mark.parametrize("name", ["wide", "long"])
def test_measured_peak_stays_within_the_documented_bound(packets, name):
    done = _probe(packets[name], "measure")
    measured = json.loads(done.stdout)
    assert measured["status"] == "analyzed"
    assert 0 < measured["grown"] <= measured["bound"]


@pytest.mark.parametrize("mode", ["preflight", "no-preflight"])
def test_an_address_space_limit_gives_a_coded_inconclusive_never_exit_1(packets, mode):
    done = _probe(packets["wide"], mode, ROOM_FOR_ADMISSION)
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "inconclusive" and report["reference"] is None
    (reason,) = report["inconclusiveReasons"]
    assert reason["code"] == MEMORY_BOUND_EXCEEDED and len(reason["message"]) < 300
    if mode == "preflight":
        assert "address-space limit leaves" in reason["message"]
    else:
        assert "ran out of memory" in reason["message"]


def test_a_memory_error_anywhere_is_a_one_line_error_not_exit_1(monkeypatch, capsys):
    def exhausted(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr("explorer.analysis.analyze.analyze", exhausted)
    code = explorer.cli.main(["analyze", str(REPO / "sample_packets" / "clean-fp32q-bf16kv"), "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and MEMORY_BOUND_EXCEEDED in captured.err


def test_no_admissible_packet_needs_more_than_the_ceiling():
    largest = 0
    for head_dim in (1, 2, 4, 64, CPU_MAX_HEAD_DIM):
        for query_heads in range(1, CPU_MAX_QUERY_HEADS + 1):
            tokens_by_payload = TENSOR_SIZE_LIMIT // (2 * 2 * head_dim)  # two 16-bit K/V tensors, one KV head
            tokens_by_cpu = CPU_MAX_MULTIPLY_ADDS // (2 * query_heads * head_dim)
            tokens = max(1, min(tokens_by_payload, tokens_by_cpu))
            largest = max(largest, bound_bytes(TENSOR_SIZE_LIMIT, query_heads, tokens, head_dim))
    assert largest <= CEILING_BYTES
    assert round(largest / MIB) == 662  # the figure docs/report.md gives (QH6/KVH1/D1/T8333333)
