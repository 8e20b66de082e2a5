"""FP32 / FP64 GQA softmax attention of an admitted packet, per-head eligibility and diagnostics.

Every sum is taken in one fixed order, whatever the BLAS library, threads or machine (no BLAS; numpy's einsum
loop and pairwise `add.reduce` are the same C code everywhere for one numpy build): a logit is the einsum dot
of two length-D rows in the pass dtype (`dot_rows`), times `s`; an output element `sum_t w[t] * V[kv, t, d]`
and the softmax denominator are summed in blocks of TOKEN_BLOCK tokens added in token order; `exp` and `log`
are the explorer's own (`elementary`), not numpy's CPU-dependent loops. Each dot product is one einsum call on
one head's row, so a head's numbers never depend on its batch, its thread (PASS_THREADS at once) or the chunk
sizes (PRODUCT_ELEMENTS, ROW_ELEMENTS) that keep memory proportional to the packet.
"""

from __future__ import annotations

import math

import numpy as np

from explorer.analysis import elementary
from explorer.analysis.result import HeadAttention
from explorer.foundations.parallel import run_on_threads
from explorer.foundations.record import Record, record

TOP_TOKENS = 5
NARROW_STORAGE_DTYPES = ("float16", "bfloat16")
TOKEN_BLOCK = 1024  # tokens per block of every sum over tokens: fixes the summation order, never tuned per machine
PRODUCT_ELEMENTS = 1 << 18  # values in one key chunk cast to the pass dtype ([tokens, D])
ROW_ELEMENTS = 1 << 22  # values in one batch of logit rows [heads, T] (at least one head per batch)
PASS_THREADS = 2  # head batches evaluated at once (each holds its own logit rows, key chunk and value blocks)

NONFINITE_INPUTS = "nonfinite_inputs"
NONFINITE_LOGITS = "nonfinite_logits"
QUERIES_NOT_FLOAT32 = "queries_not_float32"
STORAGE_NOT_NARROW = "storage_not_narrow"


@record
class AttentionPass(Record):
    """One evaluation of the formula for every query head, in one float dtype.

    `reference` [QH, D] is NaN for ineligible heads (overflow kept as computed); `weights` [QH, T] (None
    unless asked for) is also NaN where logits overflowed; `logits_finite` is False for both; `max_logit` /
    `sum_exp` [QH] are the row maximum of the scaled logits and the sum of `exp(logits - max)`.
    """

    reference: np.ndarray
    weights: np.ndarray | None
    logits_finite: np.ndarray
    max_logit: np.ndarray
    sum_exp: np.ndarray


def group_size(query_heads: int, kv_heads: int) -> int:
    return query_heads // kv_heads


def eligibility(query_nonfinite: np.ndarray, key_nonfinite: np.ndarray, value_nonfinite: np.ndarray) -> np.ndarray:
    """bool [QH]: head h is eligible iff q[h], K[kv] and V[kv] are all finite (arguments: bool per head)."""
    kv_bad = np.asarray(key_nonfinite) | np.asarray(value_nonfinite)
    return ~(np.asarray(query_nonfinite) | np.repeat(kv_bad, group_size(len(query_nonfinite), len(kv_bad))))


def narrowed_query_plan(query_dtype: str, storage_dtype: str) -> tuple[str | None, str | None]:
    """(dtype to narrow the queries to, None) when the counterfactual applies, else (None, reason)."""
    if query_dtype != "float32":
        return None, QUERIES_NOT_FLOAT32
    if storage_dtype not in NARROW_STORAGE_DTYPES:
        return None, STORAGE_NOT_NARROW
    return storage_dtype, None


def spans(count: int, size: int) -> list[slice]:
    """Consecutive slices of at most `size` covering range(count), from 0."""
    return [slice(start, min(count, start + size)) for start in range(0, count, size)]


def dot_rows(matrix: np.ndarray, vector: np.ndarray, out: np.ndarray) -> None:
    """out[i] = sum_j matrix[i, j] * vector[j]: einsum's own unbuffered C loop (one dtype, C-contiguous), never
    BLAS: the same order for every call of one shape (docs/report.md, "One summation order")."""
    np.einsum("ij,j->i", matrix, vector, out=out, optimize=False)


def _logits(queries: np.ndarray, keys: np.ndarray, scale: np.floating, out: np.ndarray) -> None:
    """out [h, T] = (keys[t, :] . queries[h, :]) * scale in queries' dtype, one head at a time, tokens in chunks."""
    heads, head_dim = queries.shape
    step = max(1, PRODUCT_ELEMENTS // head_dim)
    cast = keys.dtype != queries.dtype
    scratch = np.empty(min(step, keys.shape[0]) * head_dim, dtype=queries.dtype) if cast else None
    for chunk in spans(keys.shape[0], step):
        block = keys[chunk]
        if cast:
            block = scratch[: block.size].reshape(block.shape)
            block[...] = keys[chunk]
        for head in range(heads):
            dot_rows(block, queries[head], out[head, chunk])
    out *= scale


def token_sum(rows: np.ndarray) -> np.ndarray:
    """Sums over the token axis of `rows`: pairwise within each TOKEN_BLOCK block, blocks added in token order."""
    total = None
    for block in spans(rows.shape[-1], TOKEN_BLOCK):
        partial = np.add.reduce(rows[..., block], axis=-1)
        total = partial if total is None else total + partial
    return total


def _block_groups(tokens: int, head_dim: int) -> list[tuple[slice, int, int]]:
    """(tokens, blocks, tokens per block): whole blocks grouped within PRODUCT_ELEMENTS, the tail alone."""
    per_group = max(1, PRODUCT_ELEMENTS // (head_dim * TOKEN_BLOCK))
    whole = tokens // TOKEN_BLOCK
    groups = [
        (slice(blocks.start * TOKEN_BLOCK, blocks.stop * TOKEN_BLOCK), blocks.stop - blocks.start, TOKEN_BLOCK)
        for blocks in spans(whole, per_group)
    ]
    if tokens % TOKEN_BLOCK:
        groups.append((slice(whole * TOKEN_BLOCK, tokens), 1, tokens % TOKEN_BLOCK))
    return groups


def _weighted_values(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """[h, D]: sum_t weights[h, t] * values[t, d], einsum within TOKEN_BLOCK blocks, the block sums folded in
    token order by `np.add.accumulate` (one einsum and one fold per group: the sums of one block at a time)."""
    heads, tokens = weights.shape
    head_dim = values.shape[1]
    out = np.empty((heads, head_dim), dtype=weights.dtype)
    groups = _block_groups(tokens, head_dim)
    folded = np.empty((1 + max(count for _, count, _ in groups), head_dim), dtype=weights.dtype)
    for index, (span, count, length) in enumerate(groups):
        # [blocks, D, tokens of a block], in the pass dtype
        blocks = np.ascontiguousarray(
            values[span].reshape(count, length, head_dim).transpose(0, 2, 1), dtype=weights.dtype
        )
        for head in range(heads):
            np.einsum(
                "bdt,bt->bd",
                blocks,
                weights[head, span].reshape(count, length),
                out=folded[1 : 1 + count],
                optimize=False,
            )
            if index:  # the total so far leads the fold; the first group starts from its first block's sum
                folded[0] = out[head]
            out[head] = np.add.accumulate(folded[(0 if index else 1) : 1 + count], axis=0)[-1]
    return out


def _head_batches(eligible: np.ndarray, group: int, tokens: int) -> list[tuple[int, np.ndarray]]:
    """(KV head, eligible query heads) batches of at most ROW_ELEMENTS // T heads, split over the threads."""
    size = max(1, min(ROW_ELEMENTS // tokens, math.ceil(np.count_nonzero(eligible) / PASS_THREADS)))
    batches = []
    for kv in range(len(eligible) // group):
        heads = kv * group + np.flatnonzero(eligible[kv * group : (kv + 1) * group])
        batches.extend((kv, heads[batch]) for batch in spans(heads.size, size))
    return batches


def attend(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scale: float,
    eligible: np.ndarray,
    dtype: type[np.floating],
    *,
    keep_weights: bool | np.ndarray = False,
) -> AttentionPass:
    """Softmax attention of float32 queries [QH, D] over keys / values [KVH, T, D] in `dtype`, eligible heads only;
    `keep_weights`: True for all [QH, T] weights, or a bool mask [QH] for the kept heads' rows in head order."""
    query_heads, head_dim = queries.shape
    kv_heads, tokens, _ = keys.shape
    group = group_size(query_heads, kv_heads)
    reference = np.full((query_heads, head_dim), np.nan, dtype=dtype)
    kept = np.broadcast_to(np.asarray(keep_weights, dtype=bool), (query_heads,))
    weight_row = np.cumsum(kept) - 1  # the row of `weights` holding each kept head
    weights = np.full((int(np.count_nonzero(kept)), tokens), np.nan, dtype=dtype) if kept.any() else None
    logits_finite = np.zeros(query_heads, dtype=bool)
    max_logit = np.full(query_heads, np.nan)
    sum_exp = np.full(query_heads, np.nan)
    s = dtype(scale)

    def evaluate(kv: int, rows: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            logits = np.empty((rows.size, tokens), dtype=dtype)
            _logits(queries[rows].astype(dtype, copy=False), keys[kv], s, logits)
            top = logits.max(axis=1)
            finite = np.isfinite(top) & np.isfinite(logits.min(axis=1))
            logits -= top[:, None]
            exponentials = elementary.exp(logits, out=logits)
            total = token_sum(exponentials)
            w = np.divide(exponentials, total[:, None], out=exponentials)
            reference[rows] = _weighted_values(w, values[kv])
            if weights is not None:
                held = kept[rows]
                weights[weight_row[rows[held]]] = w[held]
                weights[weight_row[rows[held & ~finite]]] = np.nan
            logits_finite[rows] = finite
            max_logit[rows] = top
            sum_exp[rows] = total

    run_on_threads(lambda batch: evaluate(*batch), _head_batches(eligible, group, tokens), PASS_THREADS)
    return AttentionPass(reference, weights, logits_finite, max_logit, sum_exp)


def attend_two(
    first: np.ndarray,
    second: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scale: float,
    eligible: np.ndarray,
    dtype: type[np.floating],
) -> tuple[AttentionPass, np.ndarray]:
    """`attend(first, ..., keep_weights=True)` and `attend(second, ...).reference`, bit for bit, in one pass:
    one transposed value block serves both (Qwen-size primary and narrowed passes: 12.3 -> 9.4 ms)."""
    query_heads = first.shape[0]
    kv_heads = keys.shape[0]
    group = group_size(query_heads, kv_heads)

    def stacked(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # per KV group: its heads of a, then of b
        rest = a.shape[1:]
        return np.concatenate([a.reshape(kv_heads, group, *rest), b.reshape(kv_heads, group, *rest)], axis=1).reshape(
            2 * query_heads, *rest
        )

    firsts = stacked(np.ones(query_heads, dtype=bool), np.zeros(query_heads, dtype=bool))
    both = attend(stacked(first, second), keys, values, scale, stacked(eligible, eligible), dtype, keep_weights=firsts)
    primary = AttentionPass(
        both.reference[firsts], both.weights, both.logits_finite[firsts], both.max_logit[firsts], both.sum_exp[firsts]
    )
    return primary, both.reference[~firsts]


def _top_tokens(weights: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` largest finite `weights`, largest first, ties by lower token."""
    kth = np.partition(weights, weights.size - count)[weights.size - count]
    candidates = np.flatnonzero(weights >= kth)  # every token tied with the count-th largest, in token order
    return candidates[np.argsort(-weights[candidates], kind="stable")[:count]]


def _entropies(weights: np.ndarray) -> np.ndarray:
    """float64 [QH]: `-sum w ln w` (0 ln 0 = 0) of each row in FP64, in token_sum's order."""
    total = np.zeros(weights.shape[0])
    for block in spans(weights.shape[1], TOKEN_BLOCK):
        w = weights[:, block].astype(np.float64)
        total += np.add.reduce(np.where(w > 0, w * elementary.log(w), 0.0), axis=-1)
    return 0.0 - total  # 0.0 - 0.0 is +0.0


def head_attention(primary: AttentionPass, eligible: np.ndarray, kv_heads: int) -> tuple[HeadAttention, ...]:
    """Per query head: maxLogit, logSumExp, entropy (nats, FP64), lastTokenWeight and topTokens."""
    query_heads, tokens = primary.weights.shape
    kv_of = np.arange(query_heads) // group_size(query_heads, kv_heads)  # the KV head each query head reads
    top_count = min(TOP_TOKENS, tokens)
    with np.errstate(all="ignore"):
        log_sum_exp = primary.max_logit + elementary.log(primary.sum_exp)
        entropy = _entropies(primary.weights)
    entries = []
    for h in range(query_heads):
        reason = None if primary.logits_finite[h] else (NONFINITE_LOGITS if eligible[h] else NONFINITE_INPUTS)
        if reason is not None:
            entries.append(HeadAttention(h, int(kv_of[h]), None, None, None, None, None, reason))
            continue
        row = primary.weights[h]
        numbers = (float(primary.max_logit[h]), float(log_sum_exp[h]), float(entropy[h]), float(row[-1]))
        top = tuple((int(t), float(row[t])) for t in _top_tokens(row, top_count))
        entries.append(HeadAttention(h, int(kv_of[h]), *numbers, top, None))
    return tuple(entries)
