"""Every run-level refusal and arm state, hostile files included: a code, never an exception.

Every run-level refusal and arm state of docs/replay.md, Admission of the run on run directories written from
the sample pair, hostile files included: a code, never an exception or a hang.
"""

from __future__ import annotations

import json
import os

import pytest

import explorer
from explorer.packet import files as packet_files
from explorer.samples import packets as samples

from replay_support import PARTNER, SOURCE, edit_json, replace_tensor, run_of, write_root

HOSTILE_JSON_BYTES = 300 * 1024
MESSAGE_CEILING = 2_000  # characters: far above any bounded message, far below what was echoed


def run_refused(run, **kwargs) -> list[str]:
    result = explorer.replay(run, **kwargs)
    assert result.status == "refused"
    assert all(arm.state is None for arm in result.arms.values())
    assert all(len(p.message) <= MESSAGE_CEILING for p in result.refusals)
    return list(result.codes)


def arm_of(run, arm: str):
    result = explorer.replay(run)
    report = result.report()
    json.dumps(report, allow_nan=False)
    assert result.status == "inconclusive"
    assert all(len(p["message"]) <= MESSAGE_CEILING for a in report["arms"].values() for p in a["problems"])
    return report["arms"][arm]


# ---------------------------------------------------------------- run-level refusals


def test_no_input_json(tmp_path):
    files = run_of()
    del files["input.json"]
    assert run_refused(write_root(tmp_path, files)) == ["replay_input_invalid"]


def test_no_run_directory(tmp_path):
    assert run_refused(tmp_path / "nothing") == ["replay_input_invalid"]


@pytest.mark.parametrize("data", [b'{"schema": 1e400}', b"[]", b'{"a": 1, "a": 2}', b"\xff", b'{"x": NaN}'])
def test_input_json_not_strict(tmp_path, data):
    files = run_of()
    files["input.json"] = data
    assert run_refused(write_root(tmp_path, files)) == ["replay_input_invalid"]


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v.update(schema="darkbloom.attention-replay-input.v2"),
        lambda v: v.update(sampleOutcome="discarded"),
        lambda v: v["geometry"].pop("pageSize"),
        lambda v: v["selection"].update(requestID="2"),
        lambda v: v["tensors"]["queries"].update(file="queries.raw"),
        lambda v: v["tensors"].pop("output"),
    ],
)
def test_input_json_rules(tmp_path, change):
    assert run_refused(write_root(tmp_path, edit_json(run_of(), "input.json", change))) == ["replay_input_invalid"]


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v["identity"].update(modelID="another model"),
        lambda v: v["selection"].update(storageLayerIndex=4),
        lambda v: v.update(scaleBits=v["scaleBits"] + 1),
        lambda v: v.update(metadataSHA256="0" * 64),
        lambda v: v["tensors"]["storedKeys"].update(sha256="0" * 64),
    ],
)
def test_input_json_bound_to_another_packet(tmp_path, change):
    run = write_root(tmp_path, edit_json(run_of(), "input.json", change))
    assert run_refused(run, packet=tmp_path / SOURCE) == ["replay_packet_mismatch"]


def test_packet_sha256_of_another_packet(tmp_path):
    run = write_root(tmp_path, edit_json(run_of(), "input.json", lambda v: v.update(packetSHA256="a" * 64)))
    assert run_refused(run, packet=tmp_path / SOURCE) == ["replay_packet_mismatch"]
    assert run_refused(run) == ["replay_packet_missing"]


def test_a_staged_file_differing_from_the_packet(tmp_path):
    files = run_of()
    files["storedValues.bin"] = bytes(len(files["storedValues.bin"]))
    assert run_refused(write_root(tmp_path, files)) == ["replay_packet_mismatch"]


def test_geometry_recomputed_from_the_packet(tmp_path):
    run = write_root(tmp_path, edit_json(run_of(), "input.json", lambda v: v["geometry"].update(pageSize=32)))
    assert run_refused(run) == ["replay_geometry_mismatch"]


def test_a_refused_source_packet_refuses_the_run_with_its_codes(tmp_path):
    run = write_root(tmp_path)
    refused = samples.write_refused(tmp_path / "refused")
    assert run_refused(run, packet=refused) == ["sha256_mismatch"]


# ---------------------------------------------------------------- arm states


def test_absent_arm(tmp_path):
    files = {name: data for name, data in run_of().items() if not name.startswith("nativeSDPA")}
    files = edit_json(files, "execution.json", lambda entries: entries.pop(0))
    arm = arm_of(write_root(tmp_path, files), "nativeSDPA")
    assert (arm["state"], arm["codes"], arm["capture"]) == ("absent", [], None)


def test_empty_arm_directory(tmp_path):
    files = {name: data for name, data in run_of().items() if not name.startswith("pagedFixed/")}
    run = write_root(tmp_path, files)
    (run / "pagedFixed").mkdir()
    arm = arm_of(run, "pagedFixed")
    assert (arm["state"], arm["codes"]) == ("refused", ["replay_result_invalid"])
    assert "path_missing" in arm["problems"][0]["message"]


def _without_result(tmp_path, arm: str = "pagedFixed"):
    files = run_of()
    del files[f"{arm}/result.json"]
    return write_root(tmp_path, files)


def test_fifo_as_result_json(tmp_path):
    run = _without_result(tmp_path)
    os.mkfifo(run / "pagedFixed" / "result.json")
    arm = arm_of(run, "pagedFixed")
    assert arm["codes"] == ["replay_result_invalid"] and "path_not_regular" in arm["problems"][0]["message"]


def test_dev_zero_link_as_result_json(tmp_path):
    run = _without_result(tmp_path)
    os.symlink("/dev/zero", run / "pagedFixed" / "result.json")
    arm = arm_of(run, "pagedFixed")
    assert arm["codes"] == ["replay_result_invalid"] and "path_escape" in arm["problems"][0]["message"]


def test_result_json_link_leading_out_of_the_run(tmp_path):
    run = _without_result(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_bytes(run_of()["pagedFixed/result.json"])
    os.symlink("../../outside.json", run / "pagedFixed" / "result.json")
    arm = arm_of(run, "pagedFixed")
    assert "path_escape" in arm["problems"][0]["message"]


def test_result_json_link_inside_the_run_is_followed(tmp_path):
    run = _without_result(tmp_path)
    (run / "pagedFixed" / "kept.json").write_bytes(run_of()["pagedFixed/result.json"])
    os.symlink("kept.json", run / "pagedFixed" / "result.json")
    assert explorer.replay(run).arms["pagedFixed"].state == "admitted"


def test_oversized_result_json(tmp_path):
    files = run_of()
    files["pagedFixed/result.json"] = files["pagedFixed/result.json"][:-2] + b" " * HOSTILE_JSON_BYTES + b"}\n"
    arm = arm_of(write_root(tmp_path, files), "pagedFixed")
    assert arm["codes"] == ["replay_result_invalid"] and "json_too_large" in arm["problems"][0]["message"]


def _result_edit(tmp_path, arm: str, change):
    return arm_of(write_root(tmp_path, edit_json(run_of(), f"{arm}/result.json", change)), arm)


@pytest.mark.parametrize(
    "arm, change, code",
    [
        ("pagedFixed", lambda r: r.update(schema="x"), "replay_result_invalid"),
        ("pagedFixed", lambda r: r.update(inputSHA256="0" * 64), "replay_result_invalid"),
        ("pagedFixed", lambda r: r.update(arm="pagedSegmented"), "replay_result_invalid"),
        ("pagedFixed", lambda r: r.pop("offset"), "replay_result_invalid"),
        ("pagedFixed", lambda r: r.update(dispatch="paged_segmented_decode"), "replay_dispatch_mismatch"),
        ("pagedFixed", lambda r: r.update(dispatch="\x1b[2J" * 10_000), "replay_dispatch_mismatch"),
        ("nativeSDPA", lambda r: r.update(offset=255), "replay_offset_mismatch"),
        ("nativeSDPA", lambda r: r["geometry"].update(poolBudgetBytes=1), "replay_offset_mismatch"),
        ("nativeSDPA", lambda r: r.update(kernelOutputDType="float32"), "replay_dtype_mismatch"),
        (
            "pagedFixed",
            lambda r: r["tensors"]["storedKeys"].update(
                shape=[1, 2, 255, 128], byteCount=130560, packedStrides=[65280, 32640, 128, 1]
            ),
            "replay_dtype_mismatch",
        ),
        ("nativeSDPA", lambda r: r.update(pageTable=[1]), "replay_page_table_invalid"),
        ("pagedFixed", lambda r: r["pageTable"].pop(), "replay_page_table_invalid"),
        ("pagedFixed", lambda r: r["pageTable"].__setitem__(3, 1), "replay_page_table_invalid"),
        ("pagedFixed", lambda r: r["pageTable"].__setitem__(0, 2**31), "replay_page_table_invalid"),
        ("pagedFixed", lambda r: r["pageTable"].__setitem__(0, 0), "replay_page_table_invalid"),
        ("nativeSDPA", lambda r: r.update(partitionTokens=256), "replay_partition_invalid"),
        ("pagedSegmented", lambda r: r.update(partitionTokens=512), "replay_partition_invalid"),
        ("pagedFixed", lambda r: r.update(segmentCount=1), "replay_segments_invalid"),
        ("pagedSegmented", lambda r: r.update(segmentCount=0), "replay_segments_invalid"),
        ("pagedSegmented", lambda r: r.update(segmentCount=65), "replay_segments_invalid"),
        ("nativeSDPA", lambda r: r["tensors"].update(storedKeys=r["tensors"]["output"]), "replay_tensor_set_invalid"),
        ("pagedFixed", lambda r: r["tensors"].pop("storedValues"), "replay_tensor_set_invalid"),
        ("pagedFixed", lambda r: r["tensors"]["output"].update(sha256="0" * 64), "sha256_mismatch"),
        ("pagedFixed", lambda r: r["tensors"]["output"].update(file="../nativeSDPA/../../escape.bin"), "path_invalid"),
        ("pagedFixed", lambda r: r["tensors"]["output"].update(file="missing.bin"), "path_missing"),
    ],
)
def test_arm_refusal_codes(tmp_path, arm, change, code):
    found = _result_edit(tmp_path, arm, change)
    assert found["state"] == "refused" and found["codes"] == [code] and found["capture"] is None


@pytest.mark.parametrize("digits, code", [(4000, "replay_offset_mismatch"), (5000, "replay_result_invalid")])
def test_a_huge_integer_offset_is_refused_with_a_bounded_message(tmp_path, digits, code):
    files = run_of()
    files["nativeSDPA/result.json"] = files["nativeSDPA/result.json"].replace(
        b'"offset" : 256', b'"offset" : ' + b"9" * digits
    )
    arm = arm_of(write_root(tmp_path, files), "nativeSDPA")
    assert arm["codes"] == [code] and f"{digits}" in arm["problems"][0]["message"]


def test_a_tensor_linked_out_of_the_run(tmp_path):
    files = run_of()
    data = files.pop("nativeSDPA/output.bin")
    run = write_root(tmp_path, files)
    (tmp_path / "elsewhere.bin").write_bytes(data)
    os.symlink(str(tmp_path / "elsewhere.bin"), run / "nativeSDPA" / "output.bin")
    assert arm_of(run, "nativeSDPA")["codes"] == ["path_escape"]


def test_two_arms_byte_identical_files_hard_linked_to_each_other_are_each_verified(tmp_path):
    """What a dedup tool leaves: every byte-identical file of another descriptor set hard-linked to one copy."""
    run = write_root(tmp_path)
    links = [(".", "pagedFixed", "storedKeys"), (".", "nativeSDPA", "output")]  # to the staged copies, and
    links += [("pagedFixed", "pagedSegmented", name) for name in ("storedKeys", "storedValues", "output")]
    for source, target, name in links:
        assert (run / source / f"{name}.bin").read_bytes() == (run / target / f"{name}.bin").read_bytes()
        os.remove(run / target / f"{name}.bin")
        os.link(run / source / f"{name}.bin", run / target / f"{name}.bin")
    assert os.stat(run / "pagedSegmented" / "storedKeys.bin").st_nlink == 3
    report = explorer.replay(run, partner=tmp_path / PARTNER).report()
    assert (report["status"], report["codes"]) == ("analyzed", [])
    assert all(arm["state"] == "admitted" and arm["codes"] == [] for arm in report["arms"].values())
    assert all(b["identical"] for b in report["arms"]["pagedSegmented"]["readback"].values())


def test_a_file_linked_to_an_arms_own_other_file_is_an_alias(tmp_path):
    """Within one descriptor set two names for one file stay a refusal, even with the descriptors matching."""
    files = run_of()
    keys = files["pagedFixed/storedKeys.bin"]
    files = replace_tensor(files, "pagedFixed", "storedValues", keys)
    files.pop("pagedFixed/storedValues.bin")
    run = write_root(tmp_path, files)
    os.link(run / "pagedFixed" / "storedKeys.bin", run / "pagedFixed" / "storedValues.bin")
    assert arm_of(run, "pagedFixed")["codes"] == ["path_duplicate"]
    assert arm_of(run, "pagedSegmented")["codes"] == []


def test_an_arm_file_that_changes_while_it_is_read(tmp_path, monkeypatch):
    run = write_root(tmp_path)
    target = os.stat(run / "pagedFixed" / "storedKeys.bin")
    read_at_most = packet_files._read_at_most

    def growing(fd, limit, relative):
        data = read_at_most(fd, limit, relative)
        status = os.fstat(fd)
        if (status.st_dev, status.st_ino) == (target.st_dev, target.st_ino):
            with open(run / "pagedFixed" / "storedKeys.bin", "ab") as appended:
                appended.write(b"\0\0")
        return data

    monkeypatch.setattr(packet_files, "_read_at_most", growing)
    arm = arm_of(run, "pagedFixed")
    assert arm["codes"] == ["byte_count_mismatch"] and "changed length" in arm["problems"][0]["message"]


def test_execution_json_hostile_entries_are_notes(tmp_path):
    files = run_of()
    files["execution.json"] = b'[1, {"arm": "x" }, {"arm": "pagedFixed", "exitCode": 1e300}]'
    report = explorer.replay(write_root(tmp_path, files)).report()
    assert report["status"] == "analyzed" and len(report["notes"]) == 3


def test_hostile_content_never_raises(tmp_path):
    files = run_of()
    files["input.json"] = b'{"schema": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert run_refused(write_root(tmp_path, files)) == ["replay_input_invalid"]


def test_staged_files_read_only_inside_the_run(tmp_path):
    files = run_of()
    data = files.pop("queries.bin")
    run = write_root(tmp_path, files)
    (tmp_path / "queries.bin").write_bytes(data)
    os.symlink("../queries.bin", run / "queries.bin")
    assert run_refused(run) == ["replay_packet_mismatch"]
