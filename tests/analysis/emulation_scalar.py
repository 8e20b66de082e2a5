"""A slow scalar transcription of the kernels' arithmetic and launch rules (the emulations' oracle).

A slow scalar transcription of the kernels' arithmetic and launch rules, written from docs/emulations.md and the
kernels' sources (not from the vectorised core).

Every value is a numpy.float32 scalar and every operation one float32 operation, or
one exactly rounded fused multiply-add (rational arithmetic) where fma=on; loops follow
the contract's wording literally: every block (even one that visits no key), every
simdgroup, every lane. Rounding to a 16-bit format uses ml_dtypes casts (float32 ->
bfloat16 / float16 are RNE), independent of explorer.packet.dtypes. The launch rules
are written out here again from the contract's text.
"""

from __future__ import annotations

import math
from fractions import Fraction

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


def _round_rational(value: Fraction) -> np.float32:
    """The float32 nearest to a nonzero rational (ties to even), subnormals and overflow included."""
    magnitude = abs(value)
    exponent = max(math.floor(math.log2(magnitude.numerator) - math.log2(magnitude.denominator)) - 1, -150)
    while Fraction(2) ** (exponent + 1) <= magnitude:
        exponent += 1
    quantum = Fraction(2) ** (max(exponent, -126) - 23)
    steps = magnitude / quantum
    whole = math.floor(steps)
    rest = steps - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    result = float(whole * quantum)  # exact in float64
    out = F32(result) if result <= float(np.finfo(F32).max) else F32(np.inf)
    return -out if value < 0 else out


def fma(a, b, c) -> np.float32:
    """round32(a * b + c) with one rounding, from exact rationals."""
    a, b, c = F32(a), F32(b), F32(c)
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return F32(F32(a * b) + c)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact != 0:
        return _round_rational(exact)
    product_negative = ((np.signbit(a) != np.signbit(b)) and a * b == 0) or (a * b < 0)
    return F32(-0.0) if product_negative and np.signbit(c) else ZERO


def madd(acc, a, b, fused: bool) -> np.float32:
    """acc + a * b: two roundings, or one when fused."""
    return fma(a, b, acc) if fused else F32(acc + F32(a * b))


def exp32(x: np.float32) -> np.float32:
    if x == -np.inf:
        return ZERO
    return F32(math.exp(float(x)))


def exp2_32(x: np.float32) -> np.float32:
    if x == -np.inf:
        return ZERO
    return F32(2.0 ** float(x))


def natural(hyp: dict):
    if hyp["exp"] == "exp2_scaled":
        return lambda x: exp2_32(F32(x * LOG2E))
    return exp32


def reduce32(lane: list, simd: str) -> np.float32:
    """The reduction of 32 lane values: the butterfly's lane 0, or the lane-order sum from +0."""
    if simd == "sequential":
        total = ZERO
        for value in lane:
            total = F32(total + value)
        return total
    for off in (16, 8, 4, 2, 1):
        lane = [F32(lane[j] + lane[j ^ off]) for j in range(32)]
    return lane[0]


def dot(x: list, y: list, hyp: dict) -> np.float32:
    d, fused = len(x), hyp["fma"]
    if d % 32 != 0:
        total = ZERO
        for i in range(d):
            total = madd(total, x[i], y[i], fused)
        return total
    per = d // 32
    lane = []
    for j in range(32):
        acc = ZERO
        for i in range(j * per, (j + 1) * per):
            acc = madd(acc, x[i], y[i], fused)
        lane.append(acc)
    return reduce32(lane, hyp["simd"])


def softmax_step(state, c, v_row, exp, fused):
    """One online-softmax step: state = (m, l, o list)."""
    m, l, o = state
    m_new = F32(max(m, c))
    f = ZERO if m == -np.inf else exp(F32(m - m_new))
    p = exp(F32(c - m_new))
    if fused:
        l = fma(l, f, p)
        o = [fma(p, v_row[i], F32(o[i] * f)) for i in range(len(o))]
    else:
        l = F32(F32(l * f) + p)
        o = [F32(F32(o[i] * f) + F32(p * v_row[i])) for i in range(len(o))]
    return m_new, l, o


def _divide(numerator, denominator):
    return numerator if denominator == 0 else F32(numerator / denominator)


def mlx_pass1(qs, K, V, blocks, hyp):
    exp = natural(hyp)
    states = []
    for b in range(blocks):
        state = (NEG_INF, ZERO, [ZERO] * len(qs))
        for t in range(b, len(K), blocks):
            state = softmax_step(state, dot(qs, K[t], hyp), V[t], exp, hyp["fma"])
        states.append(state)
    return states


def mlx_gqa_pass1(qs, K, V, blocks, hpt, hyp):
    """Upstream's sdpa_vector_2pass_1_gqa for one head: block b's contiguous chunk in HPT sub-chunks, merged in
    order."""
    exp, fused, d = natural(hyp), hyp["fma"], len(qs)
    finite_min = F32(np.finfo(F32).min)
    chunk = -(-len(K) // blocks)
    sub = -(-chunk // hpt)
    states = []
    for b in range(blocks):
        end = min(len(K), b * chunk + chunk)
        parts = []
        for c in range(hpt):
            state = (NEG_INF, ZERO, [ZERO] * d)
            for t in range(b * chunk + c * sub, min(end, b * chunk + (c + 1) * sub)):
                state = softmax_step(state, dot(qs, K[t], hyp), V[t], exp, fused)
            m, l, o = state
            parts.append((finite_min if m == -np.inf else m, l, o))
        top = finite_min
        for m, _, _ in parts:
            top = F32(max(top, m))
        denominator, numerator = ZERO, [ZERO] * d
        for m, l, o in parts:
            inverse = F32(F32(1.0) / l) if l > 0 else ZERO
            w = F32(l * exp(F32(m - top)))
            denominator = madd(denominator, w, F32(1.0), fused)
            numerator = [madd(numerator[i], w, F32(o[i] * inverse), fused) for i in range(d)]
        states.append((top, denominator, numerator))
    return states


def mlx_two_pass(q, K, V, s, out_dtype, blocks, partial_dtype, hyp, gqa_hpt=None):
    d = len(q)
    qs = [F32(s * q[i]) for i in range(d)]
    exp = natural(hyp)
    states = mlx_pass1(qs, K, V, blocks, hyp) if gqa_hpt is None else mlx_gqa_pass1(qs, K, V, blocks, gqa_hpt, hyp)
    maxes = [m for m, _, _ in states]
    sums = [l for _, l, _ in states]
    partials = [[rnd(x, partial_dtype) for x in o] for _, _, o in states]
    n = blocks // 32  # pass 2 reads the blocks 32 at a time: a tail is dropped
    big_m = NEG_INF
    for value in maxes[: 32 * n]:
        big_m = F32(max(big_m, value))
    lane_d = []
    for lane in range(32):
        acc = ZERO
        for k in range(n):
            acc = madd(acc, exp(F32(maxes[lane + 32 * k] - big_m)), sums[lane + 32 * k], hyp["fma"])
        lane_d.append(acc)
    total = reduce32(lane_d, hyp["simd"])
    out = []
    for i in range(d):
        lane_e = []
        for lane in range(32):
            acc = ZERO
            for k in range(n):
                acc = madd(acc, exp(F32(maxes[lane + 32 * k] - big_m)), partials[lane + 32 * k][i], hyp["fma"])
            lane_e.append(acc)
        out.append(rnd(_divide(reduce32(lane_e, hyp["simd"]), total), out_dtype))
    return out


def mlx_single_pass(q, K, V, s, out_dtype, hyp):
    d = len(q)
    qs = [F32(s * q[i]) for i in range(d)]
    exp = natural(hyp)
    states = mlx_pass1(qs, K, V, 32, hyp)
    big_m = NEG_INF
    for m, _, _ in states:
        big_m = F32(max(big_m, m))
    f = [exp(F32(m - big_m)) for m, _, _ in states]
    total = reduce32([F32(states[g][1] * f[g]) for g in range(32)], hyp["simd"])
    return [
        rnd(_divide(reduce32([F32(states[g][2][i] * f[g]) for g in range(32)], hyp["simd"]), total), out_dtype)
        for i in range(d)
    ]


def paged_two_pass(q, K, V, s, out_dtype, query_dtype, kv_dtype, partition_tokens, partial_dtype, simdgroups, hyp):
    d, t_count, fused = len(q), len(K), hyp["fma"]
    if query_dtype != kv_dtype:
        q = [rnd(x, kv_dtype) for x in q]
    qs = [F32(q[i] * s) for i in range(d)]
    parts = []
    lo = 0
    while lo < t_count:
        hi = min(t_count, lo + partition_tokens)
        groups = []
        for r in range(simdgroups):
            state = (NEG_INF, ZERO, [ZERO] * d)
            for t in range(lo + r, hi, simdgroups):
                state = softmax_step(state, F32(dot(qs, K[t], hyp) * LOG2E), V[t], exp2_32, fused)
            groups.append(state)
        m_p = NEG_INF
        for m_r, _, _ in groups:
            m_p = F32(max(m_p, m_r))
        l_p = ZERO
        o_p = [ZERO] * d
        for m_r, l_r, o_r in groups:
            scale_r = exp2_32(F32(m_r - m_p))
            l_p = madd(l_p, l_r, scale_r, fused)
            o_p = [madd(o_p[i], o_r[i], scale_r, fused) for i in range(d)]
        parts.append((m_p, l_p, [rnd(x, partial_dtype) for x in o_p]))
        lo = hi
    g = NEG_INF
    for m_p, _, _ in parts:
        g = F32(max(g, m_p))
    big_l = ZERO
    a = [ZERO] * d
    for m_p, l_p, o_p in parts:
        w_p = exp2_32(F32(m_p - g))
        big_l = madd(big_l, l_p, w_p, fused)
        a = [madd(a[i], o_p[i], w_p, fused) for i in range(d)]
    r = F32(F32(1.0) / big_l)
    return [rnd(F32(a[i] * r), out_dtype) for i in range(d)]


def single_pass(q, K, V, s, out_dtype):
    d = len(q)
    qs = [F32(s * q[i]) for i in range(d)]
    plain = {"exp": "exact", "fma": False, "simd": "butterfly"}
    state = (NEG_INF, ZERO, [ZERO] * d)
    for t in range(len(K)):
        state = softmax_step(state, dot(qs, K[t], plain), V[t], exp32, False)
    _, l, o = state
    return [rnd(F32(o[i] / l), out_dtype) for i in range(d)]


# ---------------------------------------------------------------- launch rules, from the contract's text


# build -> (launches `_gqa`, has D 512 two-pass kernels), from emulation-v4 §1's table
SCALAR_BUILDS = {
    "upstream": (True, False),
    "fork-base": (False, False),
    "fork-0.32.2": (True, False),
    "fork-fp32-partials": (True, False),
    "fork-d512": (True, True),
}


def mlx_launch(device: str, qh: int, kvh: int, d: int, t: int, build: str = "fork-fp32-partials"):
    """("mlx_two_pass", blocks, gqa HPT), ("mlx_single_pass", None, None), or None (unfused: not here)."""
    n = qh // kvh
    has_gqa, has_d512 = SCALAR_BUILDS[build]
    engine_d512 = has_d512 and d == 512
    if device == "cpu" or (d not in (64, 96, 128, 256) and not engine_d512) or n > 32:
        return None
    if not (engine_d512 or (device in ("s", "d") and t >= 1024) or (kvh < qh and t >= 4096)):
        return ("mlx_single_pass", None, None)
    gqa = {64: 8, 128: 4}.get(d) if has_gqa and qh == 8 * kvh and t >= 8192 else None
    if device == "s":
        blocks = 64
        if t > 1024 and n > 4:
            blocks = 128 if t <= 8192 else 256 if t <= 32768 else 512 if t <= 65536 else 1024
    elif device == "d":
        blocks = 128
        if n <= 2 and t > 8192:
            blocks = 256
        if n >= 6 and 16384 <= t < 65536:
            blocks = 512
        if n >= 6 and t >= 65536:
            blocks = 1024
    else:
        blocks = 64 if n >= 4 else 32
    return ("mlx_two_pass", blocks, gqa)


def paged_simdgroups(qh: int, kvh: int, d: int):
    n = qh // kvh
    hpt = max(x for x in range(1, n + 1) if n % x == 0 and x <= max(1, 1024 / d))
    for simdgroups in (8, 4, 2, 1):
        if 4 * (hpt * d + simdgroups * hpt * (d + 2)) <= 32768:
            return simdgroups
    return None


def emulate_head(kernel: str, params: dict, q, K, V, s, dtypes, geometry) -> np.ndarray | None:
    """The emulated output row (float32) of one query head; q [D], K / V [T, D] float32 arrays; None: not emulated.

    `params` holds every parameter's value (as the resolved spec lists them); `geometry`
    is (QH, KVH) of the packet (for mlx_sdpa's launch rule).
    """
    query_dtype, kv_dtype, out_dtype = dtypes
    q, K, V = list(q), [list(row) for row in K], [list(row) for row in V]
    s = F32(s)
    hyp = {
        "exp": params.get("exp", "exact"),
        "fma": params.get("fma", "off") == "on",
        "simd": params.get("simd", "butterfly"),
    }
    if kernel == "mlx_sdpa":
        chosen = mlx_launch(params["device"], geometry[0], geometry[1], len(q), len(K), params["build"])
        if chosen is None:
            return None
        kernel, blocks, gqa = chosen
        params = {**params, "blocks": blocks, "gqa": gqa}
    if kernel == "mlx_two_pass":
        row = mlx_two_pass(q, K, V, s, out_dtype, params["blocks"], params["partialDType"], hyp, params.get("gqa"))
    elif kernel == "mlx_single_pass":
        row = mlx_single_pass(q, K, V, s, out_dtype, hyp)
    elif kernel == "paged_two_pass":
        if len(q) not in (64, 128, 256, 512) or out_dtype != kv_dtype:
            return None  # the engine refuses the head dim; the kernel writes the stored keys' dtype only
        row = paged_two_pass(
            q,
            K,
            V,
            s,
            out_dtype,
            query_dtype,
            kv_dtype,
            params["partitionTokens"],
            params["partialDType"],
            params["simdgroups"],
            hyp,
        )
    else:
        row = single_pass(q, K, V, s, out_dtype)
    return np.array(row, dtype=np.float32)
