"""The emulated kernels' float32 arithmetic, vectorised (KV heads, group heads, blocks, partitions, simdgroups and lanes as array axes); no I/O, no UI.

Every operation is one float32 numpy operation (one rounding, no fused
multiply-add, no wider accumulator). Python loops run only over the products
inside one lane, the online-softmax steps inside one block and the butterfly.
Arrays are laid out [*blocks, KVH, g, ...] so one step of every block is one slice.
"""

from __future__ import annotations

import numpy as np

from explorer.packet.dtypes import narrow

LANES = 32
SIMDGROUPS = 4
BUTTERFLY_OFFSETS = (16, 8, 4, 2, 1)
LOG2E = np.array([0x3FB8AA3B], dtype=np.uint32).view(np.float32)[0]  # float32(log2(e))
_ZERO, _ONE = np.float32(0.0), np.float32(1.0)
# Work sizes that keep the arrays of one step in the CPU cache (speed only; no bit depends on them).
DOT_CHUNK_TOKENS = 512
STEP_CHUNK_ELEMENTS = 1 << 18
NARROW_CHUNK_ELEMENTS = 1 << 14


def exp32(x: np.ndarray) -> np.ndarray:
    """float32(exp(float64(x))); exp32(-inf) = 0."""
    return np.exp(x.astype(np.float64)).astype(np.float32)


def exp2_32(x: np.ndarray) -> np.ndarray:
    """float32(exp2(float64(x)))."""
    return np.exp2(x.astype(np.float64)).astype(np.float32)


def dot(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Scores [KVH, g, T] of queries [KVH, g, D] against keys [KVH, T, D]: the lane-split dot with its butterfly.

    When D % 32 == 0, lane j sums its D/32 contiguous products in order from 0 and the
    32 lane sums are reduced by the butterfly (only the lanes lane 0 depends on are
    kept at each step); otherwise the plain sequential sum from 0.
    """
    kv_heads, group, head_dim = queries.shape
    tokens = keys.shape[1]
    if head_dim % LANES:
        total = np.zeros((kv_heads, group, tokens), dtype=np.float32)
        for i in range(head_dim):
            total = total + queries[:, :, None, i] * keys[:, None, :, i]
        return total
    per_lane = head_dim // LANES
    q = queries.reshape(kv_heads, group, 1, LANES, per_lane)
    # [KVH, D/32, T, 32]: the i-th product of every lane of every key is one contiguous slice.
    k = np.ascontiguousarray(keys.reshape(kv_heads, tokens, LANES, per_lane).transpose(0, 3, 1, 2))
    scores = np.empty((kv_heads, group, tokens), dtype=np.float32)
    for lo in range(0, tokens, DOT_CHUNK_TOKENS):
        chunk = k[:, None, :, lo : lo + DOT_CHUNK_TOKENS]
        lanes = np.zeros((kv_heads, group, chunk.shape[3], LANES), dtype=np.float32)
        products = np.empty_like(lanes)
        for i in range(per_lane):
            np.multiply(q[..., i], chunk[:, :, i], out=products)
            np.add(lanes, products, out=lanes)
        for offset in BUTTERFLY_OFFSETS:  # lane j < offset becomes lane[j] + lane[j ^ offset] = lane[j] + lane[j + offset]
            lanes = lanes[..., :offset] + lanes[..., offset : 2 * offset]
        scores[:, :, lo : lo + DOT_CHUNK_TOKENS] = lanes[..., 0]
    return scores


def ordered_sum(terms: np.ndarray) -> np.ndarray:
    """Sum over axis 0 in increasing index order, starting from +0, every addition rounded to float32."""
    start = np.zeros((1, *terms.shape[1:]), dtype=np.float32)
    return np.add.accumulate(np.concatenate([start, terms]), axis=0)[-1]


def online_softmax(scores: np.ndarray, values: np.ndarray, tokens: np.ndarray, exp) -> tuple[np.ndarray, np.ndarray]:
    """Online softmax of every block at once.

    `scores` [KVH, g, T]; `values` [T, KVH, D + 1] with a last column of ones (so the
    running sum l is computed by the very operations of o); `tokens` int [steps,
    *blocks]: the key each block visits at each step, T where it visits none.
    Returns m [*blocks, KVH, g] and the state [*blocks, KVH, g, D + 1] (o, then l).
    A block that visits no key keeps m = -inf, l = 0, o = 0; a step without a key
    leaves a block's state as it was (up to the sign of a zero).
    """
    kv_heads, group, count = scores.shape
    padded = np.concatenate([scores, np.full((kv_heads, group, 1), -np.inf, dtype=np.float32)], axis=2)
    c = np.moveaxis(padded[:, :, tokens], (0, 1), (-2, -1))  # [steps, *blocks, KVH, g]
    valid = (tokens < count)[..., None, None]
    m = np.maximum.accumulate(c, axis=0)
    previous = np.concatenate([np.full_like(m[:1], -np.inf), m[:-1]])
    f = np.where(valid, np.where(previous == -np.inf, _ZERO, exp(previous - m)), _ONE)[..., None]
    p = np.where(valid, exp(c - m), _ZERO)[..., None]
    rows = np.concatenate([values, np.zeros((1, *values.shape[1:]), dtype=np.float32)])[:, :, None, :]
    visited = rows[tokens]  # [steps, *blocks, KVH, 1, D + 1]: each step's rows in one contiguous slice
    state = np.zeros((*tokens.shape[1:], kv_heads, group, values.shape[2]), dtype=np.float32)
    per_chunk = max(1, STEP_CHUNK_ELEMENTS // state.size)
    for lo in range(0, tokens.shape[0], per_chunk):
        terms = p[lo : lo + per_chunk] * visited[lo : lo + per_chunk]  # p * V of these steps, one rounding each
        factors = f[lo : lo + per_chunk]
        for step in range(terms.shape[0]):
            np.multiply(state, factors[step], out=state)
            np.add(state, terms[step], out=state)
    return m[-1], state


def mlx_layout(tokens: int, blocks: int) -> np.ndarray:
    """[steps, blocks']: block b visits b, b + blocks, ...; blocks beyond T visit no key and are left out.

    A block without keys stores m = -inf, l = 0, o = 0, so its merge weight is 0 and it
    adds exact zeros to every sum starting from +0: leaving it out changes no bit.
    """
    used = min(blocks, tokens)
    grid = np.arange(-(-tokens // used) * used).reshape(-1, used)
    return np.where(grid < tokens, grid, tokens)


def paged_layout(tokens: int, partition_tokens: int) -> np.ndarray:
    """[steps, partitions, simdgroups]: simdgroup r of partition p visits p*P + r, p*P + r + 4, ... below min(T, (p+1)*P).

    A partition of fewer than 4 tokens leaves simdgroups without keys; like blocks
    without keys they add exact zeros to the simdgroup merge and are left out.
    """
    size = min(partition_tokens, tokens)  # one partition of T tokens either way when P >= T
    partitions = -(-tokens // size)
    steps = -(-size // SIMDGROUPS)
    offset = SIMDGROUPS * np.arange(steps)[:, None, None] + np.arange(min(SIMDGROUPS, size))[None, None, :]
    token = size * np.arange(partitions)[None, :, None] + offset
    return np.where((offset < size) & (token < tokens), token, tokens)


def stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """round(values, dtype) promoted back (explorer's own RNE), in cache-sized pieces."""
    flat = np.ascontiguousarray(values).reshape(-1)
    out = np.empty_like(flat)
    for lo in range(0, flat.size, NARROW_CHUNK_ELEMENTS):
        out[lo : lo + NARROW_CHUNK_ELEMENTS] = narrow(flat[lo : lo + NARROW_CHUNK_ELEMENTS], dtype)
    return out.reshape(values.shape)


def mlx_merge(m: np.ndarray, state: np.ndarray, partial_dtype: str) -> np.ndarray:
    """Step 3 of mlx_two_pass from the blocks' m, l and o (o stored in `partial_dtype`): O / S [KVH, g, D]."""
    top = m.max(axis=0)
    weights = exp32(m - top)[..., None]
    partials = np.concatenate([stored(state[..., :-1], partial_dtype), state[..., -1:]], axis=-1)
    total = ordered_sum(partials * weights)
    return total[..., :-1] / total[..., -1:]


def paged_merge(m: np.ndarray, state: np.ndarray, partial_dtype: str) -> np.ndarray:
    """Steps 3-4 of paged_two_pass from the simdgroups' m, l and o [partitions, simdgroups, ...]: A * (1 / L) [KVH, g, D]."""
    partition_max = m.max(axis=1)
    scaled = state * exp2_32(m - partition_max[:, None])[..., None]
    merged = ordered_sum(np.moveaxis(scaled, 1, 0))  # [partitions, KVH, g, D + 1]
    partials = np.concatenate([stored(merged[..., :-1], partial_dtype), merged[..., -1:]], axis=-1)
    weights = exp2_32(partition_max - partition_max.max(axis=0))[..., None]
    total = ordered_sum(partials * weights)
    reciprocal = _ONE / total[..., -1:]
    return total[..., :-1] * reciprocal


def single_finish(state: np.ndarray) -> np.ndarray:
    """single_pass output before rounding: o / l of the one block [KVH, g, D]."""
    return state[0, ..., :-1] / state[0, ..., -1:]
