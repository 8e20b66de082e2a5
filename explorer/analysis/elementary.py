"""exp, exp2 and log of float64 arrays from IEEE-exact numpy operations, the same bits on every CPU.

numpy's own loops depend on the CPU (AVX-512, AVX2 or libc) and round differently (other noise floors and
softmax weights on one packet). Here every step is one IEEE 754 defines to the bit, within one or two ulps of
the true value (tests/analysis/test_elementary.py, against 60-digit decimals):

- exp(x): x = (32 k + j) ln2 / 32 + r, |r| <= ln2 / 64 (ln2 / 32 in two parts: an exact reduction); exp(r) by
  Taylor to r^6 / 6! in Horner's order, times 2^(j/32) from a table, times 2^k. exp2: x = k + j / 32 + f, r = f ln2.
- log(x): x = m 2^e, sqrt(1/2) <= m < sqrt(2), f = m - 1, s = f / (2 + f): log(m) = f - (f^2/2 - s (f^2/2 + R)),
  R = 2 (s^2/3 + ... + s^22/23) (fdlibm's arrangement); plus e ln2 in two parts.

Arrays go through in chunks of CHUNK_ELEMENTS in a workspace made once per call; each result is rounded once
into the caller's `out`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

CHUNK_ELEMENTS = 1 << 16  # 512 KiB rows: few numpy calls per array, so two threads share the interpreter well
TABLE_BITS = 5  # 2^(j / 32) for j < 32 come from a table
TABLE_SIZE = 1 << TABLE_BITS
LN2 = 0.6931471805599453  # float64(ln 2)
# ln2 / 32 in two parts: the high part has 33 significant bits, so n * high is exact for |n| < 2^20
LN2_BY_TABLE_HIGH = float.fromhex("0x1.62e42fefp-6")
LN2_BY_TABLE_LOW = float.fromhex("0x1.473de6af278edp-39")
TABLE_BY_LN2 = TABLE_SIZE / LN2
EXP_COEFFICIENTS = tuple(1.0 / math.factorial(n) for n in range(6, -1, -1))  # |r| <= ln2/64: next term < 4e-18
EXP_INPUT_LIMIT = 1100.0  # beyond +-this exp is inf or 0 whatever is done; keeps n a small integer
EXP2_INPUT_LIMIT = 1600.0
LN2_HIGH = float.fromhex("0x1.62e42feep-1")  # ln 2 in two parts (fdlibm's), e * LN2_HIGH exact for |e| < 2^11
LN2_LOW = float.fromhex("0x1.a39ef35793c76p-33")
LOG_COEFFICIENTS = tuple(2.0 / (2 * n + 1) for n in range(11, 0, -1))  # R / s^2 in powers of s^2, highest first
SQRT_HALF = math.sqrt(0.5)
POWERS_HEX = (  # float64(2^(j / 32)) for j = 0..31, correctly rounded (tests/analysis/test_elementary.py)
    "0x1.0000000000000p+0",
    "0x1.059b0d3158574p+0",
    "0x1.0b5586cf9890fp+0",
    "0x1.11301d0125b51p+0",
    "0x1.172b83c7d517bp+0",
    "0x1.1d4873168b9aap+0",
    "0x1.2387a6e756238p+0",
    "0x1.29e9df51fdee1p+0",
    "0x1.306fe0a31b715p+0",
    "0x1.371a7373aa9cbp+0",
    "0x1.3dea64c123422p+0",
    "0x1.44e086061892dp+0",
    "0x1.4bfdad5362a27p+0",
    "0x1.5342b569d4f82p+0",
    "0x1.5ab07dd485429p+0",
    "0x1.6247eb03a5585p+0",
    "0x1.6a09e667f3bcdp+0",
    "0x1.71f75e8ec5f74p+0",
    "0x1.7a11473eb0187p+0",
    "0x1.82589994cce13p+0",
    "0x1.8ace5422aa0dbp+0",
    "0x1.93737b0cdc5e5p+0",
    "0x1.9c49182a3f090p+0",
    "0x1.a5503b23e255dp+0",
    "0x1.ae89f995ad3adp+0",
    "0x1.b7f76f2fb5e47p+0",
    "0x1.c199bdd85529cp+0",
    "0x1.cb720dcef9069p+0",
    "0x1.d5818dcfba487p+0",
    "0x1.dfc97337b9b5fp+0",
    "0x1.ea4afa2a490dap+0",
    "0x1.f50765b6e4540p+0",
)


POWERS = np.array([float.fromhex(text) for text in POWERS_HEX])
POWER_BITS = POWERS.view(np.int64)


def _power_of_two(exponent: np.ndarray) -> np.ndarray:
    """2.0 ** exponent (int64 from -1022 to 1023) as float64, made from its bits."""
    return ((exponent + 1023) << 52).view(np.float64)


class _Workspace:
    """One chunk's float64, int64 and bool arrays, made once per call: every step writes into them (`out=`), so a
    shortage of memory is a MemoryError at the start, never inside a ufunc."""

    def __init__(self, size: int):
        self.floats = np.empty((6, size))
        self.integers = np.empty((2, size), dtype=np.int64)
        self.flags = np.empty((2, size), dtype=bool)

    def of(self, count: int) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        return tuple([row[:count] for row in rows] for rows in (self.floats, self.integers, self.flags))


def _scaled(r: np.ndarray, n: np.ndarray, work: _Workspace) -> np.ndarray:
    """exp(r) * 2^(n / 32) (n integral float64), in the workspace's `p` row."""
    (_, _, _, p, t, _), (i, k), _ = work.of(r.size)
    np.multiply(r, EXP_COEFFICIENTS[0], out=p)
    for coefficient in EXP_COEFFICIENTS[1:-1]:
        p += coefficient
        p *= r
    p += EXP_COEFFICIENTS[-1]
    np.copyto(i, n, casting="unsafe")  # n is integral
    np.right_shift(i, TABLE_BITS, out=k)
    np.bitwise_and(i, TABLE_SIZE - 1, out=i)
    if k.min() >= -1000 and k.max() <= 1000:  # 2^(j/32) * 2^k is a normal float64: add k to the table's exponent
        scale = t.view(np.int64)
        np.take(POWER_BITS, i, out=scale, mode="wrap")
        np.left_shift(k, 52, out=k)
        scale += k
        p *= t
        return p
    p *= POWERS.take(i)
    first = np.clip(k, -1022, 1023)
    p *= _power_of_two(first)
    with np.errstate(over="ignore"):  # 2^k in two normal factors: a result in or below the subnormal range is
        p *= _power_of_two(k - first)  # rounded once, at the end
    return p


def _exp_chunk(x: np.ndarray, work: _Workspace, limit: float = EXP_INPUT_LIMIT, binary: bool = False) -> np.ndarray:
    """exp (or exp2 when `binary`) of the workspace's chunk `x` (which it overwrites)."""
    (_, n, r, _, t, _), _, (nan, _) = work.of(x.size)
    np.isnan(x, out=nan)
    saved = x[nan] if nan.any() else None  # NaN stays the NaN it was
    np.fmin(x, limit, out=x)  # NaN becomes a limit here, and is put back at the end
    np.fmax(x, -limit, out=x)
    if binary:
        np.multiply(x, TABLE_SIZE, out=n)
        np.rint(n, out=n)
        np.divide(n, TABLE_SIZE, out=r)
        np.subtract(x, r, out=r)  # exact
        r *= LN2
    else:
        np.multiply(x, TABLE_BY_LN2, out=n)
        np.rint(n, out=n)
        np.multiply(n, LN2_BY_TABLE_HIGH, out=r)
        np.subtract(x, r, out=r)
        np.multiply(n, LN2_BY_TABLE_LOW, out=t)
        r -= t
    p = _scaled(r, n, work)
    if saved is not None:
        p[nan] = saved
    return p


def _log_chunk(x: np.ndarray, work: _Workspace) -> np.ndarray:
    """log of the workspace's chunk `x` (which it overwrites)."""
    (_, e, s, f, z, half_square), (exponent, _), (low, special) = work.of(x.size)
    q = x
    every = bool(x.min() > 0) and bool(x.max() < np.inf)  # NaN fails both
    saved = None
    if not every:
        np.greater(x, 0, out=low)
        np.less(x, np.inf, out=special)
        np.logical_and(low, special, out=low)
        np.logical_not(low, out=special)
        saved = x[special]
        x[special] = 1.0
    exponent = exponent.view(np.intc)[: x.size]
    np.frexp(x, out=(f, exponent))  # x = m 2^e, 0.5 <= m < 1
    np.less(f, SQRT_HALF, out=low)
    np.multiply(f, 2.0, out=f, where=low)  # exact
    f -= 1.0  # exact
    np.subtract(exponent, low, out=exponent, casting="unsafe")
    np.copyto(e, exponent)
    np.add(f, 2.0, out=s)
    np.divide(f, s, out=s)
    np.multiply(s, s, out=z)
    np.multiply(z, LOG_COEFFICIENTS[0], out=q)
    q += LOG_COEFFICIENTS[1]
    for coefficient in LOG_COEFFICIENTS[2:]:
        q *= z
        q += coefficient
    np.multiply(f, 0.5, out=half_square)
    half_square *= f
    # e * LN2_HIGH - ((half_square - (s * (half_square + z * q) + e * LN2_LOW)) - f), one operation at a time
    q *= z
    q += half_square
    q *= s
    np.multiply(e, LN2_LOW, out=z)
    q += z
    np.subtract(half_square, q, out=q)
    q -= f
    np.multiply(e, LN2_HIGH, out=half_square)
    np.subtract(half_square, q, out=q)
    if saved is not None:  # log(0) = -inf, log(inf) = inf, NaN below 0 and for NaN
        q[special] = np.where(saved == 0, -np.inf, np.where(saved == np.inf, np.inf, np.nan))
    return q


def _elementwise(chunk_function, x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """`chunk_function` over float64 chunks of `x`, each rounded once into `out` (C-contiguous, may be `x`)."""
    x = np.asarray(x)
    if out is None:
        out = np.empty(x.shape, dtype=np.float64)
    if out.shape != x.shape or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous array of the input's shape")
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    work = _Workspace(min(flat_in.size, CHUNK_ELEMENTS))
    for start in range(0, flat_in.size, CHUNK_ELEMENTS):
        chunk = slice(start, start + CHUNK_ELEMENTS)
        values = work.floats[0][: flat_in[chunk].size]
        np.copyto(values, flat_in[chunk])
        flat_out[chunk] = chunk_function(values, work)
    return out


def exp(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """e ** x elementwise, computed in float64: exp(-inf) = 0, exp(inf) = inf, NaN stays NaN."""
    return _elementwise(_exp_chunk, x, out)


def exp2(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """2 ** x elementwise, computed in float64: exp2(-inf) = 0, exp2(inf) = inf, NaN stays NaN."""
    return _elementwise(functools.partial(_exp_chunk, limit=EXP2_INPUT_LIMIT, binary=True), x, out)


def log(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The natural logarithm elementwise, computed in float64: log(0) = -inf, log(inf) = inf, NaN below 0."""
    return _elementwise(_log_chunk, x, out)
