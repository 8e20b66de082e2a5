"""The case tables of the admission tests.

One real packet per case, and what admission must say about it.

Each case writes a valid synthetic packet (explorer.samples), then changes
packet.json, the snapshot (its hash following) or the files on disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from explorer.samples.packets import synthetic_spec

from packet_support import DELETE, build, with_tensor

TENSOR_LIMIT = 32 * 1024 * 1024
JSON_LIMIT = 256 * 1024


@dataclass(frozen=True)
class Case:
    """One packet: how it differs from the valid synthetic packet, and what admission must say."""

    id: str
    expected: list  # [(code, field)] for refusals, or [code] for inconclusive reasons
    descriptor: Any = None  # {pointer: value} changes of packet.json, or a callable on the dict
    snapshot: Any = None  # {pointer: value} changes of the snapshot (metadata hash follows)
    spec: Callable | None = None  # builds the PacketSpec (default synthetic_spec())
    metadata: bytes | None = None  # replaces the metadata file (its hash follows)
    after: Callable[[Path], None] | None = None  # changes files on disk after writing


def write_case(case: Case, directory: Path) -> Path:
    spec = case.spec() if case.spec else None
    path = build(directory, spec=spec, descriptor=case.descriptor, snapshot=case.snapshot, metadata=case.metadata)
    if case.after:
        case.after(path)
    return path


# ---------------------------------------------------------------- file changes


def flip_byte(name: str, offset: int = 0) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        data = bytearray((path / name).read_bytes())
        data[offset] ^= 0x01
        (path / name).write_bytes(bytes(data))

    return change


def resize(name: str, delta: int) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        data = (path / name).read_bytes()
        (path / name).write_bytes(data[:delta] if delta < 0 else data + b" " * delta)

    return change


def remove(name: str) -> Callable[[Path], None]:
    return lambda path: (path / name).unlink()


def symlink_loop(name: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        (path / name).unlink()
        os.symlink("loop-b", path / name)
        os.symlink(name, path / "loop-b")

    return change


def escape_symlink(name: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        outside = path.parent / f"outside-{name}"
        os.replace(path / name, outside)
        os.symlink(outside, path / name)

    return change


def replace_with_directory(name: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        (path / name).unlink()
        (path / name).mkdir()

    return change


def hard_link(name: str, target: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        (path / name).unlink()
        os.link(path / target, path / name)

    return change


def symlink_alias(name: str, target: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        (path / name).unlink()
        os.symlink(target, path / name)

    return change


def both(*changes: Callable[[Path], None]) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        for one in changes:
            one(path)

    return change


def pad_packet_json(path: Path) -> None:
    descriptor = json.loads((path / "packet.json").read_text())
    (path / "packet.json").write_text(json.dumps(descriptor) + " " * JSON_LIMIT)


# ---------------------------------------------------------------- spec changes


def _bits(name: str):
    return synthetic_spec().tensors[name][1]


def spec_output_heads():
    return with_tensor(synthetic_spec(), "output", _bits("output")[:, :2])


def spec_head_dim():
    return with_tensor(synthetic_spec(), "incomingValues", _bits("incomingValues")[..., :2])


def spec_qh_not_multiple():
    spec = with_tensor(synthetic_spec(), "queries", _bits("queries")[:, :3])
    return with_tensor(spec, "output", _bits("output")[:, :3])


def spec_stored_batch():
    spec = synthetic_spec()
    spec = with_tensor(spec, "storedKeys", np.concatenate([_bits("storedKeys")] * 2))
    return with_tensor(spec, "storedValues", np.concatenate([_bits("storedValues")] * 2))


def spec_incoming_tokens():
    return with_tensor(synthetic_spec(), "incomingKeys", np.concatenate([_bits("incomingKeys")] * 2, axis=2))


def spec_stored_tokens():
    return with_tensor(synthetic_spec(), "storedValues", _bits("storedValues")[:, :, :2])


def spec_kv_float16():
    return with_tensor(synthetic_spec(), "incomingKeys", _bits("incomingKeys"), dtype="float16")


def spec_cpu_terms():
    # 2 * 256 * 200 * 1024 = 104,857,600 multiply-add terms; about 2.6 MB of payload.
    return synthetic_spec(qh=256, kvh=1, tokens=200, head_dim=1024, query_dtype="bfloat16", output_dtype="bfloat16")


def record_copies(count: int):
    def change(snapshot: dict) -> None:
        snapshot["records"] = [snapshot["records"][0]] * count

    return change


def storage_entries(count: int):
    def change(snapshot: dict) -> None:
        entry = snapshot["records"][0]["storage"]["key_slab"]
        snapshot["records"][0]["storage"] = {f"slab_{index}": entry for index in range(count)}

    return change


def spec_three_query_heads():
    return with_tensor(synthetic_spec(), "queries", _bits("queries")[:, :3])


def huge_queries(descriptor: dict) -> None:
    d = 2**27  # 4 heads x 2^27 channels x 4 bytes = 2 GiB
    descriptor["tensors"]["queries"].update(shape=[1, 4, 1, d], packedStrides=[4 * d, d, d, 1], byteCount=16 * d)


def big_stored(descriptor: dict) -> None:
    t = 2**20  # 2 KV heads x 2^20 tokens x 4 channels x 2 bytes = 16 MiB each, 32 MiB + the rest together
    for name in ("storedKeys", "storedValues"):
        descriptor["tensors"][name].update(shape=[1, 2, t, 4], packedStrides=[8 * t, 4 * t, 4, 1], byteCount=16 * t)


# Every code of docs/packet-format.md (its refusal codes and inconclusive codes).
SPEC_REFUSAL_CODES = frozenset(
    {
        "field_invalid",
        "schema_unsupported",
        "tensor_set_invalid",
        "dtype_unsupported",
        "byte_order_unsupported",
        "shape_invalid",
        "strides_not_packed",
        "byte_count_shape_mismatch",
        "payload_total_mismatch",
        "snapshot_invalid",
        "record_budget_exceeded",
        "selection_identity_mismatch",
        "scale_invalid",
        "observed_tensor_mismatch",
        "tensor_geometry_mismatch",
        "visible_range_mismatch",
        "kv_dtype_mismatch",
        "path_invalid",
        "path_escape",
        "path_missing",
        "path_not_regular",
        "path_duplicate",
        "file_unreadable",
        "byte_count_mismatch",
        "sha256_mismatch",
        "json_too_large",
        "payload_too_large",
        "json_invalid",
    }
)
SPEC_REASON_CODES = frozenset(
    {
        "owner_selection_unsupported",
        "geometry_unsupported",
        "cpu_bound_exceeded",
        "forward_failed",
        "sample_not_confirmed",
        "selected_forwards_not_one",
        "snapshot_refusals",
        "sample_tokens_missing",
        "evaluation_not_completed",
    }
)

Q = "/tensors/queries"
R = "/records/0"
SHA_A = "a" * 64

REFUSED_CASES = [
    # section 2: packet.json field rules
    Case("schema-other", [("schema_unsupported", "/schema")], {"/schema": "darkbloom.attention-packet.v2"}),
    Case("schema-missing", [("schema_unsupported", "/schema")], {"/schema": DELETE}),
    Case("schema-number", [("schema_unsupported", "/schema")], {"/schema": 1}),
    Case("model-id-empty", [("field_invalid", "/identity/modelID")], {"/identity/modelID": ""}),
    Case("model-id-long", [("field_invalid", "/identity/modelID")], {"/identity/modelID": "m" * 513}),
    Case("artifact-upper", [("field_invalid", "/identity/artifactSHA256")], {"/identity/artifactSHA256": "A" * 64}),
    Case("input-short", [("field_invalid", "/identity/inputSHA256")], {"/identity/inputSHA256": "a" * 63}),
    Case("backend-other", [("field_invalid", "/identity/backend")], {"/identity/backend": "cuda"}),
    Case("identity-missing", [("field_invalid", "/identity")], {"/identity": DELETE}),
    Case("metadata-file-number", [("field_invalid", "/metadata/file")], {"/metadata/file": 5}),
    Case("metadata-count-zero", [("field_invalid", "/metadata/byteCount")], {"/metadata/byteCount": 0}),
    Case("metadata-count-over", [("field_invalid", "/metadata/byteCount")], {"/metadata/byteCount": JSON_LIMIT + 1}),
    Case("metadata-count-string", [("field_invalid", "/metadata/byteCount")], {"/metadata/byteCount": "1234"}),
    Case("metadata-sha-empty", [("field_invalid", "/metadata/sha256")], {"/metadata/sha256": ""}),
    Case("record-index-over", [("field_invalid", "/metadata/recordIndex")], {"/metadata/recordIndex": 128}),
    Case("record-index-float", [("field_invalid", "/metadata/recordIndex")], {"/metadata/recordIndex": 0.0}),
    Case("record-index-bool", [("field_invalid", "/metadata/recordIndex")], {"/metadata/recordIndex": False}),
    Case("attention-number", [("field_invalid", "/geometry/attention")], {"/geometry/attention": 1}),
    Case("bidirectional-int", [("field_invalid", "/geometry/isBidirectional")], {"/geometry/isBidirectional": 0}),
    Case("shares-kv-null", [("field_invalid", "/geometry/sharesKV")], {"/geometry/sharesKV": None}),
    Case("mtp-string", [("field_invalid", "/geometry/mtpEnabled")], {"/geometry/mtpEnabled": "false"}),
    Case("visible-start-float", [("field_invalid", "/geometry/visibleStart")], {"/geometry/visibleStart": 0.0}),
    Case("visible-end-zero", [("field_invalid", "/geometry/visibleEnd")], {"/geometry/visibleEnd": 0}),
    Case("geometry-array", [("field_invalid", "/geometry")], {"/geometry": []}),
    Case("evaluation-other", [("field_invalid", "/capture/evaluationStatus")], {"/capture/evaluationStatus": "done"}),
    Case("capture-missing", [("field_invalid", "/capture")], {"/capture": DELETE}),
    Case("payload-total-zero", [("field_invalid", "/capture/tensorPayloadBytes")], {"/capture/tensorPayloadBytes": 0}),
    Case(
        "payload-total-over",
        [("field_invalid", "/capture/tensorPayloadBytes")],
        {"/capture/tensorPayloadBytes": TENSOR_LIMIT + 1},
    ),
    Case(
        "payload-total-float",
        [("field_invalid", "/capture/tensorPayloadBytes")],
        {"/capture/tensorPayloadBytes": 256.0},
    ),
    Case("tensor-sha-upper", [("field_invalid", f"{Q}/sha256")], {f"{Q}/sha256": "A" * 64}),
    Case("tensor-count-string", [("field_invalid", f"{Q}/byteCount")], {f"{Q}/byteCount": "64"}),
    Case("tensor-entry-array", [("field_invalid", "/tensors/output")], {"/tensors/output": []}),
    Case("tensor-file-number", [("field_invalid", f"{Q}/file")], {f"{Q}/file": 7}),
    Case("tensor-set-missing", [("tensor_set_invalid", "/tensors")], {"/tensors/output": DELETE}),
    Case(
        "tensor-set-extra",
        [("tensor_set_invalid", "/tensors")],
        lambda d: d["tensors"].update(bias=dict(d["tensors"]["queries"])),
    ),
    Case("tensor-set-array", [("tensor_set_invalid", "/tensors")], {"/tensors": []}),
    Case("dtype-float64", [("dtype_unsupported", f"{Q}/dtype")], {f"{Q}/dtype": "float64"}),
    Case("dtype-missing", [("dtype_unsupported", f"{Q}/dtype")], {f"{Q}/dtype": DELETE}),
    Case("byte-order-big", [("byte_order_unsupported", f"{Q}/byteOrder")], {f"{Q}/byteOrder": "big"}),
    Case("byte-order-missing", [("byte_order_unsupported", f"{Q}/byteOrder")], {f"{Q}/byteOrder": DELETE}),
    Case("shape-three", [("shape_invalid", f"{Q}/shape")], {f"{Q}/shape": [1, 4, 1]}),
    Case("shape-zero", [("shape_invalid", f"{Q}/shape")], {f"{Q}/shape": [1, 4, 1, 0]}),
    Case("shape-float", [("shape_invalid", f"{Q}/shape")], {f"{Q}/shape": [1, 4, 1, 4.0]}),
    Case("shape-bool", [("shape_invalid", f"{Q}/shape")], {f"{Q}/shape": [1, True, 1, 4]}),
    Case("shape-string", [("shape_invalid", f"{Q}/shape")], {f"{Q}/shape": "1x4x1x4"}),
    Case("strides-wrong", [("strides_not_packed", f"{Q}/packedStrides")], {f"{Q}/packedStrides": [16, 4, 4, 2]}),
    Case("strides-short", [("strides_not_packed", f"{Q}/packedStrides")], {f"{Q}/packedStrides": [16, 4, 4]}),
    Case("strides-float", [("strides_not_packed", f"{Q}/packedStrides")], {f"{Q}/packedStrides": [16.0, 4, 4, 1]}),
    Case("strides-missing", [("strides_not_packed", f"{Q}/packedStrides")], {f"{Q}/packedStrides": DELETE}),
    Case("byte-count-odd", [("byte_count_shape_mismatch", f"{Q}/byteCount")], {f"{Q}/byteCount": 63}),
    Case("byte-count-zero", [("byte_count_shape_mismatch", f"{Q}/byteCount")], {f"{Q}/byteCount": 0}),
    Case(
        "byte-count-negative-shape-broken",
        [("byte_count_shape_mismatch", f"{Q}/byteCount"), ("shape_invalid", f"{Q}/shape")],
        {f"{Q}/byteCount": -64, f"{Q}/shape": [64]},
    ),
    Case(
        "payload-total-mismatch",
        [("payload_total_mismatch", "/capture/tensorPayloadBytes")],
        lambda d: d["capture"].update(tensorPayloadBytes=d["capture"]["tensorPayloadBytes"] + 1),
    ),
    # section 4: geometry between tensors
    Case("geometry-output-heads", [("tensor_geometry_mismatch", "/tensors")], spec=spec_output_heads),
    Case("geometry-head-dim", [("tensor_geometry_mismatch", "/tensors")], spec=spec_head_dim),
    Case("geometry-qh-not-multiple", [("tensor_geometry_mismatch", "/tensors")], spec=spec_qh_not_multiple),
    Case("geometry-batch", [("tensor_geometry_mismatch", "/tensors")], spec=spec_stored_batch),
    Case("geometry-incoming-tokens", [("tensor_geometry_mismatch", "/tensors")], spec=spec_incoming_tokens),
    Case("geometry-stored-tokens", [("tensor_geometry_mismatch", "/tensors")], spec=spec_stored_tokens),
    Case("kv-dtype", [("kv_dtype_mismatch", "/tensors")], spec=spec_kv_float16),
    Case("visible-start", [("visible_range_mismatch", "/geometry/visibleStart")], {"/geometry/visibleStart": 1}),
    Case("visible-end-vs-tokens", [("visible_range_mismatch", "/geometry/visibleEnd")], {"/geometry/visibleEnd": 2}),
    Case(
        "visible-offset-after",
        [("visible_range_mismatch", "/geometry/visibleEnd")],
        snapshot={f"{R}/offsetAfter": 4, f"{R}/offsetBefore": 3},
    ),
    Case("visible-offset-step", [("visible_range_mismatch", f"{R}/offsetAfter")], snapshot={f"{R}/offsetBefore": 1}),
    # section 5: files
    Case("path-empty", [("path_invalid", f"{Q}/file")], {f"{Q}/file": ""}),
    Case("path-parent", [("path_invalid", f"{Q}/file")], {f"{Q}/file": "../packet/queries.bin"}),
    Case("path-inner-parent", [("path_invalid", f"{Q}/file")], {f"{Q}/file": "sub/../queries.bin"}),
    Case("path-absolute", [("path_invalid", f"{Q}/file")], {f"{Q}/file": "/etc/hostname"}),
    Case("path-backslash", [("path_invalid", f"{Q}/file")], {f"{Q}/file": "sub\\queries.bin"}),
    Case("path-nul", [("path_invalid", f"{Q}/file")], {f"{Q}/file": "queries.bin\u0000"}),
    Case("path-invalid-metadata", [("path_invalid", "/metadata/file")], {"/metadata/file": "../x.json"}),
    Case("path-escape", [("path_escape", f"{Q}/file")], after=escape_symlink("queries.bin")),
    Case("path-escape-metadata", [("path_escape", "/metadata/file")], after=escape_symlink("attention-metadata.json")),
    Case("path-missing", [("path_missing", f"{Q}/file")], {f"{Q}/file": "absent.bin"}),
    Case("path-missing-below-file", [("path_missing", f"{Q}/file")], {f"{Q}/file": "queries.bin/x"}),
    Case("path-missing-metadata", [("path_missing", "/metadata/file")], after=remove("attention-metadata.json")),
    Case("path-directory", [("path_not_regular", f"{Q}/file")], after=replace_with_directory("queries.bin")),
    Case("path-packet-dir-itself", [("path_not_regular", f"{Q}/file")], {f"{Q}/file": "."}),
    Case(
        "duplicate-name",
        [("path_duplicate", "/tensors/storedValues/file")],
        {"/tensors/storedValues/file": "stored-keys.bin"},
    ),
    Case("duplicate-packet-json", [("path_duplicate", "/metadata/file")], {"/metadata/file": "packet.json"}),
    Case(
        "duplicate-hard-link",
        [("path_duplicate", "/tensors/output/file")],
        after=hard_link("output.bin", "queries.bin"),
    ),
    Case(
        "duplicate-symlink",
        [("path_duplicate", "/tensors/output/file")],
        after=symlink_alias("output.bin", "queries.bin"),
    ),
    Case("unreadable-symlink-loop", [("file_unreadable", f"{Q}/file")], after=symlink_loop("queries.bin")),
    Case("byte-count-truncated", [("byte_count_mismatch", f"{Q}/byteCount")], after=resize("queries.bin", -1)),
    Case("byte-count-longer", [("byte_count_mismatch", f"{Q}/byteCount")], after=resize("queries.bin", 1)),
    Case(
        "byte-count-metadata",
        [("byte_count_mismatch", "/metadata/byteCount")],
        after=resize("attention-metadata.json", 1),
    ),
    Case("sha-flipped", [("sha256_mismatch", f"{Q}/sha256")], after=flip_byte("queries.bin")),
    Case(
        "sha-two-files",
        [("sha256_mismatch", f"{Q}/sha256"), ("sha256_mismatch", "/tensors/storedKeys/sha256")],
        after=both(flip_byte("queries.bin"), flip_byte("stored-keys.bin", 5)),
    ),
    Case("sha-declared-other", [("sha256_mismatch", "/tensors/output/sha256")], {"/tensors/output/sha256": SHA_A}),
    Case("sha-metadata", [("sha256_mismatch", "/metadata/sha256")], after=flip_byte("attention-metadata.json", 3)),
    Case("json-too-large-packet", [("json_too_large", None)], after=pad_packet_json),
    Case(
        "json-too-large-metadata",
        [("json_too_large", "/metadata/file")],
        lambda d: d["metadata"].update(byteCount=JSON_LIMIT),
        metadata=b"{}" + b" " * JSON_LIMIT,
    ),
    Case(
        "payload-too-large-2gb",
        [
            ("observed_tensor_mismatch", f"{R}/queries/shape"),
            ("payload_too_large", f"{Q}/shape"),
            ("payload_total_mismatch", "/capture/tensorPayloadBytes"),
            ("tensor_geometry_mismatch", "/tensors"),
        ],
        huge_queries,
    ),
    Case(
        "payload-too-large-sum",
        [
            ("payload_too_large", "/tensors"),
            ("payload_total_mismatch", "/capture/tensorPayloadBytes"),
            ("visible_range_mismatch", "/geometry/visibleEnd"),
        ],
        big_stored,
    ),
    Case("packet-json-invalid", [("json_invalid", None)], after=lambda p: (p / "packet.json").write_text("{")),
    Case("packet-json-missing", [("path_missing", None)], after=remove("packet.json")),
    Case("packet-json-directory", [("path_not_regular", None)], after=replace_with_directory("packet.json")),
    Case("metadata-json-invalid", [("json_invalid", "/metadata/file")], metadata=b'{"records": NaN}'),
    Case("metadata-json-array", [("json_invalid", "/metadata/file")], metadata=b"[]"),
    Case("metadata-not-utf8", [("json_invalid", "/metadata/file")], metadata=b'{"a": "\xff"}'),
    # section 3: the snapshot
    Case("config-missing", [("snapshot_invalid", "/configuration")], snapshot={"/configuration": DELETE}),
    Case(
        "request-id-zero",
        [("snapshot_invalid", "/configuration/requestID")],
        snapshot={"/configuration/requestID": 0, f"{R}/requestID": 0},
    ),
    Case(
        "request-id-over",
        [("snapshot_invalid", "/configuration/requestID")],
        snapshot={"/configuration/requestID": 2**64, f"{R}/requestID": 2**64},
    ),
    Case(
        "output-index-over",
        [("snapshot_invalid", "/configuration/outputIndex")],
        snapshot={"/configuration/outputIndex": 1_000_001, f"{R}/outputIndex": 1_000_001},
    ),
    Case(
        "maximum-records-zero",
        [("snapshot_invalid", "/configuration/maximumRecords")],
        snapshot={"/configuration/maximumRecords": 0},
    ),
    Case("records-empty", [("snapshot_invalid", "/records")], snapshot={"/records": []}),
    Case("records-over-128", [("snapshot_invalid", "/records")], snapshot=record_copies(129)),
    Case(
        "records-second-not-object",
        [("snapshot_invalid", "/records/1")],
        snapshot=lambda s: (s["records"].append(1), s["configuration"].update(maximumRecords=2)),
    ),
    Case("record-not-object", [("snapshot_invalid", "/records/0")], snapshot={"/records/0": "record"}),
    Case("selected-forwards-over", [("snapshot_invalid", "/selectedForwards")], snapshot={"/selectedForwards": 129}),
    Case("owner-count-zero", [("snapshot_invalid", "/expectedOwnerCount")], snapshot={"/expectedOwnerCount": 0}),
    Case(
        "forward-succeeded-string", [("snapshot_invalid", "/forwardSucceeded")], snapshot={"/forwardSucceeded": "yes"}
    ),
    Case("sample-outcome-other", [("snapshot_invalid", "/sampleOutcome")], snapshot={"/sampleOutcome": "maybe"}),
    Case("seed-token-negative", [("snapshot_invalid", "/seedToken")], snapshot={"/seedToken": -1}),
    Case("target-token-over", [("snapshot_invalid", "/targetToken")], snapshot={"/targetToken": 2**31}),
    Case("refusals-zero-count", [("snapshot_invalid", "/refusals/a~1b")], snapshot={"/refusals": {"a/b": 0}}),
    Case("refusals-array", [("snapshot_invalid", "/refusals")], snapshot={"/refusals": []}),
    Case("record-request-string", [("snapshot_invalid", f"{R}/requestID")], snapshot={f"{R}/requestID": "2"}),
    Case("record-phase-number", [("snapshot_invalid", f"{R}/phase")], snapshot={f"{R}/phase": 5}),
    Case("record-batch-size-zero", [("snapshot_invalid", f"{R}/batchSize")], snapshot={f"{R}/batchSize": 0}),
    Case("record-offset-negative", [("snapshot_invalid", f"{R}/offsetBefore")], snapshot={f"{R}/offsetBefore": -1}),
    Case(
        "record-kernel-dtype",
        [("snapshot_invalid", f"{R}/kernelOutputDType")],
        snapshot={f"{R}/kernelOutputDType": "float64"},
    ),
    Case(
        "record-observed-dtype", [("snapshot_invalid", f"{R}/queries/dtype")], snapshot={f"{R}/queries/dtype": "int8"}
    ),
    Case(
        "record-observed-shape-long",
        [("snapshot_invalid", f"{R}/output/shape")],
        snapshot={f"{R}/output/shape": [1] * 9, f"{R}/output/graphConstructionStrides": [1] * 9},
    ),
    Case(
        "record-observed-strides",
        [("snapshot_invalid", f"{R}/queries/graphConstructionStrides")],
        snapshot={f"{R}/queries/graphConstructionStrides": [1, 2, 3]},
    ),
    Case("record-storage-empty", [("snapshot_invalid", f"{R}/storage")], snapshot={f"{R}/storage": {}}),
    Case("record-storage-65", [("snapshot_invalid", f"{R}/storage")], snapshot=storage_entries(65)),
    Case("record-flag-int", [("snapshot_invalid", f"{R}/sinksPresent")], snapshot={f"{R}/sinksPresent": 0}),
    Case("record-budget", [("record_budget_exceeded", "/records")], snapshot=record_copies(2)),
    Case("identity-request", [("selection_identity_mismatch", f"{R}/requestID")], snapshot={f"{R}/requestID": 3}),
    Case(
        "identity-output-index",
        [("selection_identity_mismatch", f"{R}/outputIndex")],
        snapshot={f"{R}/outputIndex": 61},
    ),
    Case("scale-zero", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": 0}),
    Case("scale-infinite", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": 0x7F800000}),
    Case("scale-nan", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": 0x7FC00000}),
    Case("scale-negative", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": 0xBD800000}),
    Case("scale-over-32-bits", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": 2**32}),
    Case("scale-minus-one", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": -1}),
    Case("scale-float", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": 0.0625}),
    Case("scale-missing", [("scale_invalid", f"{R}/scaleBits")], snapshot={f"{R}/scaleBits": DELETE}),
    Case(
        "observed-dtype",
        [("observed_tensor_mismatch", f"{R}/queries/dtype")],
        snapshot={f"{R}/queries/dtype": "bfloat16"},
    ),
    Case(
        "observed-shape",
        [("observed_tensor_mismatch", f"{R}/output/shape")],
        snapshot={f"{R}/output/shape": [1, 4, 1, 8]},
    ),
    Case(
        "observed-storage-dtype",
        [("observed_tensor_mismatch", f"{R}/storage/key_slab/dtype")],
        snapshot={f"{R}/storage/key_slab/dtype": "float16"},
    ),
]

# Section 6 cascades: a check whose input is already broken is skipped.
CASCADE_CASES = [
    Case(
        "length-mismatch-not-hashed",
        [("byte_count_mismatch", f"{Q}/byteCount")],
        after=both(resize("queries.bin", -1), flip_byte("queries.bin")),
    ),
    Case(
        "missing-file-not-measured", [("path_missing", f"{Q}/file")], {f"{Q}/file": "absent.bin", f"{Q}/sha256": SHA_A}
    ),
    Case(
        "broken-descriptor-no-geometry",
        [("shape_invalid", "/tensors/storedKeys/shape")],
        {"/tensors/storedKeys/shape": [1, 2, 3, 4, 1]},
    ),
    Case(
        "broken-descriptor-no-observed-check",
        [("dtype_unsupported", f"{Q}/dtype")],
        {f"{Q}/dtype": "float64"},
        snapshot={f"{R}/queries/dtype": "bfloat16"},
    ),
    Case(
        "invalid-byte-count-no-total",
        [("byte_count_shape_mismatch", f"{Q}/byteCount")],
        lambda d: (d["tensors"]["queries"].update(byteCount=65), d["capture"].update(tensorPayloadBytes=999)),
    ),
    Case(
        "set-invalid-no-geometry-or-total",
        [("tensor_set_invalid", "/tensors")],
        {"/tensors/incomingKeys": DELETE},
        spec=spec_three_query_heads,
    ),
    Case("set-valid-geometry-checked", [("tensor_geometry_mismatch", "/tensors")], spec=spec_three_query_heads),
    Case(
        "metadata-hash-not-interpreted",
        [("sha256_mismatch", "/metadata/sha256")],
        lambda d: d["metadata"].update(sha256=SHA_A),
        snapshot={f"{R}/scaleBits": 0, "/sampleOutcome": "maybe"},
    ),
    Case(
        "structural-record-no-cross-checks",
        [("snapshot_invalid", f"{R}/phase")],
        snapshot={f"{R}/phase": 5, f"{R}/requestID": 3, f"{R}/offsetBefore": 0, f"{R}/queries/dtype": "bfloat16"},
    ),
    Case(
        "scale-invalid-keeps-cross-checks",
        [("scale_invalid", f"{R}/scaleBits"), ("selection_identity_mismatch", f"{R}/requestID")],
        snapshot={f"{R}/scaleBits": 0, f"{R}/requestID": 3},
    ),
    Case(
        "refused-packet-has-no-reasons",
        [("sha256_mismatch", f"{Q}/sha256")],
        snapshot={"/sampleOutcome": "discarded", "/forwardSucceeded": False},
        after=flip_byte("queries.bin"),
    ),
    Case(
        "many-problems-at-once",
        [
            ("field_invalid", "/identity/modelID"),
            ("path_missing", "/tensors/output/file"),
            ("scale_invalid", f"{R}/scaleBits"),
            ("schema_unsupported", "/schema"),
            ("sha256_mismatch", f"{Q}/sha256"),
            ("strides_not_packed", "/tensors/storedKeys/packedStrides"),
        ],
        {
            "/schema": "x",
            "/identity/modelID": "",
            "/tensors/output/file": "gone.bin",
            "/tensors/storedKeys/packedStrides": [1, 1, 1, 1],
        },
        snapshot={f"{R}/scaleBits": 0x7F800000},
        after=flip_byte("queries.bin", 7),
    ),
]

INCONCLUSIVE_CASES = [
    Case("owner-count", ["owner_selection_unsupported"], snapshot={"/expectedOwnerCount": 2}),
    Case(
        "owner-records",
        ["owner_selection_unsupported"],
        snapshot=lambda s: (s["records"].append(s["records"][0]), s["configuration"].update(maximumRecords=2)),
    ),
    Case("owner-record-index", ["owner_selection_unsupported"], {"/metadata/recordIndex": 1}),
    Case("geometry-attention", ["geometry_unsupported"], {"/geometry/attention": "sliding"}),
    Case("geometry-bidirectional", ["geometry_unsupported"], {"/geometry/isBidirectional": True}),
    Case("geometry-shares-kv", ["geometry_unsupported"], {"/geometry/sharesKV": True}),
    Case("geometry-mtp", ["geometry_unsupported"], {"/geometry/mtpEnabled": True}),
    Case("geometry-sinks", ["geometry_unsupported"], snapshot={f"{R}/sinksPresent": True}),
    Case("geometry-softcap", ["geometry_unsupported"], snapshot={f"{R}/softcapPresent": True}),
    Case("geometry-spans", ["geometry_unsupported"], snapshot={f"{R}/spansPresent": True}),
    Case("geometry-batch-size", ["geometry_unsupported"], snapshot={f"{R}/batchSize": 2}),
    Case("geometry-batch-index", ["geometry_unsupported"], snapshot={f"{R}/batchIndex": 1}),
    Case("geometry-input-width", ["geometry_unsupported"], snapshot={f"{R}/inputWidth": 2}),
    Case("geometry-phase", ["geometry_unsupported"], snapshot={f"{R}/phase": "prefill"}),
    Case("geometry-dispatch", ["geometry_unsupported"], snapshot={f"{R}/dispatch": "contiguous_sdpa"}),
    Case(
        "geometry-dispatch-contiguous",
        ["geometry_unsupported"],
        spec=lambda: synthetic_spec(backend="contiguous"),
        snapshot={f"{R}/dispatch": "paged_fixed_decode"},
    ),
    Case("cpu-query-heads", ["cpu_bound_exceeded"], spec=lambda: synthetic_spec(qh=257, kvh=1)),
    Case("cpu-head-dim", ["cpu_bound_exceeded"], spec=lambda: synthetic_spec(qh=1, kvh=1, tokens=1, head_dim=1025)),
    Case("cpu-terms", ["cpu_bound_exceeded"], spec=spec_cpu_terms),
    Case("forward-failed", ["forward_failed"], snapshot={"/forwardSucceeded": False}),
    Case("not-confirmed", ["sample_not_confirmed"], snapshot={"/sampleOutcome": "discarded"}),
    Case("selected-forwards-zero", ["selected_forwards_not_one"], snapshot={"/selectedForwards": 0}),
    Case("selected-forwards-two", ["selected_forwards_not_one"], snapshot={"/selectedForwards": 2}),
    Case("snapshot-refusals", ["snapshot_refusals"], snapshot={"/refusals": {"capture_busy": 1}}),
    Case("seed-token-null", ["sample_tokens_missing"], snapshot={"/seedToken": None}),
    Case("target-token-absent", ["sample_tokens_missing"], snapshot={"/targetToken": DELETE}),
    Case("evaluation-failed", ["evaluation_not_completed"], {"/capture/evaluationStatus": "failed"}),
    Case("evaluation-not-evaluated", ["evaluation_not_completed"], {"/capture/evaluationStatus": "not_evaluated"}),
    Case(
        "all-reasons-in-table-order",
        [
            "owner_selection_unsupported",
            "geometry_unsupported",
            "cpu_bound_exceeded",
            "forward_failed",
            "sample_not_confirmed",
            "selected_forwards_not_one",
            "snapshot_refusals",
            "sample_tokens_missing",
            "evaluation_not_completed",
        ],
        {"/capture/evaluationStatus": "failed", "/geometry/attention": "local"},
        spec=lambda: synthetic_spec(qh=257, kvh=1),
        snapshot={
            "/expectedOwnerCount": 3,
            "/forwardSucceeded": False,
            "/sampleOutcome": "forward_failed",
            "/selectedForwards": 0,
            "/refusals": {"x": 2},
            "/seedToken": None,
        },
    ),
]

# Supported variants that add no reason.
ANALYZABLE_CASES = [
    Case("valid", []),
    Case("chained-decode", [], snapshot={f"{R}/phase": "chained_decode"}),
    Case("segmented-dispatch", [], snapshot={f"{R}/dispatch": "paged_segmented_decode"}),
    Case("contiguous-backend", [], spec=lambda: synthetic_spec(backend="contiguous")),
    Case("snapshot-extra-keys-kept", [], snapshot={"/unknownExtra": {"kept": [1, 2]}}),
    Case("extra-keys-ignored", [], lambda d: d.update(note={"any": [None, 1.5]})),
    Case(
        "all-16-bit",
        [],
        spec=lambda: synthetic_spec(query_dtype="float16", kv_dtype="float16", output_dtype="bfloat16"),
    ),
    Case("maximum-records-128", [], snapshot={"/configuration/maximumRecords": 128}),
    Case("negative-strides-observed", [], snapshot={f"{R}/queries/graphConstructionStrides": [0, -4, 3, 1]}),
]


def ids(cases: list[Case]) -> list[str]:
    return [case.id for case in cases]
