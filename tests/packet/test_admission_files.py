"""Files and paths (docs/packet-format.md, How files are read).

Special files, symlinks, aliases, size limits before allocation, what is read.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import tracemalloc

import numpy as np
import pytest

from explorer.packet import admit as lazily_exported_admit
from explorer.packet import files
from explorer.packet.admission import admit
from explorer.packet.model import TENSOR_NAMES
from explorer.samples.packets import synthetic_spec, tensor_bytes

from packet_support import build, problems, read_descriptor, write_descriptor

NO_HANG = pytest.mark.timeout(20)
ALLOCATION_CEILING = 4 * 1024 * 1024  # far below the 2 GiB a declared shape asks for
Q = "/tensors/queries"


def test_valid_packet_admission_contents(packet):
    spec = synthetic_spec()
    admission = admit(packet)
    assert admission.refusals == () and admission.reasons == () and admission.numerics_allowed
    assert admission.path == os.fspath(packet)
    assert admission.identity == {**spec.identity, "authenticated": False}
    record = spec.snapshot["records"][0]
    assert admission.selection == {
        "requestID": 2,
        "outputIndex": 62,
        "phase": "decode",
        "storageLayerIndex": record["storageLayerIndex"],
        "modelLayerIndex": record["modelLayerIndex"],
        "offsetBefore": 2,
        "offsetAfter": 3,
        "scaleBits": record["scaleBits"],
        "scale": 0.5,
        "dispatch": "paged_fixed_decode",
        "kernelOutputDType": "float32",
    }
    assert admission.scale == 0.5 and admission.kernel_output_dtype == "float32"
    assert admission.sample == {
        "forwardSucceeded": True,
        "sampleOutcome": "confirmed",
        "seedToken": 11346,
        "targetToken": 6829,
        "selectedForwards": 1,
        "expectedOwnerCount": 1,
        "refusals": {},
    }
    assert admission.geometry == {"queryHeads": 4, "kvHeads": 2, "groupSize": 2, "headDim": 4, "tokens": 3}
    assert admission.packet_sha256 == hashlib.sha256((packet / "packet.json").read_bytes()).hexdigest()
    assert admission.metadata_sha256 == hashlib.sha256((packet / "attention-metadata.json").read_bytes()).hexdigest()
    assert admission.snapshot == spec.snapshot
    assert admission.snapshot_text == (packet / "attention-metadata.json").read_text()
    assert admission.packet_json == read_descriptor(packet)


def test_tensors_are_the_bytes_read_and_exactly_promoted(packet):
    spec = synthetic_spec()
    tensors = admit(packet).tensors
    assert list(tensors) == list(TENSOR_NAMES)
    for name, tensor in tensors.items():
        dtype, bits = spec.tensors[name]
        assert tensor.dtype == dtype and tensor.shape == bits.shape
        assert tensor.bits.tobytes() == tensor_bytes(spec, name) == (packet / spec.tensor_files[name]).read_bytes()
        assert tensor.sha256 == hashlib.sha256(tensor.bits.tobytes()).hexdigest()
        assert not tensor.bits.flags.writeable and not tensor.values.flags.writeable
        assert tensor.values.dtype == np.float32
    widened = spec.tensors["storedKeys"][1].astype(np.uint32) << 16
    assert np.array_equal(tensors["storedKeys"].values.view(np.uint32), widened)
    assert np.array_equal(tensors["queries"].values.view(np.uint32), spec.tensors["queries"][1])


def test_the_package_exports_admit():
    assert lazily_exported_admit is admit


def test_packet_json_path_is_accepted(packet):
    assert admit(packet / "packet.json").refusals == ()


def test_symlinked_packet_directory_is_accepted(packet, tmp_path):
    os.symlink(packet, tmp_path / "link")
    assert admit(tmp_path / "link").refusals == ()


@pytest.mark.parametrize("target", ["nowhere", "nowhere/packet.json"])
def test_missing_packet(tmp_path, target):
    assert problems(admit(tmp_path / target)) == [("path_missing", None)]


def test_packet_path_that_is_a_regular_file(packet):
    assert problems(admit(packet / "queries.bin")) == [("path_not_regular", None)]


@NO_HANG
def test_packet_json_fifo(packet):
    (packet / "packet.json").unlink()
    os.mkfifo(packet / "packet.json")
    assert problems(admit(packet)) == [("path_not_regular", None)]
    assert problems(admit(packet / "packet.json")) == [("path_not_regular", None)]


def test_packet_json_escaping_symlink(packet, tmp_path):
    os.replace(packet / "packet.json", tmp_path / "elsewhere.json")
    os.symlink(tmp_path / "elsewhere.json", packet / "packet.json")
    assert problems(admit(packet)) == [("path_escape", None)]


@NO_HANG
@pytest.mark.parametrize("name, field", [("queries.bin", f"{Q}/file"), ("attention-metadata.json", "/metadata/file")])
def test_fifo_is_refused_without_hanging(packet, name, field):
    (packet / name).unlink()
    os.mkfifo(packet / name)
    admission = admit(packet)
    assert problems(admission) == [("path_not_regular", field)]
    # Tensor facts need the six tensor files only, whatever else is refused.
    assert (admission.tensors is None) == (name == "queries.bin")


def test_socket_is_refused(packet):
    (packet / "queries.bin").unlink()
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(os.fspath(packet / "queries.bin"))
        assert problems(admit(packet)) == [("path_not_regular", f"{Q}/file")]
    finally:
        server.close()


def test_device_is_refused(packet):
    (packet / "queries.bin").unlink()
    try:
        os.mknod(packet / "queries.bin", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    except (PermissionError, OSError) as error:
        pytest.skip(f"cannot create a device node here: {error}")
    assert problems(admit(packet)) == [("path_not_regular", f"{Q}/file")]


def test_symlink_inside_the_packet_is_accepted(packet):
    (packet / "data").mkdir()
    os.replace(packet / "queries.bin", packet / "data" / "q.bin")
    os.symlink("data/q.bin", packet / "queries.bin")
    descriptor = read_descriptor(packet)
    descriptor["tensors"]["output"]["file"] = "data/../data/../output.bin"  # '..' is refused before resolving
    write_descriptor(packet, descriptor)
    assert problems(admit(packet)) == [("path_invalid", "/tensors/output/file")]
    descriptor["tensors"]["output"]["file"] = "./output.bin"
    write_descriptor(packet, descriptor)
    admission = admit(packet)
    assert admission.refusals == () and admission.tensors is not None


def test_symlinked_directory_leaving_the_packet_is_refused(packet, tmp_path):
    (tmp_path / "outside").mkdir()
    os.replace(packet / "queries.bin", tmp_path / "outside" / "queries.bin")
    os.symlink(tmp_path / "outside", packet / "data")
    descriptor = read_descriptor(packet)
    descriptor["tensors"]["queries"]["file"] = "data/queries.bin"
    write_descriptor(packet, descriptor)
    assert problems(admit(packet)) == [("path_escape", f"{Q}/file")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of their mode")
def test_permission_denied_is_unreadable_with_the_os_text(packet):
    os.chmod(packet / "queries.bin", 0)
    admission = admit(packet)
    assert problems(admission) == [("file_unreadable", f"{Q}/file")]
    assert os.strerror(13) in admission.refusals[0].message


def test_symlink_loop_message_carries_the_os_text(packet):
    (packet / "queries.bin").unlink()
    os.symlink("b", packet / "queries.bin")
    os.symlink("queries.bin", packet / "b")
    admission = admit(packet)
    assert problems(admission) == [("file_unreadable", f"{Q}/file")]
    assert "symbolic links" in admission.refusals[0].message


def test_length_change_while_reading_is_a_byte_count_mismatch(packet, monkeypatch):
    real = files._read_at_most

    def growing(fd, limit, relative):
        data = real(fd, limit, relative)
        return data + b"\0" if relative == "queries.bin" else data

    monkeypatch.setattr(files, "_read_at_most", growing)
    admission = admit(packet)
    assert problems(admission) == [("byte_count_mismatch", f"{Q}/byteCount")]
    assert "while being read" in admission.refusals[0].message


def test_reads_never_exceed_the_declared_length_plus_one(packet, monkeypatch):
    limits = {}
    real = files._read_at_most

    def recording(fd, limit, relative):
        limits[relative] = limit
        return real(fd, limit, relative)

    monkeypatch.setattr(files, "_read_at_most", recording)
    admit(packet)
    descriptor = read_descriptor(packet)
    declared = {entry["file"]: entry["byteCount"] + 1 for entry in descriptor["tensors"].values()}
    declared[descriptor["metadata"]["file"]] = descriptor["metadata"]["byteCount"] + 1
    declared["packet.json"] = files.JSON_SIZE_LIMIT + 1
    assert limits == declared


def _declare_two_gigabytes(packet):
    descriptor = read_descriptor(packet)
    d = 2**27
    descriptor["tensors"]["queries"].update(shape=[1, 4, 1, d], packedStrides=[4 * d, d, d, 1], byteCount=16 * d)
    write_descriptor(packet, descriptor)


def test_declared_two_gigabyte_shape_is_refused_before_any_allocation(packet, monkeypatch):
    _declare_two_gigabytes(packet)
    opened = []
    real_open = files._open_inside
    monkeypatch.setattr(files, "_open_inside", lambda root, rel: opened.append(rel) or real_open(root, rel))
    tracemalloc.start()
    try:
        admission = admit(packet)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ("payload_too_large", f"{Q}/shape") in problems(admission)
    assert peak < ALLOCATION_CEILING
    assert "queries.bin" not in opened  # such a tensor file is not even opened
    assert admission.tensors is None


def test_over_limit_json_files_are_not_read(packet, monkeypatch):
    (packet / "attention-metadata.json").write_bytes(b" " * (files.JSON_SIZE_LIMIT + 1))
    reads = []
    real = files._read_at_most
    monkeypatch.setattr(files, "_read_at_most", lambda fd, limit, rel: reads.append(rel) or real(fd, limit, rel))
    admission = admit(packet)
    assert problems(admission) == [("json_too_large", "/metadata/file")]
    assert "attention-metadata.json" not in reads
    assert admission.metadata_sha256 is None and admission.snapshot is None and admission.snapshot_text is None


def test_hash_mismatch_keeps_tensors_out_but_reports_the_read_hash(packet):
    data = bytearray((packet / "stored-keys.bin").read_bytes())
    data[0] ^= 0x80
    (packet / "stored-keys.bin").write_bytes(bytes(data))
    admission = admit(packet)
    assert problems(admission) == [("sha256_mismatch", "/tensors/storedKeys/sha256")]
    assert hashlib.sha256(bytes(data)).hexdigest() in admission.refusals[0].message
    assert admission.tensors is None and admission.geometry is not None


def test_unverified_metadata_is_not_interpreted(packet):
    descriptor = read_descriptor(packet)
    descriptor["metadata"]["sha256"] = "0" * 64
    write_descriptor(packet, descriptor)
    admission = admit(packet)
    assert problems(admission) == [("sha256_mismatch", "/metadata/sha256")]
    assert admission.snapshot is None and admission.selection is None and admission.sample is None
    assert admission.scale is None and admission.kernel_output_dtype is None


def test_refusals_are_sorted_by_code_then_field(tmp_path):
    path = build(
        tmp_path / "packet",
        descriptor={
            "/tensors/output/dtype": "x",
            "/tensors/queries/dtype": "y",
            "/schema": "z",
            "/identity/backend": 1,
        },
    )
    admission = admit(path)
    keys = [(p.code, p.field) for p in admission.refusals]
    assert keys == sorted(keys) and len(keys) == 4
