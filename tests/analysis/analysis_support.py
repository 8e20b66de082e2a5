"""Test helpers: Admission / NativeTensor records built from float arrays, and an FP64 oracle.

Test helpers: build Admission / NativeTensor records directly from float arrays (no files), and an FP64
oracle.
"""

from __future__ import annotations

import hashlib

import ml_dtypes
import numpy as np

from explorer.packet.model import Admission, NativeTensor

FLOAT_TYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
BITS_TYPES = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32}
DTYPE_NAMES = tuple(FLOAT_TYPES)


def to_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """float values rounded to `dtype` by ml_dtypes / numpy casts, as native bit patterns."""
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = np.asarray(values, dtype=np.float64).astype(np.float32).astype(FLOAT_TYPES[dtype])
    return narrow.view(BITS_TYPES[dtype])


def from_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values of native bit patterns (ml_dtypes / numpy casts)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(bits).view(FLOAT_TYPES[dtype]).astype(np.float32)


def native(name: str, dtype: str, bits: np.ndarray) -> NativeTensor:
    bits = np.ascontiguousarray(bits)
    bits.flags.writeable = False
    tensor = NativeTensor(
        name=name,
        dtype=dtype,
        shape=tuple(bits.shape),
        byte_count=bits.nbytes,
        sha256=hashlib.sha256(bits.tobytes()).hexdigest(),
        bits=bits,
    )
    # the lazy promotion agrees with ml_dtypes' own conversion, bit for bit (NaN payloads included)
    assert np.array_equal(tensor.values.view(np.uint32), from_bits(bits, dtype).view(np.uint32))
    return tensor


def make_admission(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    output: np.ndarray,
    *,
    dtypes: tuple[str, str, str] = ("float32", "float32", "float32"),
    scale: float = 1.0,
    kernel_output_dtype: str | None = None,
    bits: dict[str, np.ndarray] | None = None,
) -> Admission:
    """An admitted packet from float arrays q [QH, D], K / V [KVH, T, D], output [QH, D].

    `dtypes` are the (queries, K/V, output) dtypes; incoming K/V repeat the last
    stored row. `bits` overrides the native patterns of named tensors (4-D, any of the six).
    """
    query_dtype, kv_dtype, output_dtype = dtypes
    arrays = {
        "queries": (query_dtype, to_bits(np.asarray(queries)[None, :, None, :], query_dtype)),
        "storedKeys": (kv_dtype, to_bits(np.asarray(keys)[None], kv_dtype)),
        "storedValues": (kv_dtype, to_bits(np.asarray(values)[None], kv_dtype)),
        "output": (output_dtype, to_bits(np.asarray(output)[None, :, None, :], output_dtype)),
    }
    arrays["incomingKeys"] = (kv_dtype, arrays["storedKeys"][1][:, :, -1:, :])
    arrays["incomingValues"] = (kv_dtype, arrays["storedValues"][1][:, :, -1:, :])
    for name, pattern in (bits or {}).items():
        arrays[name] = (arrays[name][0], pattern)
    tensors = {name: native(name, dtype, b) for name, (dtype, b) in arrays.items()}
    qh, d = np.asarray(queries).shape
    kvh, t, _ = np.asarray(keys).shape
    return Admission(
        path="<in memory>",
        packet_sha256="0" * 64,
        metadata_sha256="1" * 64,
        refusals=(),
        reasons=(),
        packet_json=None,
        packet_text=None,
        snapshot=None,
        snapshot_text=None,
        identity={
            "modelID": "test",
            "artifactSHA256": "2" * 64,
            "inputSHA256": "3" * 64,
            "backend": "paged",
            "authenticated": False,
        },
        selection=None,
        sample=None,
        geometry={"queryHeads": qh, "kvHeads": kvh, "groupSize": qh // kvh, "headDim": d, "tokens": t},
        tensors=tensors,
        scale=float(np.float32(scale)),
        kernel_output_dtype=output_dtype if kernel_output_dtype is None else kernel_output_dtype,
    )


def oracle(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """FP64 GQA softmax attention, one query head at a time (independent of explorer.analysis.reference)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    group = q.shape[0] // k.shape[0]
    out = np.empty_like(q)
    for h in range(q.shape[0]):
        kv = h // group
        logits = np.array([np.dot(k[kv, t], q[h]) for t in range(k.shape[1])]) * scale
        weights = np.exp(logits - logits.max())
        weights /= weights.sum()
        out[h] = weights @ v[kv]
    return out
