"""Synthetic capture campaigns: one request decoded on two backends through a small model.

Packets are written as the capture tool would: each cell's inputs come from that backend's own hidden state and
K/V cache, so a kernel difference reaches later cells by the model's own arithmetic (docs/campaigns.md, "The
samples"). Both backends round to nearest even but at the origin cell, where the second truncates (at most
1 ULP); at the diverge step the sampler's draw falls between the two backends' probabilities, so the tokens
differ from then on; one cell is not captured on the second backend.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from explorer.foundations.record import Record, record
from explorer.packet.model import TENSOR_NAMES
from explorer.samples.packets import (
    DISPATCH,
    QWEN_KV_HEADS,
    QWEN_QUERY_HEADS,
    PacketSpec,
    attention_output,
    bits_to_values,
    synthetic_spec,
    values_to_bits,
    with_record,
    with_snapshot,
    with_tensor,
    write_packet,
)
from explorer.samples.writer import OUTPUT_INDEX, SEED_TOKEN

BACKENDS = ("paged", "contiguous")
MODEL_ID = "Qwen3.6 (synthetic campaign)"
CAMPAIGN_SEED = 31
HIDDEN = 64  # the toy model's hidden width
VOCABULARY = 512
TOKEN_BASE = 6000  # token ids are TOKEN_BASE + row of the toy vocabulary
LOGIT_SCALE = 4.0
DRAW = 0.5  # the sampler's uniform draw at every step but DIVERGE_STEP
DTYPE = "bfloat16"


@record
class CampaignShape(Record):
    """The captured grid and where its events sit (steps and layers counted from 0)."""

    layers: int
    steps: int
    query_heads: int
    kv_heads: int
    head_dim: int
    prefill_tokens: int
    origin: tuple[int, int]  # (step, layer) where the second backend truncates
    diverge_step: int  # the step whose sampled tokens differ (seed tokens differ from the next step on)
    missing: tuple[int, int] | None  # (step, layer) not captured on the second backend, None: every cell captured


SAMPLE_SHAPE = CampaignShape(
    layers=4,
    steps=3,
    query_heads=QWEN_QUERY_HEADS,
    kv_heads=QWEN_KV_HEADS,
    head_dim=64,
    prefill_tokens=32,
    origin=(0, 1),
    diverge_step=1,
    missing=(1, 3),
)
# The committed one: 7 packets, so that sample_packets/ stays within the app list's first page (20 rows).
CURATED_SHAPE = CampaignShape(
    layers=2,
    steps=2,
    query_heads=4,
    kv_heads=2,
    head_dim=8,
    prefill_tokens=4,
    origin=(0, 0),
    diverge_step=0,
    missing=(1, 1),
)
CURATED_NAME = "campaign-qwen36-request2"
SAMPLE_NAME = "campaign-qwen36-request2-d64"


def packet_name(backend: str, step: int, layer: int) -> str:
    return f"{backend}-o{OUTPUT_INDEX + step}-l{layer}"


def _weights(shape: CampaignShape, layer: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([CAMPAIGN_SEED, layer])
    width = {"q": shape.query_heads, "k": shape.kv_heads, "v": shape.kv_heads}
    weights = {
        name: rng.normal(0.0, 1.0 / np.sqrt(HIDDEN), (heads * shape.head_dim, HIDDEN)) for name, heads in width.items()
    }
    attended = shape.query_heads * shape.head_dim
    weights["o"] = rng.normal(0.0, 0.5 / np.sqrt(attended), (HIDDEN, attended))
    weights["prefill_k"] = rng.normal(0.0, 1.0, (1, shape.kv_heads, shape.prefill_tokens, shape.head_dim))
    weights["prefill_v"] = rng.normal(0.0, 0.5, (1, shape.kv_heads, shape.prefill_tokens, shape.head_dim))
    return weights


def _normed(hidden: np.ndarray) -> np.ndarray:
    return hidden / np.sqrt(np.mean(hidden * hidden))


def _bits(values: np.ndarray) -> np.ndarray:
    return values_to_bits(values, DTYPE)


def _truncated(values: np.ndarray) -> np.ndarray:
    """bfloat16 by truncation (round toward zero) of the float32 value: the origin's different rounding."""
    return (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _cdf(hidden: np.ndarray, unembed: np.ndarray) -> np.ndarray:
    logits = LOGIT_SCALE * unembed @ _normed(hidden)
    weights = np.exp(logits - logits.max())
    return np.cumsum(weights / weights.sum())


def _sample(cdf: np.ndarray, draw: float) -> int:
    return TOKEN_BASE + int(min(np.searchsorted(cdf, draw, side="right"), len(cdf) - 1))


def campaign_specs(shape: CampaignShape) -> Iterator[tuple[str, PacketSpec]]:
    """Every packet of the campaign as (name, spec), step by step (one step's packets held at a time)."""
    rng = np.random.default_rng(CAMPAIGN_SEED)
    embed = rng.normal(0.0, 1.0, (VOCABULARY, HIDDEN))
    unembed = rng.normal(0.0, 1.0 / np.sqrt(HIDDEN), (VOCABULARY, HIDDEN))
    weights = [_weights(shape, layer) for layer in range(shape.layers)]
    scale = float(np.float32(1.0 / np.sqrt(shape.head_dim)))
    caches = {backend: [(_bits(w["prefill_k"]), _bits(w["prefill_v"])) for w in weights] for backend in BACKENDS}
    tokens = dict.fromkeys(BACKENDS, SEED_TOKEN)
    for step in range(shape.steps):
        hidden = {backend: embed[(tokens[backend] - TOKEN_BASE) % VOCABULARY].copy() for backend in BACKENDS}
        captured = {backend: [] for backend in BACKENDS}
        for layer, w in enumerate(weights):
            for backend in BACKENDS:
                normed = _normed(hidden[backend])
                q = _bits((w["q"] @ normed).reshape(1, shape.query_heads, 1, shape.head_dim))
                k = _bits((w["k"] @ normed).reshape(1, shape.kv_heads, 1, shape.head_dim))
                v = _bits((w["v"] @ normed).reshape(1, shape.kv_heads, 1, shape.head_dim))
                keys, values = (
                    np.concatenate([old, new], axis=2) for old, new in zip(caches[backend][layer], (k, v), strict=True)
                )
                caches[backend][layer] = (keys, values)
                inputs = (q, keys, values, k, v)  # in TENSOR_NAMES order, the output last
                tensors = {name: (DTYPE, bits) for name, bits in zip(TENSOR_NAMES, inputs, strict=False)}
                exact = attention_output(tensors, scale)
                truncates = backend == BACKENDS[1] and (step, layer) == shape.origin
                output = _truncated(exact) if truncates else _bits(exact)
                tensors["output"] = (DTYPE, output)
                hidden[backend] = hidden[backend] + w["o"] @ bits_to_values(output, DTYPE).reshape(-1)
                captured[backend].append(tensors)
        cdfs = {backend: _cdf(hidden[backend], unembed) for backend in BACKENDS}
        draw = DRAW
        if step == shape.diverge_step:
            at = int(np.argmax(np.abs(cdfs[BACKENDS[0]] - cdfs[BACKENDS[1]])))
            draw = float((cdfs[BACKENDS[0]][at] + cdfs[BACKENDS[1]][at]) / 2)
        targets = {backend: _sample(cdfs[backend], draw) for backend in BACKENDS}
        diverges = targets[BACKENDS[0]] != targets[BACKENDS[1]]
        if diverges != (step == shape.diverge_step) and tokens[BACKENDS[0]] == tokens[BACKENDS[1]]:
            raise AssertionError(f"the sampled tokens at step {step} do not follow the campaign's shape")
        for backend in BACKENDS:
            for layer, tensors in enumerate(captured[backend]):
                if backend == BACKENDS[1] and (step, layer) == shape.missing:
                    continue
                yield (
                    packet_name(backend, step, layer),
                    _spec(shape, backend, step, layer, tensors, scale, tokens[backend], targets[backend]),
                )
        tokens = targets


def _spec(
    shape: CampaignShape,
    backend: str,
    step: int,
    layer: int,
    tensors: Mapping[str, tuple[str, np.ndarray]],
    scale: float,
    seed_token: int,
    target_token: int,
) -> PacketSpec:
    spec = synthetic_spec(
        qh=shape.query_heads,
        kvh=shape.kv_heads,
        tokens=shape.prefill_tokens + step + 1,
        head_dim=shape.head_dim,
        query_dtype=DTYPE,
        kv_dtype=DTYPE,
        output_dtype=DTYPE,
        kernel_output_dtype=DTYPE,
        seed=CAMPAIGN_SEED,
        backend=backend,
        scale=scale,
        model_id=MODEL_ID,
    )
    for name, (_, bits) in tensors.items():
        spec = with_tensor(spec, name, bits)
    placed = {"outputIndex": OUTPUT_INDEX + step, "storageLayerIndex": layer, "modelLayerIndex": layer}
    spec = with_record(spec, **placed, dispatch=DISPATCH[backend])
    configuration = {**spec.snapshot["configuration"], "outputIndex": OUTPUT_INDEX + step}
    return with_snapshot(spec, configuration=configuration, seedToken=seed_token, targetToken=target_token)


def write_campaign(directory: str | os.PathLike, shape: CampaignShape = SAMPLE_SHAPE) -> Path:
    """Write every packet of the campaign into `directory` (one sub-directory each); never overwrites."""
    directory = Path(directory)
    for name, spec in campaign_specs(shape):
        write_packet(directory / name, spec)
    return directory


def description(shape: CampaignShape) -> str:
    """The samples README's line on a campaign of this shape."""
    step, layer = shape.origin
    missing_step, missing_layer = shape.missing
    geometry = f"QH{shape.query_heads}/KVH{shape.kv_heads}/D{shape.head_dim}, all bfloat16"
    return (
        f"A capture campaign of one request on two backends ({', '.join(BACKENDS)}), {shape.layers} layers x "
        f"{shape.steps} steps ({geometry}), one packet per backend, layer and step "
        f"(`<backend>-o<outputIndex>-l<layer>`). The {BACKENDS[1]} kernel truncates its output to bfloat16 at "
        f"step {OUTPUT_INDEX + step}, layer {layer} (the origin: inputs identical, outputs differ by at most 1 "
        f"ULP); later cells inherit differing inputs; the sampled tokens differ at step "
        f"{OUTPUT_INDEX + shape.diverge_step}, so the seed tokens differ from step "
        f"{OUTPUT_INDEX + shape.diverge_step + 1}; step {OUTPUT_INDEX + missing_step}, layer {missing_layer} is "
        f"not captured on {BACKENDS[1]}. Open it with `explorer campaign DIR/<this directory>`."
    )


CURATED_CAMPAIGNS = {
    CURATED_NAME: (description(CURATED_SHAPE), lambda directory: write_campaign(directory, CURATED_SHAPE))
}
SAMPLE_CAMPAIGNS = {SAMPLE_NAME: (description(SAMPLE_SHAPE), lambda directory: write_campaign(directory))}
