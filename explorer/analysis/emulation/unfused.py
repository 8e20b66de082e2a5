"""MLX's unfused attention composition on its CPU backend, and as modelled on its GPU; no I/O.

The CPU arithmetic is read from MLX's sources (docs/emulations.md, "mlx_unfused"): every matmul sums one output
element's products in order from +0 in float32 (the reference BLAS; `simd_gemm` with SIMD width 1 for 16-bit
inputs), the precise softmax uses MLX's polynomial `exp`, a sequential sum and one reciprocal. The GPU model's
reduction orders are assumptions (the `exp` and `simd` hypotheses).
"""

from __future__ import annotations

import numpy as np

from explorer.analysis.emulation.arithmetic import (
    LANES,
    Hypotheses,
    dot,
    fma32,
    natural_exp,
    ordered_sum,
    reduce_lanes,
    sequential_dot,
    stored,
)

# MLX's exp (simd/math.h, after Cephes): 2^y with y = x * 1.442695 split at floor(y + 0.5); the fraction's
# polynomial in Horner's order with fused multiply-adds, highest coefficient first.
MLX_EXP_LOG2E = np.float32(1.442695)
MLX_EXP_COEFFICIENTS = tuple(
    np.float32(c)
    for c in (
        1.535336188319500e-4,
        1.339887440266574e-3,
        9.618437357674640e-3,
        5.550332471162809e-2,
        2.402264791363012e-1,
        6.931472028550421e-1,
        1.0,
    )
)
MLX_EXP_LIMIT = np.float32(88.0)  # above it: inf; below minus it: 0
FLOAT32_EXPONENT_BIAS, FLOAT32_MANTISSA_BITS = 127, 23
SOFTMAX_READS = 4  # the GPU softmax kernel: consecutive elements one thread reads (SOFTMAX_N_READS)
SOFTMAX_THREADS = 1024  # threads of its threadgroup: 32 simdgroups of 32 lanes
WEIGHTED_CHUNK_ELEMENTS = 1 << 18  # products of the weighted sum made at once (speed and memory only)


def mlx_exp(x: np.ndarray) -> np.ndarray:
    """MLX CPU's exp of float32 `x`, bit for bit: 2^floor(y + 0.5) times a degree-6 polynomial of the fraction."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # nonfinite x: the selects below give MLX's answer
        y = x * MLX_EXP_LOG2E
        whole = np.floor(y.astype(np.float64) + 0.5).astype(np.float32)  # float + double 0.5 in the source: exact
        fraction = y - whole
        polynomial = np.full(x.shape, MLX_EXP_COEFFICIENTS[0], dtype=np.float32)
        for coefficient in MLX_EXP_COEFFICIENTS[1:]:
            polynomial = fma32(polynomial, fraction, coefficient)
        exponent = np.clip(np.nan_to_num(whole), -FLOAT32_EXPONENT_BIAS, FLOAT32_EXPONENT_BIAS + 1).astype(np.int32)
        power = ((exponent + FLOAT32_EXPONENT_BIAS) << FLOAT32_MANTISSA_BITS).view(np.float32)
        result = np.where(np.isnan(x), x, power * polynomial)
    result = np.where(x > MLX_EXP_LIMIT, np.float32(np.inf), result)
    return np.where(x < -MLX_EXP_LIMIT, np.float32(0.0), result)


def _products(weights: np.ndarray, values: np.ndarray, tokens: slice) -> np.ndarray:
    """w[t] * V[t] [t, KVH, g, D] of the tokens `tokens` (weights [KVH, g, T], values [KVH, T, D]), each rounded."""
    return np.moveaxis(weights[:, :, tokens], 2, 0)[..., None] * np.moveaxis(values[:, tokens], 1, 0)[:, :, None, :]


def _weighted_sequential(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """sum over t of w[t] * V[t], [KVH, g, D], in token order from +0."""
    kv_heads, group, tokens = weights.shape
    total = np.zeros((kv_heads, group, values.shape[2]), dtype=np.float32)
    step = max(1, WEIGHTED_CHUNK_ELEMENTS // total.size)
    for lo in range(0, tokens, step):
        for term in _products(weights, values, slice(lo, lo + step)):
            np.add(total, term, out=total)
    return total


def _weighted_lanes(weights: np.ndarray, values: np.ndarray, simd: str) -> np.ndarray:
    """The GPU model's sum of w[t] * V[t]: lane l sums tokens l, l + 32, ... in order, then the lane reduction."""
    kv_heads, group, tokens = weights.shape
    lanes = np.zeros((LANES, kv_heads, group, values.shape[2]), dtype=np.float32)
    for lo in range(0, tokens, LANES):
        count = min(LANES, tokens - lo)
        lanes[:count] += _products(weights, values, slice(lo, lo + count))
    return reduce_lanes(np.moveaxis(lanes, 0, -1), simd)


def _gpu_normaliser(exps: np.ndarray, simd: str) -> np.ndarray:
    """The GPU softmax kernel's sum of exps: per thread (its reads in order), then lanes, then simdgroups."""
    per_pass = SOFTMAX_READS * SOFTMAX_THREADS
    passes = max(1, -(-exps.shape[-1] // per_pass))
    padded = np.zeros((*exps.shape[:-1], passes * per_pass), dtype=np.float32)
    padded[..., : exps.shape[-1]] = exps
    threads = padded.reshape(*exps.shape[:-1], passes, SOFTMAX_THREADS, SOFTMAX_READS)
    per_thread = ordered_sum(np.moveaxis(threads, -3, -2).reshape(*exps.shape[:-1], SOFTMAX_THREADS, -1), axis=-1)
    simdgroups = reduce_lanes(per_thread.reshape(*exps.shape[:-1], SOFTMAX_THREADS // LANES, LANES), simd)
    return reduce_lanes(simdgroups, simd)


def unfused(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scale: np.float32,
    promoted: str,
    device: str,
    hypotheses: Hypotheses,
) -> np.ndarray:
    """The composition's output [KVH, g, D] before its final rounding to `promoted` (inputs already of it)."""
    scaled = stored(queries * stored(np.asarray([scale], dtype=np.float32), promoted)[0], promoted)
    if device == "cpu":
        scores = stored(sequential_dot(scaled, keys), promoted)
        exps = mlx_exp(scores - scores.max(axis=-1, keepdims=True))
        normaliser = ordered_sum(exps, axis=-1)
    else:
        scores = stored(dot(scaled, keys, Hypotheses(simd=hypotheses.simd)), promoted)
        exps = natural_exp(hypotheses)(scores - scores.max(axis=-1, keepdims=True))
        normaliser = _gpu_normaliser(exps, hypotheses.simd)
    weights = stored(exps * (np.float32(1.0) / normaliser)[..., None], promoted)
    if device == "cpu":
        return _weighted_sequential(weights, values)
    return _weighted_lanes(weights, values, hypotheses.simd)
