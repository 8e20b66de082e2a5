"""Command-line hygiene: one-line errors, /dev/full, closed pipes, warnings, bytes paths.

Command-line hygiene: a missing packet in one line, /dev/full, a closed pipe, numeric warnings, bytes paths,
samples that never overwrite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer import cli
from explorer.analysis.analyze import analyze
from explorer.samples import packets as samples

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "sample_packets"
ANALYZED = COMMITTED / "injected-error-head5"
SIGNALING_NAN_F32 = 0x7F800001
RUN_TIMEOUT_S = 120


def _explorer(*argv, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "explorer", *argv], timeout=RUN_TIMEOUT_S, cwd=REPO, **options)


def test_a_missing_packet_is_one_line_without_limitations(capsys, tmp_path):
    code = cli.main(["analyze", str(tmp_path / "nonexistent")])
    out = capsys.readouterr().out
    assert code == 4 and out == f"no packet at {str(tmp_path / 'nonexistent')!r} (path_missing)\n"
    code = cli.main(["analyze", str(tmp_path / "nonexistent"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 4 and report["limitations"] and report["refusals"][0]["code"] == "path_missing"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_writing_to_dev_full_is_a_one_line_error_exit_2():
    with open("/dev/full", "w") as full:
        done = _explorer("analyze", str(ANALYZED), stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "No space left on device" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_closed_pipe_ends_quietly(json_flag):
    reader, writer = os.pipe()
    os.close(reader)  # the reading end is gone before anything is written, as after `| head -1`
    try:
        done = _explorer("analyze", str(ANALYZED), *json_flag, stdout=writer, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (0, "")


def test_numeric_warnings_never_reach_the_terminal(tmp_path):
    spec = samples.synthetic_spec(qh=4, kvh=2, tokens=3, head_dim=4, seed=3)
    dtype, bits = spec.tensors["queries"]
    assert dtype == "float32"
    planted = bits.copy()
    planted[0, 1, 0, 2] = SIGNALING_NAN_F32
    packet = samples.write_packet(tmp_path / "snan", samples.with_tensor(spec, "queries", planted.astype(np.uint32)))
    done = _explorer("analyze", str(packet), "--json", capture_output=True, text=True)
    assert done.stderr == ""
    with np.errstate(all="ignore"):  # this process's own analysis, not the command's output
        assert json.loads(done.stdout)["status"] == analyze(packet).status


def test_a_path_that_is_not_utf8_is_accepted(tmp_path):
    name = os.fsencode(tmp_path) + b"/packet-\xff"
    samples.write_packet(os.fsdecode(name), samples.synthetic_spec())
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "analyze", name, "--json"],
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        cwd=REPO,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "analyzed"


def test_samples_refuse_a_directory_holding_any_name_they_would_write(capsys, tmp_path):
    (tmp_path / samples.SAMPLES_README).write_text("mine\n")
    code = cli.main(["samples", "--out", str(tmp_path)])
    assert code == 2 and "README.md" in capsys.readouterr().err
    assert (tmp_path / samples.SAMPLES_README).read_text() == "mine\n"
    assert sorted(os.listdir(tmp_path)) == [samples.SAMPLES_README]


def test_samples_never_write_through_a_planted_link(capsys, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    first = next(iter(samples.CURATED))
    os.symlink(tmp_path / "elsewhere", out / first)  # a link where a packet directory would go
    assert cli.main(["samples", "--out", str(out)]) == 2
    assert sorted(os.listdir(out)) == [first] and not (tmp_path / "elsewhere").exists()
    capsys.readouterr()
    # A link planted inside a packet directory, at a file's name: write_packet refuses, the target is untouched.
    directory = tmp_path / "packet"
    directory.mkdir()
    os.symlink(victim, directory / "stored-values.bin")
    with pytest.raises(FileExistsError):
        samples.write_packet(directory, samples.synthetic_spec())
    assert victim.read_text() == "keep me\n"
    assert not [name for name in os.listdir(directory) if name.startswith(".")]  # no temporary left behind
