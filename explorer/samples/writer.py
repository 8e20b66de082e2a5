"""One synthetic attention packet: spec, tensors, descriptor and files, as the engine writes them."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import field
from pathlib import Path

import numpy as np

from explorer.foundations.record import Record, record
from explorer.foundations.safeio import write_new
from explorer.packet.dtypes import BITS_DTYPE, promote, round_bits
from explorer.packet.files import PACKET_JSON
from explorer.packet.model import TENSOR_NAMES
from explorer.packet.schema import SCHEMA, row_major_strides
from explorer.packet.snapshot import decode_scale

DEFAULT_METADATA_FILE = "attention-metadata.json"
DEFAULT_TENSOR_FILES: Mapping[str, str] = {
    "queries": "queries.bin",
    "storedKeys": "stored-keys.bin",
    "storedValues": "stored-values.bin",
    "incomingKeys": "incoming-keys.bin",
    "incomingValues": "incoming-values.bin",
    "output": "output.bin",
}
SAMPLES_README = "README.md"
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # a link at the name is refused

DISPATCH = {"paged": "paged_fixed_decode", "contiguous": "contiguous_sdpa"}

# Synthetic selection identity (the values of docs/packet-format.md's example snapshot).
REQUEST_ID = 2
OUTPUT_INDEX = 62
SEED_TOKEN = 11346
TARGET_TOKEN = 6829
LAYER_INDEX = 3
PAGE_BLOCK_TOKENS = 16

# Magnitudes of the random inputs: standard deviations of q, K and V.
QUERY_STD = 2.0
KEY_STD = 1.0
VALUE_STD = 0.5

# The real Qwen3.6 capture geometry (QH16/KVH2/D256/T5585, all bfloat16).
QWEN_MODEL_ID = "Qwen3.6 (synthetic packet)"
QWEN_QUERY_HEADS = 16
QWEN_KV_HEADS = 2
QWEN_HEAD_DIM = 256
QWEN_FULL_TOKENS = 5585
QWEN_SMALL_TOKENS = 64
FULL_SAMPLE_NAME = "qwen36-bf16-full-t5585"


@record
class PacketSpec(Record):
    """Everything needed to write one packet: descriptor parts, the snapshot and each tensor's (dtype, bits)."""

    identity: dict
    geometry: dict
    capture: dict
    snapshot: dict
    tensors: Mapping[str, tuple[str, np.ndarray]]
    tensor_files: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_TENSOR_FILES))
    metadata_file: str = DEFAULT_METADATA_FILE


# ---------------------------------------------------------------- bits <-> values


def values_to_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round values to float32 and then (RNE) to `dtype`; returns a new array of native bit patterns."""
    return round_bits(np.asarray(values, dtype=np.float32), dtype).copy()


def bits_to_values(bits: np.ndarray, dtype: str) -> np.ndarray:
    """The exact float64 values of native bit patterns (a new array; a signaling NaN casts quietly)."""
    with np.errstate(invalid="ignore"):
        return promote(bits, dtype).astype(np.float64)


def float32_bits(value: float) -> int:
    """The IEEE-754 binary32 bit pattern of `value` rounded to float32."""
    return int(np.array([value], dtype=np.float32).view(np.uint32)[0])


def attention_output(spec_tensors: Mapping[str, tuple[str, np.ndarray]], scale: float) -> np.ndarray:
    """Float64 GQA softmax attention [1, QH, 1, D] from the promoted queries and stored K/V."""
    q = bits_to_values(spec_tensors["queries"][1], spec_tensors["queries"][0])[0, :, 0, :]
    k = bits_to_values(spec_tensors["storedKeys"][1], spec_tensors["storedKeys"][0])[0]
    v = bits_to_values(spec_tensors["storedValues"][1], spec_tensors["storedValues"][0])[0]
    qh, kvh = q.shape[0], k.shape[0]
    group = qh // kvh
    out = np.empty_like(q)
    with np.errstate(invalid="ignore", over="ignore"):
        for kv in range(kvh):
            rows = slice(kv * group, (kv + 1) * group)
            logits = (q[rows] @ k[kv].T) * scale
            weights = np.exp(logits - logits.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            out[rows] = weights @ v[kv]
    return out[None, :, None, :]


# ---------------------------------------------------------------- the synthetic packet


def _observed(dtype: str, shape: list[int], strides: list[int]) -> dict:
    return {"dtype": dtype, "shape": list(shape), "graphConstructionStrides": list(strides)}


def _storage(backend: str, kv_dtype: str, kvh: int, tokens: int, head_dim: int) -> dict:
    if backend == "paged":
        blocks = -(-tokens // PAGE_BLOCK_TOKENS)
        slab = [blocks, kvh, PAGE_BLOCK_TOKENS, head_dim]
        return {name: _observed(kv_dtype, slab, row_major_strides(slab)) for name in ("key_slab", "value_slab")}
    visible = [1, kvh, tokens, head_dim]
    # The contiguous cache is allocated for more tokens than are visible.
    capacity = [1, kvh, tokens + PAGE_BLOCK_TOKENS, head_dim]
    return {
        name: _observed(kv_dtype, visible, row_major_strides(capacity)) for name in ("visible_keys", "visible_values")
    }


def _synthetic_hash(label: str) -> str:
    return hashlib.sha256(f"synthetic attention packet: {label}".encode()).hexdigest()


def synthetic_spec(
    *,
    qh: int = 4,
    kvh: int = 2,
    tokens: int = 3,
    head_dim: int = 4,
    query_dtype: str = "float32",
    kv_dtype: str = "bfloat16",
    output_dtype: str = "float32",
    seed: int = 0,
    backend: str = "paged",
    kernel_output_dtype: str | None = None,
    scale: float | None = None,
    model_id: str = "synthetic-attention-model",
) -> PacketSpec:
    """A valid, analyzable packet with random inputs from a fixed seed, every field consistent with the tensors,
    and its float64 attention output rounded to `output_dtype`."""
    rng = np.random.default_rng(seed)
    scale = float(np.float32(1.0 / np.sqrt(head_dim))) if scale is None else scale
    kernel_output_dtype = output_dtype if kernel_output_dtype is None else kernel_output_dtype

    queries = values_to_bits(rng.normal(0.0, QUERY_STD, (1, qh, 1, head_dim)), query_dtype)
    stored_keys = values_to_bits(rng.normal(0.0, KEY_STD, (1, kvh, tokens, head_dim)), kv_dtype)
    stored_values = values_to_bits(rng.normal(0.0, VALUE_STD, (1, kvh, tokens, head_dim)), kv_dtype)
    tensors = {
        "queries": (query_dtype, queries),
        "storedKeys": (kv_dtype, stored_keys),
        "storedValues": (kv_dtype, stored_values),
        "incomingKeys": (kv_dtype, stored_keys[:, :, tokens - 1 :, :].copy()),
        "incomingValues": (kv_dtype, stored_values[:, :, tokens - 1 :, :].copy()),
    }
    scale_bits = float32_bits(scale)
    output = attention_output(tensors, decode_scale(scale_bits))
    tensors["output"] = (output_dtype, values_to_bits(output, output_dtype))

    fused = (qh + 2 * kvh) * head_dim  # q, k and v come out of one fused projection
    record = {
        "requestID": REQUEST_ID,
        "outputIndex": OUTPUT_INDEX,
        "phase": "decode",
        "batchIndex": 0,
        "batchSize": 1,
        "inputWidth": 1,
        "storageLayerIndex": LAYER_INDEX,
        "modelLayerIndex": LAYER_INDEX,
        "offsetBefore": tokens - 1,
        "offsetAfter": tokens,
        "scaleBits": scale_bits,
        "dispatch": DISPATCH[backend],
        "kernelOutputDType": kernel_output_dtype,
        "queries": _observed(query_dtype, [1, qh, 1, head_dim], [fused, head_dim, fused, 1]),
        "incomingKeys": _observed(kv_dtype, [1, kvh, 1, head_dim], [fused, head_dim, fused, 1]),
        "incomingValues": _observed(kv_dtype, [1, kvh, 1, head_dim], [fused, head_dim, fused, 1]),
        "output": _observed(output_dtype, [1, qh, 1, head_dim], row_major_strides([1, qh, 1, head_dim])),
        "storage": _storage(backend, kv_dtype, kvh, tokens, head_dim),
        "sinksPresent": False,
        "softcapPresent": False,
        "spansPresent": False,
    }
    snapshot = {
        "configuration": {"requestID": REQUEST_ID, "outputIndex": OUTPUT_INDEX, "maximumRecords": 1},
        "records": [record],
        "selectedForwards": 1,
        "expectedOwnerCount": 1,
        "forwardSucceeded": True,
        "sampleOutcome": "confirmed",
        "seedToken": SEED_TOKEN,
        "targetToken": TARGET_TOKEN,
        "refusals": {},
    }
    return PacketSpec(
        identity={
            "modelID": model_id,
            "artifactSHA256": _synthetic_hash(f"{model_id} weights"),
            "inputSHA256": _synthetic_hash(f"{model_id} input {seed}"),
            "backend": backend,
        },
        geometry={
            "attention": "full",
            "isBidirectional": False,
            "sharesKV": False,
            "mtpEnabled": False,
            "visibleStart": 0,
            "visibleEnd": tokens,
        },
        capture={"evaluationStatus": "completed"},
        snapshot=snapshot,
        tensors=tensors,
    )


def with_tensor(spec: PacketSpec, name: str, bits: np.ndarray) -> PacketSpec:
    """A copy of `spec` whose tensor `name` holds `bits` (same dtype)."""
    return dataclasses.replace(spec, tensors={**spec.tensors, name: (spec.tensors[name][0], bits)})


def with_snapshot(spec: PacketSpec, **changes) -> PacketSpec:
    """A copy of `spec` whose snapshot has the given top-level keys replaced."""
    return dataclasses.replace(spec, snapshot={**spec.snapshot, **changes})


# ---------------------------------------------------------------- bytes and files


def tensor_bytes(spec: PacketSpec, name: str) -> bytes:
    """The little-endian packed payload of tensor `name`."""
    dtype, bits = spec.tensors[name]
    return np.ascontiguousarray(bits, dtype=BITS_DTYPE[dtype]).tobytes()


def metadata_bytes(spec: PacketSpec) -> bytes:
    """The metadata file: the snapshot as UTF-8 JSON."""
    return (json.dumps(spec.snapshot, indent=2, allow_nan=False) + "\n").encode()


def tensor_entry(file: str, dtype: str, shape: list[int], payload: bytes) -> dict:
    """One tensor's descriptor as packet.json and a replay arm's result.json write it."""
    return {
        "file": file,
        "dtype": dtype,
        "byteOrder": "little",
        "shape": shape,
        "packedStrides": row_major_strides(shape),
        "byteCount": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }


def packet_descriptor(spec: PacketSpec, *, metadata: bytes | None = None) -> dict:
    """packet.json for `spec`, consistent with its tensors and `metadata` (default: `metadata_bytes(spec)`)."""
    metadata = metadata_bytes(spec) if metadata is None else metadata
    tensors = {}
    for name in TENSOR_NAMES:
        dtype, bits = spec.tensors[name]
        tensors[name] = tensor_entry(spec.tensor_files[name], dtype, list(bits.shape), tensor_bytes(spec, name))
    return {
        "schema": SCHEMA,
        "identity": dict(spec.identity),
        "metadata": {
            "file": spec.metadata_file,
            "byteCount": len(metadata),
            "sha256": hashlib.sha256(metadata).hexdigest(),
            "recordIndex": 0,
        },
        "geometry": dict(spec.geometry),
        "capture": {**spec.capture, "tensorPayloadBytes": sum(t["byteCount"] for t in tensors.values())},
        "tensors": tensors,
    }


def make_packet_files(
    spec: PacketSpec, *, descriptor: dict | None = None, metadata: bytes | None = None
) -> dict[str, bytes]:
    """Every file of the packet, relative name -> bytes; `metadata` and `descriptor` replace the default ones."""
    metadata = metadata_bytes(spec) if metadata is None else metadata
    descriptor = packet_descriptor(spec, metadata=metadata) if descriptor is None else descriptor
    files = {PACKET_JSON: (json.dumps(descriptor, indent=2) + "\n").encode(), spec.metadata_file: metadata}
    for name in TENSOR_NAMES:
        files[spec.tensor_files[name]] = tensor_bytes(spec, name)
    return files


@contextlib.contextmanager
def _subdirectory(parent: int, name: str) -> Iterator[int]:
    """The directory `name` inside the open directory `parent` (created if missing), never through a link."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent)
    fd = os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
    try:
        yield fd
    finally:
        os.close(fd)


def write_files(directory: str | os.PathLike, files: Mapping[str, bytes]) -> Path:
    """Write `files` (relative name -> bytes) into `directory` (created if needed), each by write_new: nothing
    replaced, no link followed."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    root = os.open(directory, DIRECTORY_FLAGS)
    try:
        for relative, data in files.items():
            *parents, name = relative.split("/")
            with contextlib.ExitStack() as opened:
                here = root
                for part in parents:
                    here = opened.enter_context(_subdirectory(here, part))
                write_new(name, data, dir_fd=here)
    finally:
        os.close(root)
    return directory


def write_packet(
    directory: str | os.PathLike, spec: PacketSpec, *, descriptor: dict | None = None, metadata: bytes | None = None
) -> Path:
    """Write the packet into `directory` (created if needed; never overwriting) and return the directory."""
    return write_files(directory, make_packet_files(spec, descriptor=descriptor, metadata=metadata))
