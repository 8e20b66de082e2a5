"""The emulated kernels' float32 arithmetic, vectorised over heads, blocks, simdgroups and lanes.

Every operation is one float32 numpy operation (one rounding), except a `Hypotheses.fma` fused multiply-add
(`fma32`). Arrays are laid out [*blocks, KVH, g, ...] so one step of every block is one slice.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from explorer.analysis import elementary
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import narrow

LANES = 32
BUTTERFLY_OFFSETS = (16, 8, 4, 2, 1)
LOG2E = np.array([0x3FB8AA3B], dtype=np.uint32).view(np.float32)[0]  # float32(log2(e))
EXACT, EXP2_SCALED = "exact", "exp2_scaled"
BUTTERFLY, SEQUENTIAL = "butterfly", "sequential"
_ZERO, _ONE = np.float32(0.0), np.float32(1.0)
# Work sizes that keep the arrays of one step in the CPU cache (speed and memory only; no bit depends on them).
DOT_CHUNK_TOKENS = 512
SEQUENTIAL_CHUNK_ELEMENTS = 1 << 18  # scores per chunk of the sequential dot (D not a multiple of 32)
STEP_CHUNK_ELEMENTS = 1 << 18
NARROW_CHUNK_ELEMENTS = 1 << 14


@record
class Hypotheses(Record):
    """The arithmetic hypotheses (docs/emulations.md): how `exp` is evaluated, fused multiply-adds, lane reduction."""

    exp: str = EXACT
    fma: bool = False
    simd: str = BUTTERFLY


def exp32(x: np.ndarray) -> np.ndarray:
    """float32(exp(float64(x))); exp32(-inf) = 0 (the explorer's own exp: the same bits on every CPU)."""
    return elementary.exp(x, out=np.empty(np.shape(x), dtype=np.float32))


def exp2_32(x: np.ndarray) -> np.ndarray:
    """float32(exp2(float64(x))) (the explorer's own exp2: the same bits on every CPU)."""
    return elementary.exp2(x, out=np.empty(np.shape(x), dtype=np.float32))


def exp2_scaled(x: np.ndarray) -> np.ndarray:
    """Natural exp(x) as exp2_32(round32(x * float32(log2 e)))."""
    return exp2_32(x * LOG2E)


def natural_exp(hypotheses: Hypotheses) -> Callable[[np.ndarray], np.ndarray]:
    """The natural-domain exp of the MLX kernels under `hypotheses`."""
    return exp2_scaled if hypotheses.exp == EXP2_SCALED else exp32


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """round32(a * b + c) with one rounding (float32 operands, broadcast).

    The float64 product of two float32 values is exact; the float64 sum is made round
    to odd (truncated toward zero, then its last bit set when inexact, the exact error
    coming from TwoSum), and a round-to-odd float64 rounds to float32 exactly as the
    exact sum would (53 >= 24 + 2 bits).
    """
    product = a.astype(np.float64) * b
    total = product + c
    virtual = total - product
    error = (product - (total - virtual)) + (c - virtual)
    inexact = (error != 0) & np.isfinite(total)
    bits = total.view(np.int64)
    bits -= inexact & ((error < 0) != (total < 0))  # one step toward zero when rounding went away from it
    bits |= inexact
    return total.astype(np.float32)


def multiply_add(a: np.ndarray, b: np.ndarray, acc: np.ndarray, fused: bool) -> np.ndarray:
    """acc + a * b: two roundings, or one when `fused`."""
    return fma32(a, b, acc) if fused else acc + a * b


def reduce_lanes(lanes: np.ndarray, simd: str) -> np.ndarray:
    """The reduction of the 32 lane values on the last axis: the butterfly's lane 0 (lane[j] + lane[j ^ off] for
    off 16..1, keeping only what lane 0 depends on), or the sum in lane order from +0."""
    if simd == SEQUENTIAL:
        return ordered_sum(lanes, axis=-1)
    for offset in BUTTERFLY_OFFSETS:
        lanes = lanes[..., :offset] + lanes[..., offset : 2 * offset]
    return lanes[..., 0]


def sequential_dot(queries: np.ndarray, keys: np.ndarray, fused: bool = False) -> np.ndarray:
    """Scores [KVH, g, T] of queries [KVH, g, D] against keys [KVH, T, D]: the plain sum over D in order from +0."""
    kv_heads, group, head_dim = queries.shape
    tokens = keys.shape[1]
    scores = np.empty((kv_heads, group, tokens), dtype=np.float32)
    step = max(1, SEQUENTIAL_CHUNK_ELEMENTS // (kv_heads * group))  # temporaries of one chunk of tokens, not all
    for lo in range(0, tokens, step):
        total = np.zeros((kv_heads, group, min(step, tokens - lo)), dtype=np.float32)
        for i in range(head_dim):
            total = multiply_add(queries[:, :, None, i], keys[:, None, lo : lo + step, i], total, fused)
        scores[:, :, lo : lo + step] = total
    return scores


def dot(queries: np.ndarray, keys: np.ndarray, hypotheses: Hypotheses) -> np.ndarray:
    """Scores [KVH, g, T] of queries [KVH, g, D] against keys [KVH, T, D]: when D % 32 == 0, lane j sums its D/32
    contiguous products from +0 and the lanes are reduced; otherwise the plain sequential sum."""
    kv_heads, group, head_dim = queries.shape
    tokens = keys.shape[1]
    fused = hypotheses.fma
    if head_dim % LANES:
        return sequential_dot(queries, keys, fused)
    per_lane = head_dim // LANES
    q = queries.reshape(kv_heads, group, 1, LANES, per_lane)
    # [KVH, D/32, T, 32]: the i-th product of every lane of every key is one contiguous slice.
    k = np.ascontiguousarray(keys.reshape(kv_heads, tokens, LANES, per_lane).transpose(0, 3, 1, 2))
    scores = np.empty((kv_heads, group, tokens), dtype=np.float32)
    for lo in range(0, tokens, DOT_CHUNK_TOKENS):
        chunk = k[:, None, :, lo : lo + DOT_CHUNK_TOKENS]
        lanes = np.zeros((kv_heads, group, chunk.shape[3], LANES), dtype=np.float32)
        if fused:
            for i in range(per_lane):
                lanes = fma32(q[..., i], chunk[:, :, i], lanes)
        else:
            products = np.empty_like(lanes)
            for i in range(per_lane):
                np.multiply(q[..., i], chunk[:, :, i], out=products)
                np.add(lanes, products, out=lanes)
        scores[:, :, lo : lo + DOT_CHUNK_TOKENS] = reduce_lanes(lanes, hypotheses.simd)
    return scores


def online_softmax(
    scores: np.ndarray, values: np.ndarray, tokens: np.ndarray, exp, fused: bool, factor: np.float32 | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Online softmax of every block at once, in chunks of steps; returns m [*blocks, KVH, g] and the state
    [*blocks, KVH, g, D + 1] (o, then l; a block that visits no key keeps m = -inf, l = o = 0).

    `scores` [KVH, g, T] are multiplied by `factor` (one rounding) as read; `values` [T, KVH, D + 1] end in a
    column of ones (l computed by the operations of o, unless `fused`: l = fma(l, f, p) and
    o = fma(p, v, round32(o * f))); `tokens` [steps, *blocks]: the key each block visits at each step, T for
    none (a step without a key leaves the state as it was, up to the sign of a zero)."""
    kv_heads, group, count = scores.shape
    rows = np.concatenate([values, np.zeros((1, *values.shape[1:]), dtype=np.float32)])[:, :, None, :]
    blocks = tokens.shape[1:]
    m = np.full((*blocks, kv_heads, group), -np.inf, dtype=np.float32)
    state = np.zeros((*blocks, kv_heads, group, values.shape[2]), dtype=np.float32)
    per_chunk = max(1, STEP_CHUNK_ELEMENTS // state.size)
    for lo in range(0, tokens.shape[0], per_chunk):
        visiting = tokens[lo : lo + per_chunk]
        valid = (visiting < count)[..., None, None]
        read = np.moveaxis(scores[:, :, np.minimum(visiting, count - 1)], (0, 1), (-2, -1))  # [steps, *blocks, KVH, g]
        if factor is not None:
            read = read * factor
        c = np.where(valid, read, np.float32(-np.inf))  # a step without a key reads -inf (no padded copy of the scores)
        running = np.maximum.accumulate(np.concatenate([m[None], c]), axis=0)
        previous, m = running[:-1], running[-1]
        current = running[1:]
        f = np.where(valid, np.where(previous == -np.inf, _ZERO, exp(previous - current)), _ONE)[..., None]
        p = np.where(valid, exp(c - current), _ZERO)[..., None]
        visited = rows[visiting]  # [steps, *blocks, KVH, 1, D + 1]: each step's rows in one contiguous slice
        if fused:
            for step in range(visiting.shape[0]):
                running_sum = fma32(state[..., -1:], f[step], p[step])
                state[..., :-1] = fma32(p[step], visited[step][..., :-1], state[..., :-1] * f[step])
                state[..., -1:] = running_sum
        else:
            terms = p * visited  # p * V of these steps, one rounding each
            for step in range(visiting.shape[0]):
                np.multiply(state, f[step], out=state)
                np.add(state, terms[step], out=state)
    return m, state


def block_layout(tokens: int, blocks: int) -> np.ndarray:
    """[steps, blocks]: block b visits b, b + blocks, ...; T where a block visits no key at a step."""
    grid = np.arange(max(1, -(-tokens // blocks)) * blocks).reshape(-1, blocks)
    return np.where(grid < tokens, grid, tokens)


def paged_layout(tokens: int, partition_tokens: int, simdgroups: int) -> np.ndarray:
    """[steps, partitions, simdgroups']: simdgroup r of partition p visits p*P + r, p*P + r + simdgroups, ...
    (simdgroups a short partition leaves without keys add exact zeros to the merge: left out)."""
    size = min(partition_tokens, tokens)  # one partition of T tokens either way when P >= T
    partitions = -(-tokens // size)
    steps = -(-size // simdgroups)
    offset = simdgroups * np.arange(steps)[:, None, None] + np.arange(min(simdgroups, size))[None, None, :]
    token = size * np.arange(partitions)[None, :, None] + offset
    return np.where((offset < size) & (token < tokens), token, tokens)


def gqa_layout(tokens: int, blocks: int, heads_per_simdgroup: int) -> np.ndarray:
    """[steps, blocks, HPT]: upstream's `_gqa` pass 1, block b's contiguous chunk of ceil(T / blocks) keys split into
    HPT sub-chunks of ceil(chunk / HPT) keys, each visited in order; T where a sub-chunk visits none."""
    chunk = -(-tokens // blocks)
    sub = max(1, -(-chunk // heads_per_simdgroup))
    block_start = chunk * np.arange(blocks)[None, :, None]
    start = block_start + sub * np.arange(heads_per_simdgroup)[None, None, :]
    token = start + np.arange(sub)[:, None, None]
    end = np.minimum(np.minimum(tokens, block_start + chunk), start + sub)
    return np.where(token < end, token, tokens)


def gqa_block_merge(m: np.ndarray, state: np.ndarray, hypotheses: Hypotheses) -> tuple[np.ndarray, np.ndarray]:
    """The end of upstream's `_gqa` pass 1: each head's HPT sub-chunks [blocks, HPT, ...] merged in order, each o
    normalised (o * (1 / l), 0 when l is 0) and weighted by w = l * exp(m - M); the block stores M, the sum of w
    and the sum of w * o (each from +0 in sub-chunk order)."""
    finite_min = np.finfo(np.float32).min
    m = np.where(m == -np.inf, finite_min, m)
    top = np.maximum(m.max(axis=1), finite_min)
    sums = state[..., -1:]
    inverse = np.where(sums > 0, _ONE / np.where(sums > 0, sums, _ONE), _ZERO)
    normalised = state[..., :-1] * inverse
    weights = sums * natural_exp(hypotheses)(m - top[:, None])[..., None]
    by_chunk = np.moveaxis(weights, 1, 0)
    denominator = ordered_multiply_add(by_chunk, np.ones_like(by_chunk), hypotheses.fma)
    numerator = ordered_multiply_add(by_chunk, np.moveaxis(normalised, 1, 0), hypotheses.fma)
    return top, np.concatenate([numerator, denominator], axis=-1)


def stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """round(values, dtype) promoted back (explorer's own RNE), in cache-sized pieces."""
    if dtype == "float32":
        return values
    flat = np.ascontiguousarray(values).reshape(-1)
    out = np.empty_like(flat)
    for lo in range(0, flat.size, NARROW_CHUNK_ELEMENTS):
        out[lo : lo + NARROW_CHUNK_ELEMENTS] = narrow(flat[lo : lo + NARROW_CHUNK_ELEMENTS], dtype)
    return out.reshape(values.shape)


def _divide(total: np.ndarray) -> np.ndarray:
    """O / S from a merged [..., D + 1] (O, then S); O itself where S == 0."""
    numerator, denominator = total[..., :-1], total[..., -1:]
    return np.where(denominator == 0, numerator, numerator / np.where(denominator == 0, _ONE, denominator))


def mlx_merge(m: np.ndarray, state: np.ndarray, partial_dtype: str, hypotheses: Hypotheses) -> np.ndarray:
    """MLX pass 2: lane l merges blocks l, l + 32, ... from +0, then the lane reduction; returns O / S [KVH, g, D].
    Only the first multiple of 32 blocks are merged (none: 0, as the source gives); o is stored in `partial_dtype`."""
    merged = (m.shape[0] // LANES) * LANES  # pass 2 reads blocks in chunks of 32: a tail is dropped, as in the source
    if merged == 0:
        return np.zeros((*state.shape[1:-1], state.shape[-1] - 1), dtype=np.float32)
    m, state = m[:merged], state[:merged]
    top = m.max(axis=0)
    weights = natural_exp(hypotheses)(m - top)[..., None]
    partials = np.concatenate([stored(state[..., :-1], partial_dtype), state[..., -1:]], axis=-1)
    per_lane = m.shape[0] // LANES
    lanes = np.zeros((LANES, *state.shape[1:]), dtype=np.float32)
    for k in range(per_lane):
        blocks = slice(k * LANES, (k + 1) * LANES)
        lanes = multiply_add(weights[blocks], partials[blocks], lanes, hypotheses.fma)
    return _divide(reduce_lanes(np.moveaxis(lanes, 0, -1), hypotheses.simd))


def mlx_single_merge(m: np.ndarray, state: np.ndarray, hypotheses: Hypotheses) -> np.ndarray:
    """The end of mlx_single_pass: the 32 simdgroups' state scaled by exp(m - M), each product rounded, reduced."""
    weights = natural_exp(hypotheses)(m - m.max(axis=0))[..., None]
    return _divide(reduce_lanes(np.moveaxis(state * weights, 0, -1), hypotheses.simd))


def ordered_sum(terms: np.ndarray, axis: int = 0) -> np.ndarray:
    """Sum over `axis` in increasing index order, starting from +0, every addition rounded to float32."""
    terms = np.moveaxis(terms, axis, 0)
    start = np.zeros((1, *terms.shape[1:]), dtype=np.float32)
    return np.add.accumulate(np.concatenate([start, terms]), axis=0)[-1]


def ordered_multiply_add(a: np.ndarray, b: np.ndarray, fused: bool) -> np.ndarray:
    """sum over axis 0 of a * b in increasing index order from +0 (fused: acc = fma(a, b, acc))."""
    if not fused:
        return ordered_sum(a * b)
    total = np.zeros(np.broadcast_shapes(a.shape, b.shape)[1:], dtype=np.float32)
    for index in range(a.shape[0]):
        total = fma32(a[index], b[index], total)
    return total


def paged_merge(m: np.ndarray, state: np.ndarray, partial_dtype: str, fused: bool) -> np.ndarray:
    """Steps 3-4 of paged_two_pass from the simdgroups' state [partitions, simdgroups, ...]: A * (1 / L)."""
    partition_max = m.max(axis=1)
    scale = exp2_32(m - partition_max[:, None])[..., None]
    merged = ordered_multiply_add(np.moveaxis(state, 1, 0), np.moveaxis(scale, 1, 0), fused)  # [partitions, ...]
    partials = np.concatenate([stored(merged[..., :-1], partial_dtype), merged[..., -1:]], axis=-1)
    weights = exp2_32(partition_max - partition_max.max(axis=0))[..., None]
    total = ordered_multiply_add(partials, weights, fused)
    reciprocal = _ONE / total[..., -1:]
    return total[..., :-1] * reciprocal


def single_finish(state: np.ndarray) -> np.ndarray:
    """single_pass output before rounding: o / l of the one block [KVH, g, D]."""
    return state[0, ..., :-1] / state[0, ..., -1:]
