"""The vectorised emulations agree bit for bit with a scalar transcription of the documented rules.

The vectorised emulations agree bit for bit with the scalar transcription of the contract, on every kernel and
option of docs/emulations.md, many geometries and every dtype mix.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from explorer.analysis.emulation import EmulationInputs, emulate, resolve_all

from analysis_support import from_bits, to_bits
from emulation_scalar import emulate_head

DTYPES = ("float32", "bfloat16", "float16")
# Every kernel and option: the sweep, then each hypothesis alone and all three together on each kernel.
EVERY_OPTION = [
    "sweep",
    *(f"mlx_single_pass({h})" for h in ("exp=exp2_scaled", "fma=on", "simd=sequential")),
    "paged_two_pass(partitionTokens=3,partialDType=bfloat16,simdgroups=2)",
    "paged_two_pass(partitionTokens=1,simdgroups=1)",
    *(f"mlx_sdpa(device={device},fma=on,simd=sequential)" for device in ("s", "d", "other")),
]
# Each kernel once, with every hypothesis at once (the wider head dims, where the scalar code is slow).
COMPACT = [
    "default",
    "mlx_single_pass(exp=exp2_scaled,fma=on,simd=sequential)",
    "mlx_two_pass(blocks=64,partialDType=float16,exp=exp2_scaled,fma=on,simd=sequential)",
    "mlx_sdpa(device=other,exp=exp2_scaled)",
    "paged_two_pass(partitionTokens=5,simdgroups=8,fma=on,simd=sequential)",
]


def _inputs(*, head_dim, tokens, kv_heads, group, dtypes, seed, value_std=0.5, query_std=2.0):
    """Random promoted inputs; query magnitude large enough that the softmax is peaked, like real heads."""
    rng = np.random.default_rng(seed)
    query_dtype, kv_dtype, output_dtype = dtypes
    queries = from_bits(to_bits(rng.normal(0, query_std, (kv_heads * group, head_dim)), query_dtype), query_dtype)
    keys = from_bits(to_bits(rng.normal(0, 1.0, (kv_heads, tokens, head_dim)), kv_dtype), kv_dtype)
    values = from_bits(to_bits(rng.normal(0, value_std, (kv_heads, tokens, head_dim)), kv_dtype), kv_dtype)
    scale = np.float32(1.0 / np.sqrt(head_dim))
    return EmulationInputs(queries, keys, values, scale, query_dtype, kv_dtype, output_dtype)


def _check(inputs: EmulationInputs, ids, heads=None):
    """Every emulation of `ids` equals the scalar code on `heads` (all by default); returns the emulated outputs."""
    specs = resolve_all(ids, inputs.shape)
    query_heads, kv_heads = inputs.queries.shape[0], inputs.keys.shape[0]
    group = query_heads // kv_heads
    emulated = emulate(inputs, specs, np.ones(query_heads, dtype=bool))
    dtypes = (inputs.query_dtype, inputs.kv_dtype, inputs.output_dtype)
    for result in emulated:
        resolved = result.spec.resolved or {}
        if result.spec.kernel in ("mlx_run", "mlx_unfused") or resolved.get("kernel") == "mlx_unfused":
            continue  # checked against the real library (tests/analysis/test_emulation_v3.py)
        for h in range(query_heads) if heads is None else heads:
            kv = h // group
            expected = emulate_head(
                result.spec.kernel,
                dict(result.spec.parameters),
                inputs.queries[h],
                inputs.keys[kv],
                inputs.values[kv],
                inputs.scale,
                dtypes,
                (query_heads, kv_heads),
            )
            if expected is None:
                assert result.values is None and result.spec.not_emulated is not None, result.spec.id
                continue
            np.testing.assert_array_equal(
                result.values[h].view(np.uint32), expected.view(np.uint32), err_msg=f"{result.spec.id} head {h}"
            )
    return emulated


GEOMETRIES = [  # (D, T, KVH, group, heads checked by the scalar code, ids)
    (64, 1, 2, 4, (0, 7), EVERY_OPTION),
    (64, 40, 1, 1, None, EVERY_OPTION),
    (80, 5, 2, 4, (0, 7), EVERY_OPTION),  # D not a multiple of 32: the sequential dot
    (128, 33, 1, 8, (5,), COMPACT),
    (256, 5, 1, 8, (7,), COMPACT),
    (256, 12, 2, 4, (6,), COMPACT),
]


@pytest.mark.parametrize("head_dim,tokens,kv_heads,group,heads,ids", GEOMETRIES)
def test_every_kernel_and_option_matches_the_scalar_code(head_dim, tokens, kv_heads, group, heads, ids):
    inputs = _inputs(
        head_dim=head_dim,
        tokens=tokens,
        kv_heads=kv_heads,
        group=group,
        dtypes=("bfloat16", "bfloat16", "float32"),
        seed=head_dim + tokens,
    )
    _check(inputs, ids, heads)


PAGED_OPTIONS = [
    "paged_two_pass",
    "paged_two_pass(partitionTokens=5,simdgroups=8,fma=on,simd=sequential)",
    "paged_two_pass(partitionTokens=1,simdgroups=1)",
    "paged_two_pass(partialDType=bfloat16,simdgroups=2)",
    "paged_two_pass(dispatcher=early)",
]


@pytest.mark.parametrize("head_dim,tokens,kv_heads,group,heads", [(64, 40, 2, 4, (0, 7)), (128, 33, 1, 8, (5,))])
def test_the_paged_kernel_matches_the_scalar_code_where_it_can_write_the_output(
    head_dim, tokens, kv_heads, group, heads
):
    # The paged kernel writes the stored keys' dtype: float32 K/V and output keep every bit of its arithmetic
    # visible; bfloat16 queries are rounded to the keys' dtype first (a no-op widening here).
    inputs = _inputs(
        head_dim=head_dim,
        tokens=tokens,
        kv_heads=kv_heads,
        group=group,
        dtypes=("bfloat16", "float32", "float32"),
        seed=head_dim + tokens,
    )
    emulated = _check(inputs, PAGED_OPTIONS, heads)
    assert all(e.values is not None for e in emulated)
    for a, b in itertools.combinations(emulated[:4], 2):  # the options differ where the arithmetic differs
        assert np.count_nonzero(a.bits != b.bits) > 0, (a.spec.id, b.spec.id)


@pytest.mark.parametrize("dtypes", list(itertools.product(DTYPES, DTYPES, DTYPES)))
def test_every_dtype_mix_matches_the_scalar_code(dtypes):
    inputs = _inputs(head_dim=32, tokens=7, kv_heads=2, group=2, dtypes=dtypes, seed=11)
    _check(
        inputs,
        [
            "default",
            "mlx_two_pass(partialDType=bfloat16,fma=on)",
            "paged_two_pass(partialDType=float16,partitionTokens=2,fma=on)",
        ],
        heads=(3,),
    )


# T on both sides of each launch threshold, with the geometry that makes it decide (D 64, one head checked).
THRESHOLDS = [  # (T, KVH, group, ids)
    (1023, 1, 1, ["mlx_sdpa", "mlx_sdpa(device=d)"]),  # below 1,024: single pass on large GPUs
    (1024, 1, 1, ["mlx_sdpa", "mlx_sdpa(device=d,partialDType=float32)"]),  # two-pass, 64 / 128 blocks
    (1025, 1, 8, ["mlx_sdpa"]),  # s: 128 blocks above 1,024 with n > 4
    (4095, 1, 4, ["mlx_sdpa(device=other)"]),  # other: single pass below 4,096
    (4096, 1, 4, ["mlx_sdpa(device=other)"]),  # other: two-pass with GQA from 4,096, 64 blocks
]


@pytest.mark.parametrize("tokens,kv_heads,group,ids", THRESHOLDS)
def test_launch_thresholds_match_the_scalar_code(tokens, kv_heads, group, ids):
    inputs = _inputs(
        head_dim=64,
        tokens=tokens,
        kv_heads=kv_heads,
        group=group,
        dtypes=("bfloat16", "bfloat16", "bfloat16"),
        seed=tokens,
    )
    _check(inputs, ids, heads=(group - 1,))


def test_where_upstream_runs_its_gqa_variant_the_fork_base_build_runs_plain_two_pass():
    inputs = _inputs(head_dim=64, tokens=8192, kv_heads=1, group=8, dtypes=("bfloat16",) * 3, seed=1)
    (entry,) = _check(inputs, ["mlx_sdpa(build=fork-base)"], heads=(0,))  # the scalar code's plain two-pass
    assert entry.spec.resolved["build"] == "fork-base" and entry.spec.run.gqa_heads_per_simdgroup is None


def test_the_options_differ_where_the_arithmetic_differs():
    # The comparisons above are not vacuous: on these float32 outputs each option changes bits.
    inputs = _inputs(head_dim=256, tokens=300, kv_heads=1, group=4, dtypes=("bfloat16", "bfloat16", "float32"), seed=3)
    ids = [
        "mlx_two_pass",
        "mlx_two_pass(exp=exp2_scaled)",
        "mlx_two_pass(fma=on)",
        "mlx_two_pass(simd=sequential)",
        "mlx_two_pass(blocks=64)",
        "mlx_single_pass",
        "single_pass",
    ]
    emulated = emulate(inputs, resolve_all(ids, inputs.shape), np.ones(4, bool))
    for a, b in itertools.combinations(emulated, 2):
        assert np.count_nonzero(a.bits != b.bits) > 0, (a.spec.id, b.spec.id)
