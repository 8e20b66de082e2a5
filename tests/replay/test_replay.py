"""replay() on the complete sample run: matrix, cross-check, arm reasons and the report's keys.

replay(): the complete sample run, the matrix with a partner, the tool-analysis cross-check, the arm reasons
and the report's keys (docs/replay.md, What is computed and The report).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import explorer
from explorer.replay.model import ARMS
from explorer.samples.replays import RunVariant

from replay_support import PARTNER, SOURCE, edit_json, flip_bit, replace_tensor, run_of, write_root

REPORT_KEYS = {"schema", "status", "codes", "refusals", "run", "packet", "partner", "arms", "matrix", "notes"}
ARM_KEYS = {
    "state",
    "codes",
    "ownDispatch",
    "receipt",
    "capture",
    "partner",
    "readback",
    "references",
    "emulations",
    "toolAnalysis",
}


@pytest.fixture
def root(tmp_path):
    write_root(tmp_path)
    return tmp_path


def test_complete_run_with_partner_is_analyzed_and_its_matrix_is_the_incident_table(root):
    result = explorer.replay(root / "run", partner=root / PARTNER)
    report = result.report()
    json.dumps(report, allow_nan=False)
    assert set(report) >= REPORT_KEYS and all(set(arm) >= ARM_KEYS for arm in report["arms"].values())
    assert (result.status, report["codes"]) == ("analyzed", [])
    assert report["packet"]["name"] == SOURCE and report["partner"]["name"] == PARTNER
    matrix = report["matrix"]
    assert matrix["outputs"] == ["capture", "partner", *ARMS]
    pair = explorer.compare(root / SOURCE, root / PARTNER).report()["output"]["mismatched"]
    assert pair > 0
    m = np.array(matrix["mismatched"])
    assert (m == m.T).all() and (np.diag(m) == 0).all()
    native, paged = [0, pair, 0, pair, pair], [pair, 0, pair, 0, 0]
    assert m.tolist() == [native, paged, native, paged, paged]
    arms = report["arms"]
    assert [arms[a]["ownDispatch"] for a in ARMS] == [True, False, False]
    assert arms["nativeSDPA"]["capture"]["mismatched"] == 0 and arms["nativeSDPA"]["partner"]["mismatched"] == pair
    assert arms["pagedFixed"]["partner"]["identical"] and arms["pagedFixed"]["capture"]["mismatched"] == pair
    assert len(arms["pagedFixed"]["capture"]["firstPositions"]) == min(pair, 100)
    assert sum(arms["pagedFixed"]["capture"]["perHead"]) == pair
    assert all(b["identical"] for a in ("pagedFixed", "pagedSegmented") for b in arms[a]["readback"].values())
    assert arms["nativeSDPA"]["readback"] is None
    assert arms["pagedSegmented"]["receipt"] == {
        "dispatch": "paged_segmented_decode",
        "kernelOutputDType": "bfloat16",
        "partitionTokens": 256,
        "segmentCount": 1,
        "pages": 16,
        "exitCode": 0,
        "seconds": 0.561,
    }
    for arm in ARMS:
        tool = arms[arm]["toolAnalysis"]
        assert all(value["agrees"] for block in tool.values() for value in block.values())
        references = arms[arm]["references"]
        assert set(references) == {"primary", "rounded", "fp64", "ulp", "equalToRoundedReference", "worstAt"}
        found = result.arms[arm].references
        head, channel = references["worstAt"]["primary"]["queryHead"], references["worstAt"]["primary"]["channel"]
        assert found.primary.abs_error[head, channel] == references["primary"]["global"]["linf"]
        head, channel = references["worstAt"]["ulp"]["queryHead"], references["worstAt"]["ulp"]["channel"]
        assert found.ulp.distance[head, channel] == references["ulp"]["max"]
    assert matrix["sentence"] == (
        "nativeSDPA reproduces the capture bit for bit; pagedFixed and pagedSegmented "
        "reproduce the partner bit for bit; pagedFixed and pagedSegmented are "
        "byte-identical."
    )


def test_the_native_arm_reproduces_the_capture_ladder_exactly(root):
    result = explorer.replay(root / "run", partner=root / PARTNER)
    capture = explorer.analyze(root / SOURCE).report()["reference"]
    native = result.report()["arms"]["nativeSDPA"]["references"]
    assert native["primary"]["global"]["linf"] == capture["primary"]["global"]["linf"]
    assert native["rounded"]["global"]["rmse"] == capture["roundedToOutputDType"]["global"]["rmse"]
    assert native["fp64"]["global"]["linf"] == capture["fp64"]["outputError"]["global"]["linf"]


def test_without_partner_the_matrix_has_no_partner_row(root):
    report = explorer.replay(root / "run").report()
    assert report["partner"] is None and report["matrix"]["outputs"] == ["capture", *ARMS]
    assert all(arm["partner"] is None for arm in report["arms"].values())


def test_a_wrong_number_in_analysis_json_is_a_note_and_changes_no_status(tmp_path):
    def wrong(value):
        value["arms"]["pagedFixed"]["originalQueryReference"]["global"]["linf"] *= 1.5

    run = write_root(tmp_path, edit_json(run_of(), "analysis.json", wrong))
    result = explorer.replay(run)
    report = result.report()
    assert report["status"] == "analyzed"
    linf = report["arms"]["pagedFixed"]["toolAnalysis"]["primary"]["linf"]
    assert linf["agrees"] is False and linf["tool"] == pytest.approx(1.5 * linf["explorer"], rel=1e-3)
    assert not linf["range"][0] <= linf["tool"] <= linf["range"][1]
    assert report["arms"]["pagedFixed"]["toolAnalysis"]["primary"]["rmse"]["agrees"] is True
    assert any("pagedFixed primary linf" in note for note in report["notes"])


def test_a_missing_or_unreadable_analysis_json_gives_null_tool_analysis(tmp_path):
    files = run_of()
    files["analysis.json"] = b'{"schema": "darkbloom.attention-replay-analysis.v1", "arms": 1e400}'
    report = explorer.replay(write_root(tmp_path, files)).report()
    assert report["status"] == "analyzed"
    assert all(arm["toolAnalysis"] is None for arm in report["arms"].values())
    assert any(note.startswith("analysis.json was not used") for note in report["notes"])


def test_failed_sample_arm_has_its_launch_in_the_receipt_and_no_numbers(tmp_path):
    run = write_root(tmp_path, run_of(RunVariant(failed_arm="pagedSegmented")))
    report = explorer.replay(run).report()
    assert (report["status"], report["codes"]) == ("inconclusive", ["replay_arm_failed"])
    arm = report["arms"]["pagedSegmented"]
    assert arm["state"] == "failed" and arm["receipt"]["exitCode"] == 1 and arm["capture"] is None
    assert all(a["toolAnalysis"] is None for a in report["arms"].values())
    assert report["matrix"]["outputs"] == ["capture", "nativeSDPA", "pagedFixed"]


def test_a_failed_arm_whose_files_are_admissible_is_still_compared(tmp_path):
    def fail(entries):
        entries[1].update(exitCode=None, failure="killed by signal 9")

    run = write_root(tmp_path, edit_json(run_of(), "execution.json", fail))
    report = explorer.replay(run).report()
    arm = report["arms"]["pagedFixed"]
    assert arm["state"] == "failed" and arm["receipt"]["exitCode"] is None and arm["capture"] is not None
    assert "pagedFixed" in report["matrix"]["outputs"] and report["codes"] == ["replay_arm_failed"]


def test_readback_differing_in_the_last_row_is_inconclusive(tmp_path):
    run = write_root(tmp_path, run_of(RunVariant(readback_fault_arm="pagedFixed")))
    report = explorer.replay(run).report()
    assert report["codes"] == ["replay_readback_differs"]
    keys = report["arms"]["pagedFixed"]["readback"]["storedKeys"]
    assert (keys["identical"], keys["mismatched"], keys["firstDifference"]) == (False, 1, [1, 255, 0])
    assert report["arms"]["pagedSegmented"]["readback"]["storedKeys"]["identical"]


def test_an_own_dispatch_arm_not_reproducing_the_capture(tmp_path):
    files = run_of()
    run = write_root(
        tmp_path, replace_tensor(files, "nativeSDPA", "output", flip_bit(files["nativeSDPA/output.bin"], 0))
    )
    report = explorer.replay(run).report()
    assert report["codes"] == ["replay_not_reproducing"]
    assert report["arms"]["nativeSDPA"]["capture"]["firstPositions"] == [[0, 0]]
    assert report["matrix"]["mismatched"][0][1] == 1


def test_a_nonfinite_arm_output(tmp_path):
    files = run_of()
    data = bytearray(files["pagedFixed/output.bin"])
    data[0:2] = (0x7FC0).to_bytes(2, "little")  # a bfloat16 quiet NaN
    run = write_root(tmp_path, replace_tensor(files, "pagedFixed", "output", bytes(data)))
    report = explorer.replay(run).report()
    assert report["codes"] == ["replay_output_nonfinite"]
    assert report["arms"]["pagedFixed"]["references"]["primary"]["global"]["undefinedReason"] == "nonfinite_values"


def test_emulations_are_scored_against_each_arm(root):
    report = explorer.replay(root / "run", emulate=["paged_two_pass", "mlx_two_pass"]).report()
    counts = {arm: {e["kernel"]: e["bitEqual"]["global"] for e in report["arms"][arm]["emulations"]} for arm in ARMS}
    compared = report["matrix"]["compared"]
    assert counts["nativeSDPA"]["mlx_two_pass"] == compared and counts["pagedFixed"]["paged_two_pass"] == compared
    assert counts["nativeSDPA"]["paged_two_pass"] < compared


def test_result_json_as_apples_writer_writes_it_is_admitted(root):
    data = (root / "run" / "pagedFixed" / "result.json").read_bytes()
    assert b'"arm" : "pagedFixed"' in data and b"\\/" in data
    assert explorer.replay(root / "run").arms["pagedFixed"].state == "admitted"


def test_the_replay_result_is_immutable(root):
    result = explorer.replay(root / "run")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = "analyzed"
    with pytest.raises(TypeError):
        result.arms["nativeSDPA"] = None
    with pytest.raises(ValueError, match="read-only"):
        result.arms["nativeSDPA"].output_values[0, 0] = 1.0


def test_the_matrix_sentence_names_arms_by_what_their_rows_say():
    from types import MappingProxyType

    from explorer.replay.model import Matrix
    from explorer.replay.reading import matrix_sentence

    labels = ("capture", "nativeSDPA", "pagedFixed", "pagedSegmented")
    same = Matrix(labels, tuple((0,) * 4 for _ in labels), 64)
    assert matrix_sentence(same, {}) == (
        "nativeSDPA, pagedFixed and pagedSegmented reproduce the capture bit for "
        "bit; all three arms are byte-identical."
    )
    apart = Matrix(labels, ((0, 0, 5, 1200), (0, 0, 5, 1200), (5, 5, 0, 1201), (1200, 1200, 1201, 0)), 2048)
    assert matrix_sentence(apart, {}) == (
        "nativeSDPA reproduces the capture bit for bit; pagedFixed differs from the capture in 5 of 2,048 elements; "
        "pagedSegmented differs from the capture in 1,200 of 2,048 elements; no two arms are byte-identical."
    )
    failed = MappingProxyType({"pagedSegmented": type("Arm", (), {"state": "refused"})()})
    two = Matrix(labels[:3], ((0, 0, 0), (0, 0, 0), (0, 0, 0)), 64)
    assert matrix_sentence(two, failed) == (
        "nativeSDPA and pagedFixed reproduce the capture bit for bit; nativeSDPA "
        "and pagedFixed are byte-identical; pagedSegmented has no output "
        "(refused)."
    )
    assert matrix_sentence(None, {}) is None


def test_the_notebook_display_leads_with_the_matrix_sentence(root):
    run = explorer.replay(root / "run", partner=root / PARTNER)
    shown = run._repr_html_()
    assert shown.startswith(f'<p class="replay-reading"><b>Matrix:</b> {run.report()["matrix"]["sentence"]}</p>')
