"""Analysis.arrays(): a packet's six tensors as numpy arrays in their native dtype, bit for bit.

Every bfloat16 and float16 pattern (NaN payloads and signaling NaNs included) comes back as written on disk;
each array has its format's dtype; a refused packet gives a clear error and no arrays.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.analyze import analyze
from explorer.analysis.arrays import REFUSED_PACKET
from explorer.packet.model import REFUSED, TENSOR_NAMES
from explorer.samples.packets import (
    packet_descriptor,
    synthetic_spec,
    with_tensor,
    write_packet,
    write_refused,
)

ALL_16_BIT = np.arange(1 << 16, dtype=np.uint16)  # every bfloat16 / float16 pattern once
# [1, QH, 1, D] and [1, KVH, T, D] shapes holding exactly 65,536 elements each.
QUERY_HEADS, KV_HEADS, TOKENS, HEAD_DIM = 256, 2, 128, 256
# float32 patterns with payloads: quiet and signaling NaNs of both signs, infinities, -0, the smallest subnormal.
FLOAT32_PATTERNS = (0x7FC00001, 0xFFC12345, 0x7F800001, 0xFFA00F00, 0x7F800000, 0xFF800000, 0x80000000, 0x00000001)
FLOAT16_NANS = 2 * ((1 << 10) - 1)  # exponent all ones, mantissa not zero, either sign
BFLOAT16_NANS = 2 * ((1 << 7) - 1)
NATIVE = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def _every_pattern_spec():
    """float16 queries and output, bfloat16 K/V; each tensor holds every 16-bit pattern of its format."""
    spec = synthetic_spec(
        qh=QUERY_HEADS,
        kvh=KV_HEADS,
        tokens=TOKENS,
        head_dim=HEAD_DIM,
        query_dtype="float16",
        kv_dtype="bfloat16",
        output_dtype="float16",
    )
    query_shape, kv_shape = (1, QUERY_HEADS, 1, HEAD_DIM), (1, KV_HEADS, TOKENS, HEAD_DIM)
    spec = with_tensor(spec, "queries", ALL_16_BIT.reshape(query_shape))
    spec = with_tensor(spec, "output", ALL_16_BIT[::-1].reshape(query_shape).copy())
    stored_keys = ALL_16_BIT.reshape(kv_shape)
    stored_values = np.roll(ALL_16_BIT, 12345).reshape(kv_shape)
    spec = with_tensor(spec, "storedKeys", stored_keys)
    spec = with_tensor(spec, "storedValues", stored_values)
    spec = with_tensor(spec, "incomingKeys", stored_keys[:, :, TOKENS - 1 :, :].copy())
    return with_tensor(spec, "incomingValues", stored_values[:, :, TOKENS - 1 :, :].copy())


@pytest.fixture(scope="module")
def every_pattern(tmp_path_factory):
    spec = _every_pattern_spec()
    directory = write_packet(tmp_path_factory.mktemp("arrays") / "every-pattern", spec)
    return spec, directory, analyze(directory)


def _on_disk(directory, spec, name: str) -> np.ndarray:
    """The tensor file's bytes as unsigned patterns, read directly (the oracle)."""
    _, bits = spec.tensors[name]
    file = packet_descriptor(spec)["tensors"][name]["file"]
    return np.fromfile(directory / file, dtype=bits.dtype).reshape(bits.shape)


def test_every_bfloat16_and_float16_pattern_comes_back_bit_for_bit(every_pattern):
    spec, directory, analysis = every_pattern
    assert analysis.status != REFUSED
    arrays = analysis.arrays()
    for name in TENSOR_NAMES:
        assert np.array_equal(arrays[name].view(np.uint16), _on_disk(directory, spec, name)), name
    assert np.array_equal(arrays["queries"].view(np.uint16).ravel(), ALL_16_BIT)  # every float16 pattern
    assert np.array_equal(arrays["storedKeys"].view(np.uint16).ravel(), ALL_16_BIT)  # every bfloat16 pattern
    with np.errstate(invalid="ignore"):  # the arrays are the formats themselves: numpy sees each NaN as one
        assert np.isnan(arrays["queries"]).sum() == FLOAT16_NANS
        assert np.isnan(arrays["storedKeys"]).sum() == BFLOAT16_NANS


def test_each_array_has_its_formats_native_dtype_and_shape(every_pattern):
    spec, _, analysis = every_pattern
    arrays = analysis.arrays()
    assert list(arrays) == list(TENSOR_NAMES)
    for name, array in arrays.items():
        dtype, bits = spec.tensors[name]
        assert array.dtype == NATIVE[dtype], name
        assert array.shape == bits.shape, name
        assert not array.flags.writeable, name
    assert arrays["storedValues"].dtype == ml_dtypes.bfloat16
    assert arrays["queries"].dtype == np.float16


def test_float32_nan_payloads_come_back_bit_for_bit(tmp_path):
    spec = synthetic_spec()  # float32 queries and output, bfloat16 K/V
    patterns = spec.tensors["output"][1].copy()
    patterns.ravel()[: len(FLOAT32_PATTERNS)] = FLOAT32_PATTERNS
    spec = with_tensor(spec, "output", patterns)
    arrays = analyze(write_packet(tmp_path / "payloads", spec)).arrays()
    assert arrays["output"].dtype == np.float32
    assert arrays["queries"].dtype == np.float32 and arrays["storedKeys"].dtype == ml_dtypes.bfloat16
    assert np.array_equal(arrays["output"].view(np.uint32), patterns)
    assert tuple(int(p) for p in arrays["output"].view(np.uint32).ravel()[: len(FLOAT32_PATTERNS)]) == (
        FLOAT32_PATTERNS
    )


def test_a_refused_packet_gives_a_clear_error_and_no_arrays(tmp_path):
    analysis = analyze(write_refused(tmp_path / "refused"))
    assert analysis.status == REFUSED
    codes = ", ".join(dict.fromkeys(problem.code for problem in analysis.admission.refusals))
    with pytest.raises(ValueError, match="was refused") as raised:
        analysis.arrays()
    assert str(raised.value) == REFUSED_PACKET.format(codes=codes)
    assert "sha256_mismatch" in str(raised.value)


def test_a_packet_refused_with_intact_tensor_files_still_gives_no_arrays(tmp_path):
    spec = synthetic_spec()
    descriptor = packet_descriptor(spec)
    descriptor["identity"]["backend"] = "no-such-backend"
    analysis = analyze(write_packet(tmp_path / "bad-backend", spec, descriptor=descriptor))
    assert analysis.status == REFUSED
    with pytest.raises(ValueError, match="was refused"):
        analysis.arrays()
