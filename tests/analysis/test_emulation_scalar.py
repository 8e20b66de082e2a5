"""The vectorised emulations agree bit for bit with the scalar transcription of the contract, on many geometries and dtype mixes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from analysis_support import from_bits, to_bits
from emulation_scalar import emulate_head
from explorer.analysis.emulation import EmulationInputs, emulate, resolve_all

DTYPES = ("float32", "bfloat16", "float16")


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
    specs = resolve_all(ids, inputs.output_dtype)
    query_heads = inputs.queries.shape[0]
    group = query_heads // inputs.keys.shape[0]
    emulated = emulate(inputs, specs, np.ones(query_heads, dtype=bool))
    dtypes = (inputs.query_dtype, inputs.kv_dtype, inputs.output_dtype)
    checked = range(query_heads) if heads is None else heads
    for result in emulated:
        for h in checked:
            kv = h // group
            expected = emulate_head(result.spec.kernel, dict(result.spec.parameters), inputs.queries[h],
                                    inputs.keys[kv], inputs.values[kv], inputs.scale, dtypes)
            np.testing.assert_array_equal(result.values[h].view(np.uint32), expected.view(np.uint32),
                                          err_msg=f"{result.spec.id} head {h}")
    return emulated


GEOMETRIES = [  # (D, T, KVH, group, heads checked by the scalar code)
    (64, 1, 2, 4, (0, 7)),
    (64, 5, 1, 1, None),
    (80, 5, 2, 4, (0, 7)),
    (80, 300, 1, 1, None),
    (256, 5, 1, 8, (0, 7)),
    (256, 300, 1, 8, (3,)),
]
VARIANTS = [
    "default",
    "mlx_two_pass(blocks=2)", "mlx_two_pass(blocks=7,partialDType=float16)", "mlx_two_pass(blocks=301)",
    "paged_two_pass(partitionTokens=3)", "paged_two_pass(partitionTokens=64,partialDType=bfloat16)",
    "paged_two_pass(partitionTokens=5)", "paged_two_pass(partitionTokens=1)",
]


@pytest.mark.parametrize("head_dim,tokens,kv_heads,group,heads", GEOMETRIES)
def test_vectorised_matches_scalar_on_geometries(head_dim, tokens, kv_heads, group, heads):
    inputs = _inputs(head_dim=head_dim, tokens=tokens, kv_heads=kv_heads, group=group,
                     dtypes=("bfloat16", "bfloat16", "bfloat16"), seed=head_dim + tokens)
    _check(inputs, VARIANTS, heads)


@pytest.mark.parametrize("dtypes", list(itertools.product(DTYPES, DTYPES, DTYPES)))
def test_vectorised_matches_scalar_on_every_dtype_mix(dtypes):
    inputs = _inputs(head_dim=64, tokens=5, kv_heads=2, group=2, dtypes=dtypes, seed=11)
    _check(inputs, ["default", "mlx_two_pass(partialDType=bfloat16,blocks=2)",
                    "paged_two_pass(partialDType=float16,partitionTokens=2)"])


def test_blocks_larger_than_tokens_match_the_literal_loop_over_every_block():
    # The scalar code loops over all 1000 blocks (most visit no key); the core leaves them out.
    inputs = _inputs(head_dim=80, tokens=5, kv_heads=1, group=1, dtypes=("float32", "bfloat16", "float32"), seed=5)
    _check(inputs, ["mlx_two_pass(blocks=1000)", "mlx_two_pass(blocks=1000,partialDType=bfloat16)",
                    "paged_two_pass(partitionTokens=1000)"])


def test_the_variants_differ_where_the_arithmetic_differs():
    # The comparison above is not vacuous: on these inputs the kernels give different bits.
    inputs = _inputs(head_dim=256, tokens=300, kv_heads=1, group=4, dtypes=("bfloat16", "bfloat16", "float32"),
                     seed=3)
    emulated = {e.spec.id: e.bits for e in emulate(inputs, resolve_all("default", "float32"), np.ones(4, bool))}
    assert len(emulated) == 3
    for a, b in itertools.combinations(emulated.values(), 2):
        assert np.count_nonzero(a != b) > 0
