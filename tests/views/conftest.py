"""Fixtures of the view tests: the curated samples and a few edge packets, analyzed once.

Fixtures of the view tests: the curated samples and a few edge packets written by explorer.samples, analyzed
once.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import explorer
from explorer.analysis.result import Analysis
from explorer.packet.model import INCONCLUSIVE, Reason
from explorer.samples.packets import CURATED, synthetic_spec, values_to_bits, with_tensor, write_packet, write_samples

NO_FACTS_CODE = "geometry_unsupported"


def _edge_specs():
    infinite = synthetic_spec(qh=4, kvh=2, tokens=5, head_dim=8, seed=3)
    queries = np.array(infinite.tensors["queries"][1], copy=True)
    queries[0, 1, 0, 2] = values_to_bits(np.array([np.inf]), "float32")[0]
    queries[0, 3, 0, 5] = values_to_bits(np.array([-np.inf]), "float32")[0]
    return {
        # one head, one token, one channel: every map and chart is a single cell
        "tiny": synthetic_spec(qh=1, kvh=1, tokens=1, head_dim=1, seed=1),
        # float32 storage (no narrowed-Q counterfactual) and a kernel output dtype beside the output dtype
        "float32-kv-kernel-bf16": synthetic_spec(
            qh=4,
            kvh=2,
            tokens=6,
            head_dim=8,
            kv_dtype="float32",
            output_dtype="float32",
            kernel_output_dtype="bfloat16",
            seed=2,
        ),
        # +inf and -inf in the queries: ineligible heads, null metrics, undefined attention
        "infinite-queries": with_tensor(infinite, "queries", queries),
    }


@pytest.fixture(scope="session")
def analyses(tmp_path_factory) -> dict[str, Analysis]:
    """name -> analysis of every curated sample and every edge packet."""
    root = tmp_path_factory.mktemp("view-samples")
    write_samples(root)
    for name, spec in _edge_specs().items():
        write_packet(root / name, spec)
    found = {name: explorer.analyze(root / name) for name in [*CURATED, *_edge_specs()]}
    discarded = found["discarded-sample"]
    # An inconclusive result without tensor facts, which the views must explain like any other.
    found["inconclusive-without-facts"] = dataclasses.replace(
        discarded,
        status=INCONCLUSIVE,
        facts=None,
        numerics=None,
        reasons=(Reason(NO_FACTS_CODE, "hand-built: no tensor facts"),),
    )
    return found
