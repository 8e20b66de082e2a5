"""A slow scalar transcription of emulation-v1 sections 1-2, written from the contract text (not from the vectorised core).

Every value is a numpy.float32 scalar and every operation one float32 operation;
loops follow the contract's wording literally: every block (even one that visits no
key), every simdgroup, every lane. Rounding to a 16-bit format uses ml_dtypes casts
(float32 -> bfloat16 / float16 are RNE), independent of explorer.packet.dtypes.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

F32 = np.float32
ZERO = F32(0.0)
NEG_INF = F32(-np.inf)
LOG2E = np.frombuffer(bytes.fromhex("3BAAB83F"), dtype="<f4")[0]  # 0x3FB8AA3B little-endian
NARROW = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


def rnd(x: np.float32, dtype: str) -> np.float32:
    """round(x, dtype) promoted back to float32."""
    if dtype == "float32":
        return F32(x)
    return F32(np.array([x], dtype=F32).astype(NARROW[dtype])[0])


def exp32(x: np.float32) -> np.float32:
    if x == -np.inf:
        return ZERO
    return F32(math.exp(float(x)))


def exp2_32(x: np.float32) -> np.float32:
    if x == -np.inf:
        return ZERO
    return F32(2.0 ** float(x))


def dot(x: list, y: list) -> np.float32:
    d = len(x)
    if d % 32 != 0:
        total = ZERO
        for i in range(d):
            total = F32(total + F32(x[i] * y[i]))
        return total
    per = d // 32
    lane = []
    for j in range(32):
        acc = ZERO
        for i in range(j * per, (j + 1) * per):
            acc = F32(acc + F32(x[i] * y[i]))
        lane.append(acc)
    for off in (16, 8, 4, 2, 1):
        lane = [F32(lane[j] + lane[j ^ off]) for j in range(32)]
    return lane[0]


def softmax_step(state, c, v_row, exp):
    """One online-softmax step: state = (m, l, o list)."""
    m, l, o = state
    m_new = F32(max(m, c))
    f = ZERO if m == -np.inf else exp(F32(m - m_new))
    p = exp(F32(c - m_new))
    l = F32(F32(l * f) + p)
    o = [F32(F32(o[i] * f) + F32(p * v_row[i])) for i in range(len(o))]
    return m_new, l, o


def mlx_two_pass(q, K, V, s, out_dtype, blocks, partial_dtype):
    d, t_count = len(q), len(K)
    qs = [F32(s * q[i]) for i in range(d)]
    maxes, sums, partials = [], [], []
    for b in range(blocks):
        state = (NEG_INF, ZERO, [ZERO] * d)
        for t in range(b, t_count, blocks):
            state = softmax_step(state, dot(qs, K[t]), V[t], exp32)
        maxes.append(state[0])
        sums.append(state[1])
        partials.append([rnd(x, partial_dtype) for x in state[2]])
    big_m = NEG_INF
    for value in maxes:
        big_m = F32(max(big_m, value))
    w = [exp32(F32(maxes[b] - big_m)) for b in range(blocks)]
    total = ZERO
    for b in range(blocks):
        total = F32(total + F32(sums[b] * w[b]))
    out = []
    for i in range(d):
        acc = ZERO
        for b in range(blocks):
            acc = F32(acc + F32(partials[b][i] * w[b]))
        out.append(rnd(F32(acc / total), out_dtype))
    return out


def paged_two_pass(q, K, V, s, out_dtype, query_dtype, kv_dtype, partition_tokens, partial_dtype):
    d, t_count = len(q), len(K)
    if query_dtype != kv_dtype:
        q = [rnd(x, kv_dtype) for x in q]
    qs = [F32(q[i] * s) for i in range(d)]
    parts = []
    lo = 0
    while lo < t_count:
        hi = min(t_count, lo + partition_tokens)
        groups = []
        for r in range(4):
            state = (NEG_INF, ZERO, [ZERO] * d)
            for t in range(lo + r, hi, 4):
                state = softmax_step(state, F32(dot(qs, K[t]) * LOG2E), V[t], exp2_32)
            groups.append(state)
        m_p = NEG_INF
        for m_r, _, _ in groups:
            m_p = F32(max(m_p, m_r))
        l_p = ZERO
        o_p = [ZERO] * d
        for m_r, l_r, o_r in groups:
            scale_r = exp2_32(F32(m_r - m_p))
            l_p = F32(l_p + F32(l_r * scale_r))
            o_p = [F32(o_p[i] + F32(o_r[i] * scale_r)) for i in range(d)]
        parts.append((m_p, l_p, [rnd(x, partial_dtype) for x in o_p]))
        lo = hi
    g = NEG_INF
    for m_p, _, _ in parts:
        g = F32(max(g, m_p))
    big_l = ZERO
    a = [ZERO] * d
    for m_p, l_p, o_p in parts:
        w_p = exp2_32(F32(m_p - g))
        big_l = F32(big_l + F32(l_p * w_p))
        a = [F32(a[i] + F32(o_p[i] * w_p)) for i in range(d)]
    r = F32(F32(1.0) / big_l)
    return [rnd(F32(a[i] * r), out_dtype) for i in range(d)]


def single_pass(q, K, V, s, out_dtype):
    d = len(q)
    qs = [F32(s * q[i]) for i in range(d)]
    state = (NEG_INF, ZERO, [ZERO] * d)
    for t in range(len(K)):
        state = softmax_step(state, dot(qs, K[t]), V[t], exp32)
    _, l, o = state
    return [rnd(F32(o[i] / l), out_dtype) for i in range(d)]


def emulate_head(kernel: str, params: dict, q, K, V, s, dtypes) -> np.ndarray:
    """The emulated output row (float32) of one query head; q [D], K / V [T, D] float32 arrays."""
    query_dtype, kv_dtype, out_dtype = dtypes
    q, K, V = list(q), [list(row) for row in K], [list(row) for row in V]
    s = F32(s)
    if kernel == "mlx_two_pass":
        row = mlx_two_pass(q, K, V, s, out_dtype, params.get("blocks", 128), params.get("partialDType", out_dtype))
    elif kernel == "paged_two_pass":
        row = paged_two_pass(q, K, V, s, out_dtype, query_dtype, kv_dtype, params.get("partitionTokens", 256),
                             params.get("partialDType", "float32"))
    else:
        row = single_pass(q, K, V, s, out_dtype)
    return np.array(row, dtype=np.float32)
