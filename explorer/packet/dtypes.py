"""Bit-exact float16 / bfloat16 / float32 decoding, RNE rounding and bit classification; no I/O.

Every conversion works on integer bit patterns, so it is exact for every pattern (signed zeros, subnormals,
infinities, NaN payloads and the quiet bit) whatever a CPU does with signaling NaNs. ml_dtypes is not imported:
its import costs more than bfloat16's `bits << 16`, and its cast would replace every NaN with 0x7fc0.
`round_bits` truncates a NaN's mantissa (a zero one becomes 1), so `round_bits(promote(bits))` is `bits`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from explorer.packet.formats import DTYPES, FIELD_BITS, ITEM_SIZE  # noqa: F401  (re-exported)

# Codes of a value's kind, as the nonfinite maps of the analysis store them per element.
FINITE, QUIET_NAN, SIGNALING_NAN, POSITIVE_INFINITY, NEGATIVE_INFINITY = 0, 1, 2, 3, 4

# Unsigned integer type holding each format's bit patterns (little-endian in packets).
BITS_DTYPE = {"float16": np.dtype("<u2"), "bfloat16": np.dtype("<u2"), "float32": np.dtype("<u4")}

_F32_EXPONENT_BIAS = 127
_F32_MANTISSA_BITS = 23
_F32_MAGNITUDE_MASK = 0x7FFFFFFF
_F32_INFINITY = 0x7F800000
_F32_MANTISSA_MASK = 0x7FFFFF
# A float32 significand (implicit bit included) has 24 bits: shifting it right by
# 25 or more always rounds to zero, so larger shifts are clamped to this one.
_MAX_SUBNORMAL_SHIFT = _F32_MANTISSA_BITS + 2


def field_masks(dtype: str) -> tuple[int, int, int]:
    """The (sign, exponent, mantissa) bit masks of `dtype`."""
    _, exponent_bits, mantissa_bits = FIELD_BITS[dtype]
    mantissa = (1 << mantissa_bits) - 1
    exponent = ((1 << exponent_bits) - 1) << mantissa_bits
    sign = 1 << (exponent_bits + mantissa_bits)
    return sign, exponent, mantissa


def _exponent_bias(dtype: str) -> int:
    return (1 << (FIELD_BITS[dtype][1] - 1)) - 1


def _checked_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    bits = np.asarray(bits)
    if bits.dtype.kind != "u" or bits.dtype.itemsize != ITEM_SIZE[dtype]:
        raise ValueError(f"{dtype} bits must be uint{8 * ITEM_SIZE[dtype]}, got {bits.dtype}")
    return bits


def bits_from_buffer(buf: bytes | bytearray | memoryview, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only view of little-endian `buf` as the uint16/uint32 patterns of `dtype`, reshaped to `shape`."""
    count = math.prod(shape)
    nbytes = memoryview(buf).nbytes
    if nbytes != count * ITEM_SIZE[dtype]:
        raise ValueError(f"{nbytes} bytes cannot hold {dtype} of shape {tuple(shape)}")
    bits = np.frombuffer(buf, dtype=BITS_DTYPE[dtype], count=count).reshape(shape)
    bits.flags.writeable = False
    return bits


@functools.cache
def _float16_promotion_table() -> np.ndarray:
    """float32 bit patterns of all 65,536 float16 patterns, by integer arithmetic (built on first use)."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    sign_mask, exponent_mask, mantissa_mask = field_masks("float16")
    mantissa_bits = FIELD_BITS["float16"][2]
    shift = _F32_MANTISSA_BITS - mantissa_bits
    rebias = _F32_EXPONENT_BIAS - _exponent_bias("float16")
    sign = (bits & sign_mask) << 16
    exponent = (bits & exponent_mask) >> mantissa_bits
    mantissa = bits & mantissa_mask
    normal = ((exponent + rebias) << _F32_MANTISSA_BITS) | (mantissa << shift)
    special = np.uint32(_F32_INFINITY) | (mantissa << shift)
    # A subnormal m * 2^-24 with leading bit p (m = 2^p + r) is 2^(p-24) * (1 + r/2^p).
    leading = np.zeros_like(mantissa)
    for bit in range(1, mantissa_bits):
        leading += (mantissa >> bit) > 0
    fraction = (mantissa - (np.uint32(1) << leading)) << (_F32_MANTISSA_BITS - leading)
    subnormal_exponent = leading + (_F32_EXPONENT_BIAS - _exponent_bias("float16") + 1 - mantissa_bits)
    subnormal = np.where(mantissa == 0, 0, (subnormal_exponent << _F32_MANTISSA_BITS) | fraction)
    all_ones = (1 << FIELD_BITS["float16"][1]) - 1
    magnitude = np.where(exponent == all_ones, special, np.where(exponent == 0, subnormal, normal))
    table = (sign | magnitude).astype(np.uint32).view(np.float32)
    table.flags.writeable = False
    return table


def promote(bits: np.ndarray, dtype: str) -> np.ndarray:
    """The exact float32 values of `dtype` bit patterns (same shape; float32 gives a view of `bits`)."""
    bits = _checked_bits(bits, dtype)
    if dtype == "float16":
        return _float16_promotion_table()[bits]
    if dtype == "bfloat16":
        widened = bits.astype(np.uint32)
        widened <<= 16  # in place: one new array, not two
        return widened.view(np.float32)
    return bits.view(np.float32)


def _shift_right_rne(value: np.ndarray, shift: np.ndarray | int) -> np.ndarray:
    """value / 2**shift rounded to nearest, ties to even (int64 in, int64 out; shift >= 1)."""
    quotient = value >> shift
    remainder = value & ((np.int64(1) << shift) - 1)
    half = np.int64(1) << (shift - 1)
    round_up = (remainder > half) | ((remainder == half) & ((quotient & 1) == 1))
    return quotient + round_up


def round_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """Bit patterns of float32 `values` (never float64: that would round twice) rounded to `dtype`: RNE, overflow
    to infinity, NaN stays NaN (the module docstring); float32 gives a uint32 view."""
    values = np.asarray(values)
    if values.dtype != np.float32:
        raise ValueError(f"round_bits takes float32 values, got {values.dtype}")
    if dtype == "float32":
        return values.view(np.uint32)
    _, _, mantissa_bits = FIELD_BITS[dtype]
    sign_mask, exponent_mask, _ = field_masks(dtype)
    bias = _exponent_bias(dtype)
    shift = _F32_MANTISSA_BITS - mantissa_bits
    f32 = values.view(np.uint32).astype(np.int64)
    magnitude = f32 & _F32_MAGNITUDE_MASK
    f32_exponent = magnitude >> _F32_MANTISSA_BITS
    # Normal in the target: round the whole magnitude (a mantissa carry bumps the exponent), rebias.
    normal = _shift_right_rne(magnitude, shift) - ((_F32_EXPONENT_BIAS - bias) << mantissa_bits)
    # Subnormal in the target: the significand in units of the target's smallest subnormal.
    significand = (magnitude & _F32_MANTISSA_MASK) | ((f32_exponent > 0).astype(np.int64) << _F32_MANTISSA_BITS)
    subnormal_shift = (_F32_EXPONENT_BIAS + _F32_MANTISSA_BITS + 1 - bias - mantissa_bits) - np.maximum(f32_exponent, 1)
    subnormal = _shift_right_rne(significand, np.minimum(subnormal_shift, _MAX_SUBNORMAL_SHIFT))
    is_normal = f32_exponent + bias - _F32_EXPONENT_BIAS >= 1
    finite = np.minimum(np.where(is_normal, normal, subnormal), exponent_mask)
    payload = (magnitude & _F32_MANTISSA_MASK) >> shift
    nan = exponent_mask | np.maximum(payload, 1)
    narrowed = np.where(magnitude > _F32_INFINITY, nan, finite)
    sign = (f32 >> 31) * sign_mask
    return (sign | narrowed).astype(BITS_DTYPE[dtype])


def narrow(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 `values` rounded to `dtype` (RNE) and promoted back to float32."""
    return promote(round_bits(values, dtype), dtype)


def nonfinite_kinds(bits: np.ndarray, dtype: str) -> np.ndarray:
    """uint8 array (same shape) of FINITE / QUIET_NAN / SIGNALING_NAN / POSITIVE_INFINITY / NEGATIVE_INFINITY."""
    bits = _checked_bits(bits, dtype)
    sign_mask, exponent_mask, mantissa_mask = field_masks(dtype)
    kinds = np.full(bits.shape, FINITE, dtype=np.uint8)
    nonfinite = (bits & exponent_mask) == exponent_mask
    if not nonfinite.any():
        return kinds
    selected = bits[nonfinite]
    quiet_bit = (mantissa_mask + 1) >> 1
    mantissa = selected & mantissa_mask
    code = np.uint8
    infinity_kind = np.where((selected & sign_mask) != 0, code(NEGATIVE_INFINITY), code(POSITIVE_INFINITY))
    nan_kind = np.where((selected & quiet_bit) != 0, code(QUIET_NAN), code(SIGNALING_NAN))
    kinds[nonfinite] = np.where(mantissa == 0, infinity_kind, nan_kind)
    return kinds


def ulp_ordinal(bits: np.ndarray, dtype: str) -> np.ndarray:
    """int64 position of each pattern on the ordered line of `dtype`: neighbours differ by 1, -0 and +0 are 0,
    negatives mirror positives, infinities and then NaNs lie beyond the largest finite value."""
    bits = _checked_bits(bits, dtype)
    sign_mask, _, _ = field_masks(dtype)
    magnitude = (bits & (sign_mask - 1)).astype(np.int64)
    return np.where((bits & sign_mask) != 0, -magnitude, magnitude)
