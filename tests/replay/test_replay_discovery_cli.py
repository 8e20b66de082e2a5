"""The source packet found by packetSHA256, and `explorer replay`'s exit codes and output.

The source packet found by packetSHA256 (docs/replay.md, The source packet and the partner: parent, siblings,
two candidates, none) and `explorer replay`'s exit codes and output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import explorer
from explorer.cli import main
from explorer.replay.model import AmbiguousPacketError
from explorer.samples import packets as samples
from explorer.samples.replays import RunVariant

from replay_support import PARTNER, RUN, SOURCE, run_of, spec, write_root


def test_found_among_the_siblings(tmp_path):
    run = write_root(tmp_path)
    result = explorer.replay(run)
    assert result.status == "analyzed" and os.path.samefile(result.packet.admission.path, tmp_path / SOURCE)


def test_found_in_the_parent(tmp_path):
    samples.write_packet(tmp_path, spec("contiguous"))
    run = samples.write_files(tmp_path / RUN, run_of())
    result = explorer.replay(run)
    assert result.status == "analyzed" and os.path.samefile(result.packet.admission.path, tmp_path)


def test_never_searched_further_than_one_level(tmp_path):
    samples.write_packet(tmp_path / "deeper" / SOURCE, spec("contiguous"))
    samples.write_packet(tmp_path.parent / f"{tmp_path.name}-beside", spec("contiguous"))
    run = samples.write_files(tmp_path / RUN, run_of())
    try:
        assert explorer.replay(run).codes == ("replay_packet_missing",)
    finally:
        shutil.rmtree(tmp_path.parent / f"{tmp_path.name}-beside")


def test_two_candidates_are_a_usage_error_naming_both(tmp_path, capsys):
    run = write_root(tmp_path)
    shutil.copytree(tmp_path / SOURCE, tmp_path / "copy")
    with pytest.raises(AmbiguousPacketError, match="copy"):
        explorer.replay(run)
    assert main(["replay", str(run)]) == 2
    assert "copy" in capsys.readouterr().err
    assert explorer.replay(run, packet=tmp_path / "copy").status == "analyzed"


def test_none_found_is_refused(tmp_path):
    run = samples.write_files(tmp_path / RUN, run_of())
    assert explorer.replay(run).codes == ("replay_packet_missing",)
    assert main(["replay", str(run)]) == 4


def test_a_link_to_a_packet_directory_is_not_searched(tmp_path):
    samples.write_packet(tmp_path / "elsewhere" / "deep", spec("contiguous"))
    run = samples.write_files(tmp_path / "runs" / RUN, run_of())
    os.symlink(tmp_path / "elsewhere" / "deep", tmp_path / "runs" / "linked")
    assert explorer.replay(run).codes == ("replay_packet_missing",)


# ---------------------------------------------------------------- the command line


@pytest.fixture
def root(tmp_path):
    write_root(tmp_path)
    samples.write_files(tmp_path / "failed", run_of(RunVariant(failed_arm="pagedSegmented")))
    return tmp_path


def test_exit_codes(root, tmp_path, capsys):
    partner = str(root / PARTNER)
    assert main(["replay", str(root / RUN), "--partner", partner]) == 0
    assert main(["replay", str(root / "failed")]) == 3
    assert main(["replay", str(root / "nothing")]) == 4
    assert main(["replay", str(root / RUN), "--emulate", "no_such_kernel"]) == 2
    assert main(["replay"]) == 2
    existing = tmp_path / "exists.json"
    existing.write_text("kept")
    assert main(["replay", str(root / RUN), "--output", str(existing)]) == 2
    assert existing.read_text() == "kept"
    capsys.readouterr()


def test_text_leads_with_the_matrix_then_each_arm(root, capsys):
    assert main(["replay", str(root / RUN), "--partner", str(root / PARTNER)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    matrix = next(i for i, line in enumerate(lines) if line.startswith("Elements that differ"))
    assert lines[matrix + 1].split() == ["capture", "partner", "nativeSDPA", "pagedFixed", "pagedSegmented"]
    assert lines[matrix + 2].split()[:3] == ["capture", "0", "357"]
    arms = text.index("Arms:")
    assert matrix < 6 and text.index("receipt: dispatch paged_fixed_decode") > arms
    assert lines[matrix - 1] == (
        "Reading: nativeSDPA reproduces the capture bit for bit; pagedFixed and "
        "pagedSegmented reproduce the partner bit for bit; pagedFixed and pagedSegmented "
        "are byte-identical."
    )
    assert "readback: storedKeys byte-identical; storedValues byte-identical" in text
    report = explorer.replay(root / RUN, partner=root / PARTNER).report()["arms"]["pagedFixed"]["references"]
    head, channel = report["worstAt"]["ulp"]["queryHead"], report["worstAt"]["ulp"]["channel"]
    assert f"ULP vs it: max {report['ulp']['max']} at query head {head}, channel {channel}, p99" in text
    head, channel = report["worstAt"]["primary"]["queryHead"], report["worstAt"]["primary"]["channel"]
    assert (
        f"vs FP32 reference: linf {report['primary']['global']['linf']:.4g} at query head {head}, channel {channel}"
        in text
    )
    assert "analysis.json: the tool's primary and rounded" in text


def test_json_and_output_are_the_report(root, tmp_path, capsys):
    out = tmp_path / "replay.json"
    assert main(["replay", str(root / "failed"), "--json", "--output", str(out)]) == 3
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["schema"] == "explorer.replay-report.v1" and printed["codes"] == ["replay_arm_failed"]


def test_hostile_run_never_exits_1(root):
    run = root / "hostile"
    shutil.copytree(root / RUN, run)
    os.unlink(run / "pagedFixed" / "result.json")
    os.mkfifo(run / "pagedFixed" / "result.json")
    os.unlink(run / "nativeSDPA" / "result.json")
    os.symlink("/dev/zero", run / "nativeSDPA" / "result.json")
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "replay", str(run), "--json"], capture_output=True, timeout=120
    )
    assert done.returncode == 3, done.stderr
    arms = json.loads(done.stdout)["arms"]
    assert arms["pagedFixed"]["state"] == arms["nativeSDPA"]["state"] == "refused"
