"""Exhaustive bit-level checks of explorer.packet.dtypes against independent pure-Python oracles."""

from __future__ import annotations

import bisect
import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.analysis.result import (
    FINITE,
    NEGATIVE_INFINITY,
    POSITIVE_INFINITY,
    QUIET_NAN,
    SIGNALING_NAN,
)
from explorer.packet import dtypes

NARROW = ("float16", "bfloat16")
ALL_PATTERNS = np.arange(1 << 16, dtype=np.uint16)
# Layout of each 16-bit format, written out here independently of the module: (exponent bits, mantissa bits).
LAYOUT = {"float16": (5, 10), "bfloat16": (8, 7)}


# ---------------------------------------------------------------- oracles (pure Python, integer fields)


def fields(pattern: int, dtype: str) -> tuple[int, int, int]:
    exponent_bits, mantissa_bits = LAYOUT[dtype]
    return (
        pattern >> (exponent_bits + mantissa_bits),
        (pattern >> mantissa_bits) & ((1 << exponent_bits) - 1),
        pattern & ((1 << mantissa_bits) - 1),
    )


def is_nan(pattern: int, dtype: str) -> bool:
    _, exponent, mantissa = fields(pattern, dtype)
    return exponent == (1 << LAYOUT[dtype][0]) - 1 and mantissa != 0


def value(pattern: int, dtype: str) -> float:
    """The real value of a non-NaN pattern as a Python float (exact: at most 11 significant bits)."""
    exponent_bits, mantissa_bits = LAYOUT[dtype]
    sign, exponent, mantissa = fields(pattern, dtype)
    bias = (1 << (exponent_bits - 1)) - 1
    if exponent == (1 << exponent_bits) - 1:
        magnitude = math.inf
    elif exponent == 0:
        magnitude = math.ldexp(mantissa, 1 - bias - mantissa_bits)
    else:
        magnitude = math.ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits)
    return -magnitude if sign else magnitude


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def oracle_promote(pattern: int, dtype: str) -> int:
    """binary32 bits of a 16-bit pattern: the value via struct, NaNs built from their fields."""
    sign, _, mantissa = fields(pattern, dtype)
    if is_nan(pattern, dtype):
        return (sign << 31) | 0x7F800000 | (mantissa << (23 - LAYOUT[dtype][1]))
    return f32_bits(value(pattern, dtype))


def oracle_is_signaling(pattern: int, dtype: str) -> bool:
    _, _, mantissa = fields(pattern, dtype)
    return is_nan(pattern, dtype) and not mantissa >> (LAYOUT[dtype][1] - 1)


def positive_line(dtype: str) -> tuple[list[float], list[int]]:
    """Non-negative non-NaN values in increasing order with their patterns; infinity is placed at
    2**(emax+1), the value it stands for in round-to-nearest-even overflow."""
    exponent_bits, mantissa_bits = LAYOUT[dtype]
    positives = [p for p in range(1 << (exponent_bits + mantissa_bits)) if not is_nan(p, dtype)]
    positives.sort(key=lambda p: value(p, dtype))
    values = [value(p, dtype) for p in positives]
    bias = (1 << (exponent_bits - 1)) - 1
    values[-1] = math.ldexp(1.0, bias + 1)
    return values, positives


LINES = {dtype: positive_line(dtype) for dtype in NARROW}


def oracle_round(bits32: int, dtype: str) -> int:
    """RNE of a binary32 pattern to `dtype` by exact nearest-neighbour search (module's NaN policy)."""
    exponent_bits, mantissa_bits = LAYOUT[dtype]
    width = 1 + exponent_bits + mantissa_bits
    sign = (bits32 >> 31) << (width - 1)
    infinity = ((1 << exponent_bits) - 1) << mantissa_bits
    x = f32_value(bits32)
    if math.isnan(x):
        return sign | infinity | max((bits32 & 0x7FFFFF) >> (23 - mantissa_bits), 1)
    values, patterns = LINES[dtype]
    x = Fraction(abs(x)) if math.isfinite(x) else None
    if x is None or x >= values[-1]:
        return sign | infinity
    i = bisect.bisect_right(values, x) - 1
    if values[i] == x:
        return sign | patterns[i]
    below, above = x - Fraction(values[i]), Fraction(values[i + 1]) - x
    if below != above:
        return sign | patterns[i if below < above else i + 1]
    return sign | (patterns[i] if patterns[i] % 2 == 0 else patterns[i + 1])


def round_one(bits32: int, dtype: str) -> int:
    return int(dtypes.round_bits(np.array([bits32], dtype=np.uint32).view(np.float32), dtype)[0])


# ---------------------------------------------------------------- constants and buffers


def test_constants():
    assert dtypes.DTYPES == ("float16", "bfloat16", "float32")
    assert dtypes.ITEM_SIZE == {"float16": 2, "bfloat16": 2, "float32": 4}
    assert dtypes.FIELD_BITS == {"bfloat16": (1, 8, 7), "float16": (1, 5, 10), "float32": (1, 8, 23)}
    assert dtypes.field_masks("float16") == (0x8000, 0x7C00, 0x03FF)
    assert dtypes.field_masks("bfloat16") == (0x8000, 0x7F80, 0x007F)
    assert dtypes.field_masks("float32") == (0x80000000, 0x7F800000, 0x007FFFFF)


@pytest.mark.parametrize("dtype, fmt", [("float16", "<6H"), ("bfloat16", "<6H"), ("float32", "<6I")])
def test_bits_from_buffer_reads_little_endian_read_only(dtype, fmt):
    words = [0, 1, 0x7C01, 0x8000, 0xABCD, 0xFFFF]
    raw = bytearray(struct.pack(fmt, *words))
    bits = dtypes.bits_from_buffer(raw, dtype, (1, 2, 3, 1))
    assert bits.shape == (1, 2, 3, 1)
    assert bits.dtype.kind == "u" and bits.dtype.itemsize == dtypes.ITEM_SIZE[dtype]
    assert bits.reshape(-1).tolist() == words
    assert not bits.flags.writeable
    assert np.shares_memory(bits, np.frombuffer(raw, dtype=np.uint8))
    assert dtypes.bits_from_buffer(memoryview(bytes(raw)), dtype, (6,)).tolist() == words


def test_bits_from_buffer_rejects_wrong_length():
    with pytest.raises(ValueError, match="cannot hold"):
        dtypes.bits_from_buffer(b"\x00" * 7, "float16", (1, 1, 1, 4))
    with pytest.raises(ValueError, match="cannot hold"):
        dtypes.bits_from_buffer(b"\x00" * 8, "float32", (1, 1, 1, 4))


# ---------------------------------------------------------------- all 65,536 patterns


@pytest.mark.parametrize("dtype", NARROW)
def test_promotion_of_every_pattern_matches_oracle(dtype):
    promoted = dtypes.promote(ALL_PATTERNS, dtype)
    assert promoted.dtype == np.float32 and promoted.shape == ALL_PATTERNS.shape
    expected = [oracle_promote(p, dtype) for p in range(1 << 16)]
    assert promoted.view(np.uint32).tolist() == expected


@pytest.mark.parametrize("dtype", NARROW)
def test_promotion_keeps_shape(dtype):
    bits = ALL_PATTERNS[:24].reshape(1, 2, 3, 4)
    promoted = dtypes.promote(bits, dtype)
    assert promoted.shape == (1, 2, 3, 4)
    assert promoted.view(np.uint32).reshape(-1).tolist() == [oracle_promote(p, dtype) for p in range(24)]


@pytest.mark.parametrize(
    "dtype, pattern, expected",
    [
        ("float16", 0x7C01, 0x7F802000),  # signaling NaN stays signaling
        ("float16", 0xFD55, 0xFFAAA000),  # negative signaling NaN, payload moved up
        ("float16", 0x7E00, 0x7FC00000),  # quiet NaN
        ("float16", 0x0001, 0x33800000),  # smallest subnormal 2^-24
        ("float16", 0x03FF, 0x387FC000),  # largest subnormal
        ("float16", 0x8000, 0x80000000),  # -0
        ("float16", 0xFC00, 0xFF800000),  # -inf
        ("float16", 0x7BFF, 0x477FE000),  # 65504
        ("bfloat16", 0x7F81, 0x7F810000),  # signaling NaN
        ("bfloat16", 0x0001, 0x00010000),  # subnormal
    ],
)
def test_promotion_edge_table(dtype, pattern, expected):
    assert int(dtypes.promote(np.array([pattern], np.uint16), dtype).view(np.uint32)[0]) == expected


@pytest.mark.parametrize("dtype", NARROW)
def test_round_trip_of_every_pattern_is_bit_exact(dtype):
    assert np.array_equal(dtypes.round_bits(dtypes.promote(ALL_PATTERNS, dtype), dtype), ALL_PATTERNS)
    assert np.array_equal(
        dtypes.narrow(dtypes.promote(ALL_PATTERNS, dtype), dtype).view(np.uint32),
        dtypes.promote(ALL_PATTERNS, dtype).view(np.uint32),
    )


@pytest.mark.parametrize("dtype", NARROW)
def test_signaling_detection_and_kinds_of_every_pattern(dtype):
    expected = []
    for p in range(1 << 16):
        if is_nan(p, dtype):
            expected.append(SIGNALING_NAN if oracle_is_signaling(p, dtype) else QUIET_NAN)
        elif math.isinf(value(p, dtype)):
            expected.append(NEGATIVE_INFINITY if value(p, dtype) < 0 else POSITIVE_INFINITY)
        else:
            expected.append(FINITE)
    kinds = dtypes.nonfinite_kinds(ALL_PATTERNS, dtype)
    assert kinds.dtype == np.uint8
    assert kinds.tolist() == expected


@pytest.mark.parametrize("dtype", NARROW)
def test_ulp_ordinal_of_every_pattern_matches_rank_oracle(dtype):
    ordinal = dtypes.ulp_ordinal(ALL_PATTERNS, dtype)
    assert ordinal.dtype == np.int64
    _values, patterns = LINES[dtype]
    rank = {p: i for i, p in enumerate(patterns)}  # position among non-negative values, 0 for +0
    sign_bit = 1 << sum(LAYOUT[dtype])
    for p in range(1 << 16):
        if is_nan(p, dtype):
            assert abs(int(ordinal[p])) > rank[patterns[-1]]  # beyond the infinities
        else:
            magnitude = rank[p & (sign_bit - 1)]
            assert int(ordinal[p]) == (-magnitude if p & sign_bit else magnitude)
    # Monotone: ordering every non-NaN pattern by value orders the ordinals the same way.
    ordered = sorted((p for p in range(1 << 16) if not is_nan(p, dtype)), key=lambda p: value(p, dtype))
    steps = np.diff(ordinal[ordered])
    assert set(steps.tolist()) == {0, 1}
    assert int(np.count_nonzero(steps == 0)) == 1  # only -0 and +0 share a position
    assert int(ordinal[0x8000]) == int(ordinal[0]) == 0


# ---------------------------------------------------------------- RNE rounding of float32


def neighbour_points(dtype: str):
    """For every 16-bit pattern p below the infinity: the binary32 midpoint between p and its
    successor, and the binary32 values just below and above it, with the expected rounding."""
    patterns = np.array([p for p in range(1 << 15) if not is_nan(p, dtype) and not math.isinf(value(p, dtype))])
    low = np.array([value(int(p), dtype) for p in patterns])
    high = np.array([value(int(p) + 1, dtype) for p in patterns])
    high[np.isinf(high)] = math.ldexp(1.0, (1 << (LAYOUT[dtype][0] - 1)))
    midpoint = ((low + high) / 2).astype(np.float32)
    assert np.array_equal(midpoint.astype(np.float64), (low + high) / 2)  # the midpoint is a binary32
    tie = np.where(patterns % 2 == 0, patterns, patterns + 1)
    below = np.nextafter(midpoint, np.float32(0))
    above = np.nextafter(midpoint, np.float32(np.inf))
    points = np.concatenate([midpoint, below, above])
    expected = np.concatenate([tie, patterns, patterns + 1])
    return points, expected


@pytest.mark.parametrize("dtype", NARROW)
def test_rounding_ties_and_neighbours_of_every_pattern(dtype):
    points, expected = neighbour_points(dtype)
    sign = 1 << sum(LAYOUT[dtype])
    assert dtypes.round_bits(points, dtype).tolist() == expected.tolist()
    assert dtypes.round_bits(-points, dtype).tolist() == (expected | sign).tolist()
    # Exact values round to themselves, both signs.
    exact = dtypes.promote(ALL_PATTERNS, dtype)
    finite = np.isfinite(exact)
    assert np.array_equal(dtypes.round_bits(exact[finite], dtype), ALL_PATTERNS[finite])


ROUNDING_TABLE = [
    # (dtype, binary32 input, expected bits)
    ("float16", 0x3F800000, 0x3C00),  # 1.0
    ("float16", 0x3F801000, 0x3C00),  # 1 + 2^-11: tie, stays even
    ("float16", 0x3F803000, 0x3C02),  # 1 + 3*2^-11: tie, rounds up to even
    ("float16", 0x3F801001, 0x3C01),  # just above the tie
    ("float16", 0x477FE000, 0x7BFF),  # 65504, max finite
    ("float16", 0x477FEFFF, 0x7BFF),  # just below the overflow threshold
    ("float16", 0x477FF000, 0x7C00),  # 65520: the tie overflows to infinity
    ("float16", 0x7F7FFFFF, 0x7C00),  # float32 max
    ("float16", 0xC77FF000, 0xFC00),  # -65520
    ("float16", 0x7F800000, 0x7C00),  # +inf
    ("float16", 0xFF800000, 0xFC00),  # -inf
    ("float16", 0x38800000, 0x0400),  # 2^-14, smallest normal
    ("float16", 0x387FE000, 0x0400),  # largest-subnormal/smallest-normal tie -> even (normal)
    ("float16", 0x387FC000, 0x03FF),  # largest subnormal
    ("float16", 0x33800000, 0x0001),  # 2^-24, smallest subnormal
    ("float16", 0x33000000, 0x0000),  # 2^-25: tie between 0 and 2^-24 -> 0
    ("float16", 0x33000001, 0x0001),  # just above 2^-25
    ("float16", 0x33C00000, 0x0002),  # 1.5 * 2^-24: tie -> 2 (even)
    ("float16", 0xB3000000, 0x8000),  # -2^-25 -> -0
    ("float16", 0x80000000, 0x8000),  # -0
    ("float16", 0x00000001, 0x0000),  # float32 subnormal
    ("float16", 0x80000001, 0x8000),
    ("float16", 0x7F800001, 0x7C01),  # sNaN, payload only in discarded bits: stays NaN (signaling)
    ("float16", 0xFF800001, 0xFC01),  # sign kept
    ("float16", 0x7FC00001, 0x7E00),  # qNaN, low payload dropped
    ("float16", 0x7FFFFFFF, 0x7FFF),  # NaN with all payload bits: truncated, not rounded to inf
    ("float16", 0x7FAAA000, 0x7D55),  # sNaN payload moved down
    ("bfloat16", 0x3F808000, 0x3F80),  # tie, stays even
    ("bfloat16", 0x3F818000, 0x3F82),  # tie, rounds up to even
    ("bfloat16", 0x3F808001, 0x3F81),
    ("bfloat16", 0x7F7F8000, 0x7F80),  # tie above max finite -> inf
    ("bfloat16", 0x7F7F7FFF, 0x7F7F),
    ("bfloat16", 0xFF7FFFFF, 0xFF80),
    ("bfloat16", 0x00008000, 0x0000),  # subnormal tie -> even (0)
    ("bfloat16", 0x00018000, 0x0002),  # subnormal tie -> even (2)
    ("bfloat16", 0x007FFFFF, 0x0080),  # largest float32 subnormal rounds up to the smallest normal
    ("bfloat16", 0x80000000, 0x8000),
    ("bfloat16", 0x7F800001, 0x7F81),  # sNaN, payload only in discarded bits
    ("bfloat16", 0x7F80FFFF, 0x7F81),  # never rounds up into the exponent
    ("bfloat16", 0xFFC12345, 0xFFC1),
    ("bfloat16", 0x7FFFFFFF, 0x7FFF),
]


@pytest.mark.parametrize("dtype, bits32, expected", ROUNDING_TABLE)
def test_rounding_edge_table(dtype, bits32, expected):
    assert oracle_round(bits32, dtype) == expected  # the table and the oracle agree
    assert round_one(bits32, dtype) == expected


@pytest.mark.parametrize("dtype", NARROW)
def test_rounding_matches_oracle_on_random_patterns(dtype):
    rng = np.random.default_rng(20240611)
    sign = rng.integers(0, 2, 6000, dtype=np.uint32) << 31
    # Exponents spread over the whole binary32 range and concentrated around the target's range.
    exponent = np.concatenate([rng.integers(0, 256, 3000), rng.integers(95, 146, 3000)]).astype(np.uint32)
    mantissa = rng.integers(0, 1 << 23, 6000, dtype=np.uint32)
    bits32 = sign | (exponent << 23) | mantissa
    rounded = dtypes.round_bits(bits32.view(np.float32), dtype)
    assert rounded.tolist() == [oracle_round(int(b), dtype) for b in bits32]


@settings(max_examples=300, deadline=None)
@given(bits32=st.integers(0, (1 << 32) - 1))
def test_rounding_matches_oracle_hypothesis(bits32):
    for dtype in NARROW:
        assert round_one(bits32, dtype) == oracle_round(bits32, dtype)


@settings(max_examples=200, deadline=None)
@given(bits32=st.integers(0, (1 << 32) - 1))
def test_nan_always_stays_nan_with_sign_and_quiet_bit(bits32):
    nan32 = (bits32 | 0x7F800000) if bits32 & 0x7FFFFF else (bits32 | 0x7F800001)
    for dtype in NARROW:
        exponent_bits, mantissa_bits = LAYOUT[dtype]
        rounded = round_one(nan32, dtype)
        assert is_nan(rounded, dtype)
        assert rounded >> (exponent_bits + mantissa_bits) == nan32 >> 31
        assert (rounded >> (mantissa_bits - 1)) & 1 == (nan32 >> 22) & 1


def test_round_bits_rejects_non_float32():
    with pytest.raises(ValueError, match="takes float32"):
        dtypes.round_bits(np.array([1.0]), "float16")
    with pytest.raises(ValueError, match="must be uint16"):
        dtypes.promote(np.array([1], dtype=np.uint32), "float16")


# ---------------------------------------------------------------- float32


def float32_samples() -> np.ndarray:
    rng = np.random.default_rng(7)
    edges = np.array(
        [
            0,
            0x80000000,
            1,
            0x80000001,
            0x007FFFFF,
            0x00800000,
            0x3F800000,
            0x7F7FFFFF,
            0x7F800000,
            0xFF800000,
            0x7F800001,
            0xFF800001,
            0x7FC00000,
            0x7FFFFFFF,
            0xFFAAAAAA,
        ],
        dtype=np.uint32,
    )
    return np.concatenate([edges, rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)])


def test_float32_is_identity():
    bits = float32_samples()
    promoted = dtypes.promote(bits, "float32")
    assert promoted.dtype == np.float32
    assert np.array_equal(promoted.view(np.uint32), bits)
    assert np.array_equal(dtypes.round_bits(promoted, "float32"), bits)
    assert np.array_equal(dtypes.narrow(promoted, "float32").view(np.uint32), bits)
    assert (dtypes.nonfinite_kinds(bits, "float32") == SIGNALING_NAN).tolist() == [
        (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF) != 0 and not b & 0x400000 for b in bits.tolist()
    ]


def test_float32_ulp_ordinal_is_the_ordered_line():
    bits = float32_samples()
    x = bits.view(np.float32)
    finite = x[np.isfinite(x)]
    ordinal = dtypes.ulp_ordinal(finite.view(np.uint32), "float32")
    # Successor is one step up, -x mirrors x, zeros are 0, and order is preserved.
    with np.errstate(over="ignore"):
        successor = np.nextafter(finite, np.float32(np.inf))
    assert np.all(dtypes.ulp_ordinal(successor.view(np.uint32), "float32") - ordinal == 1)
    assert np.array_equal(dtypes.ulp_ordinal((-finite).view(np.uint32), "float32"), -ordinal)
    order = np.argsort(finite, kind="stable")
    assert np.all(np.diff(ordinal[order]) >= 0)
    ordinals = dtypes.ulp_ordinal(np.array([0, 0x80000000, 0x7F800000], np.uint32), "float32")
    assert ordinals.tolist() == [0, 0, 0x7F800000]
