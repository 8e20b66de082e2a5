"""FP32 / FP64 GQA softmax attention of an admitted packet, per-head eligibility and attention diagnostics; no I/O.

Every evaluation is group-wise: for each KV head one matrix product of its
eligible query heads against the stored keys, `(q[g, D] @ K[T, D].T) * s`, the
max-subtracted softmax and one product with the stored values. Repeated K/V are
never materialised; FP64 evaluations cast one KV head's K and V at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.analysis.result import HeadAttention

TOP_TOKENS = 5
NARROW_STORAGE_DTYPES = ("float16", "bfloat16")

NONFINITE_INPUTS = "nonfinite_inputs"
NONFINITE_LOGITS = "nonfinite_logits"
QUERIES_NOT_FLOAT32 = "queries_not_float32"
STORAGE_NOT_NARROW = "storage_not_narrow"


@dataclass(frozen=True)
class AttentionPass:
    """One evaluation of the formula for every query head, in one float dtype.

    `reference` [QH, D] is NaN for ineligible heads (an eligible head keeps what the
    formula gives, overflow included); `weights` [QH, T] is NaN for ineligible heads
    and for heads whose logits overflowed; `logits_finite` bool [QH] is False for
    both; `max_logit` / `sum_exp` float64 [QH] are the row maximum of the scaled
    logits and the sum of `exp(logits - max)` (NaN for ineligible heads).
    """

    reference: np.ndarray
    weights: np.ndarray
    logits_finite: np.ndarray
    max_logit: np.ndarray
    sum_exp: np.ndarray


def group_size(query_heads: int, kv_heads: int) -> int:
    return query_heads // kv_heads


def kv_head_of(query_heads: int, kv_heads: int) -> np.ndarray:
    """int64 [QH]: the KV head read by each query head (`h // (QH / KVH)`)."""
    return np.arange(query_heads) // group_size(query_heads, kv_heads)


def eligibility(query_nonfinite: np.ndarray, key_nonfinite: np.ndarray, value_nonfinite: np.ndarray) -> np.ndarray:
    """bool [QH]: head h is eligible iff q[h], K[kv] and V[kv] are all finite.

    Arguments are bool per head: [QH] for the queries, [KVH] for stored keys / values.
    """
    kv_bad = np.asarray(key_nonfinite) | np.asarray(value_nonfinite)
    return ~(np.asarray(query_nonfinite) | np.repeat(kv_bad, group_size(len(query_nonfinite), len(kv_bad))))


def narrowed_query_plan(query_dtype: str, storage_dtype: str) -> tuple[str | None, str | None]:
    """(dtype to narrow the queries to, None) when the counterfactual applies, else (None, reason)."""
    if query_dtype != "float32":
        return None, QUERIES_NOT_FLOAT32
    if storage_dtype not in NARROW_STORAGE_DTYPES:
        return None, STORAGE_NOT_NARROW
    return storage_dtype, None


def attend(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    scale: float,
    eligible: np.ndarray,
    dtype: type[np.floating],
) -> AttentionPass:
    """Softmax attention of queries [QH, D] over keys / values [KVH, T, D] in `dtype` arithmetic.

    Inputs are float32; `scale` is the packet's float32 scale (cast to `dtype`).
    Only eligible heads are evaluated; nonfinite intermediates of eligible heads
    (overflowing logits) are kept as the formula produces them.
    """
    query_heads, head_dim = queries.shape
    kv_heads, tokens, _ = keys.shape
    group = group_size(query_heads, kv_heads)
    reference = np.full((query_heads, head_dim), np.nan, dtype=dtype)
    weights = np.full((query_heads, tokens), np.nan, dtype=dtype)
    logits_finite = np.zeros(query_heads, dtype=bool)
    max_logit = np.full(query_heads, np.nan)
    sum_exp = np.full(query_heads, np.nan)
    s = dtype(scale)
    with np.errstate(all="ignore"):
        for kv in range(kv_heads):
            heads = kv * group + np.flatnonzero(eligible[kv * group : (kv + 1) * group])
            if heads.size == 0:
                continue
            q = queries[heads].astype(dtype, copy=False)
            k = keys[kv].astype(dtype, copy=False)
            logits = (q @ k.T) * s
            top = logits.max(axis=1, keepdims=True)
            exponentials = np.exp(logits - top)
            total = exponentials.sum(axis=1, keepdims=True)
            w = exponentials / total
            finite = np.isfinite(logits).all(axis=1)
            reference[heads] = w @ values[kv].astype(dtype, copy=False)
            weights[heads] = np.where(finite[:, None], w, dtype(np.nan))
            logits_finite[heads] = finite
            max_logit[heads] = top[:, 0]
            sum_exp[heads] = total[:, 0]
    return AttentionPass(reference, weights, logits_finite, max_logit, sum_exp)


def _top_tokens(weights: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` largest finite `weights`, largest first, ties by lower token."""
    kth = np.partition(weights, weights.size - count)[weights.size - count]
    candidates = np.flatnonzero(weights >= kth)  # every token tied with the count-th largest, in token order
    return candidates[np.argsort(-weights[candidates], kind="stable")[:count]]


def head_attention(primary: AttentionPass, eligible: np.ndarray, kv_heads: int) -> tuple[HeadAttention, ...]:
    """Per query head: maxLogit, logSumExp, entropy (nats), lastTokenWeight and topTokens of the primary pass.

    logSumExp is `max + ln(sum exp(logits - max))` and the entropy `-sum w ln w`
    (0 ln 0 = 0), both evaluated in FP64 from the FP32 quantities.
    """
    query_heads, tokens = primary.weights.shape
    kv_of = kv_head_of(query_heads, kv_heads)
    top_count = min(TOP_TOKENS, tokens)
    w = primary.weights.astype(np.float64)
    with np.errstate(all="ignore"):
        entropy = 0.0 - np.where(w > 0, w * np.log(w), 0.0).sum(axis=1)  # 0.0 - 0.0 is +0.0
        log_sum_exp = primary.max_logit + np.log(primary.sum_exp)
    entries = []
    for h in range(query_heads):
        reason = None if primary.logits_finite[h] else (NONFINITE_LOGITS if eligible[h] else NONFINITE_INPUTS)
        if reason is not None:
            entries.append(HeadAttention(h, int(kv_of[h]), None, None, None, None, None, reason))
            continue
        row = primary.weights[h]
        entries.append(
            HeadAttention(
                query_head=h,
                kv_head=int(kv_of[h]),
                max_logit=float(primary.max_logit[h]),
                log_sum_exp=float(log_sum_exp[h]),
                entropy=float(entropy[h]),
                last_token_weight=float(row[-1]),
                top_tokens=tuple((int(t), float(row[t])) for t in _top_tokens(row, top_count)),
                undefined_reason=None,
            )
        )
    return tuple(entries)
