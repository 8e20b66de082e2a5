"""The curated sample packets and pairs and their README, written by samples.writer; no UI."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

import numpy as np

from explorer.foundations.safeio import write_new
from explorer.packet.dtypes import BITS_DTYPE
from explorer.packet.snapshot import decode_scale
from explorer.samples.replays import RunVariant, run_files
from explorer.samples.writer import (
    DEFAULT_TENSOR_FILES,
    DISPATCH,
    FULL_SAMPLE_NAME,
    LAYER_INDEX,
    QWEN_FULL_TOKENS,
    QWEN_HEAD_DIM,
    QWEN_KV_HEADS,
    QWEN_MODEL_ID,
    QWEN_QUERY_HEADS,
    QWEN_SMALL_TOKENS,
    SAMPLES_README,
    PacketSpec,
    attention_output,
    bits_to_values,
    make_packet_files,
    packet_descriptor,
    synthetic_spec,
    tensor_bytes,
    values_to_bits,
    with_snapshot,
    with_tensor,
    write_files,
    write_packet,
)

# ---------------------------------------------------------------- curated samples

Writer = Callable[[str | os.PathLike], Path]  # writes one sample into the directory given and returns it
Samples = Mapping[str, tuple[str, Writer]]  # name -> (one-line description, writer)

# Geometry of the small fp32-Q / narrow-K/V samples.
SMALL_QUERY_HEADS = 8
SMALL_KV_HEADS = 2
SMALL_HEAD_DIM = 64
SMALL_TOKENS = 128

# Injected error: these channels of this query head are scaled by this factor.
INJECTED_HEAD = 5
INJECTED_CHANNELS = slice(8, 12)
INJECTED_FACTOR = 1.25

# Last-row mismatch: (kv head, channel, bit index) flips in the incoming rows.
KEY_BIT_FLIPS = ((0, 3, 15), (1, 17, 9), (1, 40, 0))  # bfloat16: sign, exponent, mantissa
VALUE_BIT_FLIPS = ((0, 22, 2),)

# NaNs planted in stored values: (kv head, token, channel, bfloat16 pattern).
QUIET_NAN_BF16 = 0x7FC0
SIGNALING_NAN_BF16 = 0x7F81
STORED_VALUE_NANS = ((1, 10, 3, QUIET_NAN_BF16), (1, 20, 7, SIGNALING_NAN_BF16))

# Refused sample: this byte of this tensor file is flipped after hashing.
CORRUPTED_TENSOR = "storedValues"
CORRUPTED_BYTE = 1000


def _small_spec(*, seed: int, kv_dtype: str = "bfloat16", output_dtype: str = "float32") -> PacketSpec:
    return synthetic_spec(
        qh=SMALL_QUERY_HEADS,
        kvh=SMALL_KV_HEADS,
        tokens=SMALL_TOKENS,
        head_dim=SMALL_HEAD_DIM,
        kv_dtype=kv_dtype,
        output_dtype=output_dtype,
        seed=seed,
    )


def clean_spec() -> PacketSpec:
    """Float32 queries, bfloat16 K/V, float32 output; everything consistent."""
    return _small_spec(seed=1)


def qwen_spec(
    *,
    tokens: int = QWEN_SMALL_TOKENS,
    head_dim: int = QWEN_HEAD_DIM,
    query_dtype: str = "bfloat16",
    output_dtype: str = "bfloat16",
    seed: int = 2,
    backend: str = "paged",
    scale: float | None = None,
) -> PacketSpec:
    """Shaped like the real Qwen3.6 capture (QH16/KVH2/D256 by default, bfloat16 K/V, bfloat16 kernel output)."""
    return synthetic_spec(
        qh=QWEN_QUERY_HEADS,
        kvh=QWEN_KV_HEADS,
        tokens=tokens,
        head_dim=head_dim,
        query_dtype=query_dtype,
        kv_dtype="bfloat16",
        output_dtype=output_dtype,
        kernel_output_dtype="bfloat16",
        seed=seed,
        backend=backend,
        scale=scale,
        model_id=QWEN_MODEL_ID,
    )


def qwen_full_spec(*, query_dtype: str = "bfloat16", output_dtype: str = "bfloat16", seed: int = 2) -> PacketSpec:
    """The full-size Qwen3.6 geometry, QH16/KVH2/D256/T5585 (about 11.4 MB all-bfloat16)."""
    return qwen_spec(tokens=QWEN_FULL_TOKENS, query_dtype=query_dtype, output_dtype=output_dtype, seed=seed)


def fp16_spec() -> PacketSpec:
    """Float32 queries, float16 K/V, float16 output."""
    return _small_spec(seed=3, kv_dtype="float16", output_dtype="float16")


def injected_error_spec() -> PacketSpec:
    """The clean packet with a few output channels of one query head scaled visibly."""
    spec = clean_spec()
    dtype, bits = spec.tensors["output"]
    values = bits_to_values(bits, dtype)
    values[0, INJECTED_HEAD, 0, INJECTED_CHANNELS] *= INJECTED_FACTOR
    return with_tensor(spec, "output", values_to_bits(values, dtype))


def _flip_bits(bits: np.ndarray, flips: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    flipped = bits.copy()
    for head, channel, bit in flips:
        flipped[0, head, 0, channel] ^= flipped.dtype.type(1 << bit)
    return flipped


def last_row_mismatch_spec() -> PacketSpec:
    """Incoming K/V rows that differ from the stored last row in a few sign, exponent and mantissa bits."""
    spec = _small_spec(seed=4)
    spec = with_tensor(spec, "incomingKeys", _flip_bits(spec.tensors["incomingKeys"][1], KEY_BIT_FLIPS))
    return with_tensor(spec, "incomingValues", _flip_bits(spec.tensors["incomingValues"][1], VALUE_BIT_FLIPS))


def nan_stored_values_spec() -> PacketSpec:
    """A quiet and a signaling NaN in stored values of one KV head; the output carries them through."""
    spec = _small_spec(seed=5)
    values = spec.tensors["storedValues"][1].copy()
    for head, token, channel, pattern in STORED_VALUE_NANS:
        values[0, head, token, channel] = pattern
    spec = with_tensor(spec, "storedValues", values)
    output = attention_output(spec.tensors, _scale(spec))
    return with_tensor(spec, "output", values_to_bits(output, spec.tensors["output"][0]))


def discarded_spec() -> PacketSpec:
    """A consistent packet whose sample the engine discarded."""
    return with_snapshot(_small_spec(seed=6), sampleOutcome="discarded")


# ---------------------------------------------------------------- the backend pair

# One selection captured from both backends: byte-identical all-bfloat16 inputs (QH16/KVH2, Qwen-like),
# outputs from the explorer's emulations of the two kernels (`pair_outputs`).
PAIR_HEAD_DIM = 128  # half the Qwen head dim keeps the committed packets small
PAIR_TOKENS = 256
PAIR_SEED = 8
# A sharper softmax than 1/sqrt(D) (a few tokens carry most weight, as in a trained model): with it
# about a sixth of the output elements differ between the two kernels, mostly by 1-2 bfloat16 ULP
# (at D256/T5585 782 of 4,096, the incident had 786).
PAIR_SCALE = 0.15
PAIR_FULL_SCALE = 0.15
PAIR_EMULATIONS = {"paged": "paged_two_pass", "contiguous": "mlx_two_pass"}  # the emulation writing each output
PAIR_TARGET_TOKENS = {"paged": 1928, "contiguous": 6829}  # the incident's two sampled tokens
PAIR_OTHER_LAYER = LAYER_INDEX + 1  # the selection-differs partner captured one layer further
# The inputs-differ partner: one stored key element (kv head, token, channel) with one bit flipped.
PAIR_CHANGED_KEY = (1, 100, 5)
PAIR_CHANGED_BIT = 15  # the bfloat16 sign bit
PAIR_NAMES = {
    "paged": "qwen36-pair-paged",
    "contiguous": "qwen36-pair-contiguous",
    "other-layer": "qwen36-pair-contiguous-other-layer",
    "input-differs": "qwen36-pair-contiguous-input-differs",
}
FULL_PAIR_NAMES = {"paged": "qwen36-pair-paged-full-t5585", "contiguous": "qwen36-pair-contiguous-full-t5585"}


def pair_outputs(tensors: Mapping[str, tuple[str, np.ndarray]], scale: float) -> dict[str, np.ndarray]:
    """The output bits [1, QH, 1, D] of each backend for the same inputs, from the emulation PAIR_EMULATIONS names
    for it (so on them it reproduces every element by construction)."""
    from explorer.analysis.emulation import native_output_bits

    dtype = tensors["output"][0]
    return {
        backend: native_output_bits(emulation_id, tensors, scale, dtype)
        for backend, emulation_id in PAIR_EMULATIONS.items()
    }


def with_record(spec: PacketSpec, **changes) -> PacketSpec:
    """A copy of `spec` whose selected record has the given fields replaced."""
    return with_snapshot(spec, records=[{**spec.snapshot["records"][0], **changes}, *spec.snapshot["records"][1:]])


def pair_spec(
    backend: str, *, tokens: int = PAIR_TOKENS, head_dim: int = PAIR_HEAD_DIM, scale: float = PAIR_SCALE
) -> PacketSpec:
    """One side of the backend pair: shared inputs and selection, this backend's dispatch, output and token."""
    spec = qwen_spec(tokens=tokens, head_dim=head_dim, seed=PAIR_SEED, backend=backend, scale=scale)
    spec = with_tensor(spec, "output", pair_outputs(spec.tensors, _scale(spec))[backend])
    return with_snapshot(spec, targetToken=PAIR_TARGET_TOKENS[backend])


def pair_full_spec(backend: str) -> PacketSpec:
    """One side of the backend pair at the full Qwen3.6 geometry (QH16/KVH2/D256/T5585)."""
    return pair_spec(backend, tokens=QWEN_FULL_TOKENS, head_dim=QWEN_HEAD_DIM, scale=PAIR_FULL_SCALE)


def pair_other_layer_spec() -> PacketSpec:
    """The contiguous side captured one layer further: a selection field differs, the bytes do not."""
    return with_record(pair_spec("contiguous"), storageLayerIndex=PAIR_OTHER_LAYER, modelLayerIndex=PAIR_OTHER_LAYER)


def pair_input_differs_spec() -> PacketSpec:
    """The contiguous side with one stored key element of the opposite sign, its output computed from those inputs."""
    spec = pair_spec("contiguous")
    keys = spec.tensors["storedKeys"][1].copy()
    kv_head, token, channel = PAIR_CHANGED_KEY
    keys[0, kv_head, token, channel] ^= keys.dtype.type(1 << PAIR_CHANGED_BIT)
    spec = with_tensor(spec, "storedKeys", keys)
    return with_tensor(spec, "output", pair_outputs(spec.tensors, _scale(spec))["contiguous"])


def _scale(spec: PacketSpec) -> float:
    return decode_scale(spec.snapshot["records"][0]["scaleBits"])


def _write_spec(build: Callable[[], PacketSpec]) -> Writer:
    return lambda directory: write_packet(directory, build())


def write_refused(directory: str | os.PathLike) -> Path:
    """The clean packet with one byte of a tensor file flipped after its hash was recorded."""
    spec = _small_spec(seed=7)
    descriptor = packet_descriptor(spec)
    dtype, bits = spec.tensors[CORRUPTED_TENSOR]
    raw = bytearray(tensor_bytes(spec, CORRUPTED_TENSOR))
    raw[CORRUPTED_BYTE] ^= 0x01
    corrupted = np.frombuffer(bytes(raw), dtype=BITS_DTYPE[dtype]).reshape(bits.shape)
    return write_packet(directory, with_tensor(spec, CORRUPTED_TENSOR, corrupted), descriptor=descriptor)


_SMALL = f"QH{SMALL_QUERY_HEADS}/KVH{SMALL_KV_HEADS}/D{SMALL_HEAD_DIM}/T{SMALL_TOKENS}"
_PAIR = f"QH{QWEN_QUERY_HEADS}/KVH{QWEN_KV_HEADS}/D{PAIR_HEAD_DIM}/T{PAIR_TOKENS}"

CURATED: Samples = {
    "clean-fp32q-bf16kv": (
        f"Clean decode step: float32 queries, bfloat16 K/V, float32 output ({_SMALL}).",
        _write_spec(clean_spec),
    ),
    "qwen36-bf16-t64": (
        f"All-bfloat16 packet shaped like the Qwen3.6 capture (QH16/KVH2/D256) at T={QWEN_SMALL_TOKENS}, "
        "bfloat16 kernel output.",
        _write_spec(qwen_spec),
    ),
    "fp16-kv": (f"Float32 queries with float16 K/V and a float16 output ({_SMALL}).", _write_spec(fp16_spec)),
    "injected-error-head5": (
        f"The clean packet with output channels {INJECTED_CHANNELS.start}-{INJECTED_CHANNELS.stop - 1} "
        f"of query head {INJECTED_HEAD} scaled by {INJECTED_FACTOR}.",
        _write_spec(injected_error_spec),
    ),
    "last-row-mismatch": (
        "Incoming key/value rows differ from the stored last row in sign, exponent and mantissa bits "
        "(inconclusive: last_row_mismatch).",
        _write_spec(last_row_mismatch_spec),
    ),
    "nan-stored-values": (
        "A quiet and a signaling NaN in the stored values of KV head 1, carried into the output "
        "(inconclusive: nonfinite_inputs, nonfinite_comparison).",
        _write_spec(nan_stored_values_spec),
    ),
    "discarded-sample": (
        "A consistent packet whose sample was discarded by the engine (inconclusive: sample_not_confirmed).",
        _write_spec(discarded_spec),
    ),
    "refused-hash-mismatch": (
        f"One byte of {DEFAULT_TENSOR_FILES[CORRUPTED_TENSOR]} flipped after hashing (refused: sha256_mismatch).",
        write_refused,
    ),
    PAIR_NAMES["paged"]: (
        f"Backend pair, side paged ({_PAIR}, all bfloat16, dispatch {DISPATCH['paged']}): output of the "
        f"emulation {PAIR_EMULATIONS['paged']}; target token {PAIR_TARGET_TOKENS['paged']}.",
        _write_spec(lambda: pair_spec("paged")),
    ),
    PAIR_NAMES["contiguous"]: (
        f"Backend pair, side contiguous: byte-identical inputs and selection, dispatch {DISPATCH['contiguous']}, "
        f"output of the emulation {PAIR_EMULATIONS['contiguous']} (partials stored in bfloat16); "
        f"target token {PAIR_TARGET_TOKENS['contiguous']}.",
        _write_spec(lambda: pair_spec("contiguous")),
    ),
    PAIR_NAMES["other-layer"]: (
        f"The contiguous side captured at layer {PAIR_OTHER_LAYER}: paired with the paged side, its selection "
        "differs (storageLayerIndex, modelLayerIndex) while its tensor bytes are the same.",
        _write_spec(pair_other_layer_spec),
    ),
    PAIR_NAMES["input-differs"]: (
        f"The contiguous side with one stored key element (KV head {PAIR_CHANGED_KEY[0]}, token "
        f"{PAIR_CHANGED_KEY[1]}, channel {PAIR_CHANGED_KEY[2]}) of the opposite sign, its output computed "
        "from those inputs: paired with the paged side, the inputs differ.",
        _write_spec(pair_input_differs_spec),
    ),
}


# ---------------------------------------------------------------- operator replay runs of the pair

# Runs of the contiguous side (the source packet), to be opened with the paged side as partner.
REPLAY_SOURCE, REPLAY_PARTNER = "contiguous", "paged"
REPLAY_RUN_NAMES = {
    "complete": "replay-qwen36-pair",
    "exited": "replay-qwen36-pair-segmented-exit-1",
    "readback": "replay-qwen36-pair-readback-differs",
}
FULL_REPLAY_RUN_NAME = "replay-qwen36-pair-full-t5585"


def write_run(directory: str | os.PathLike, spec: PacketSpec, variant: RunVariant) -> Path:
    """Write a replay run of the packet `spec` into `directory` (explorer/samples/replays.py makes its files)."""
    return write_files(directory, run_files(make_packet_files(spec), spec.tensors, _scale(spec), variant))


REPLAY_RUNS: Samples = {
    REPLAY_RUN_NAMES["complete"]: (
        f"Replay run of `{PAIR_NAMES[REPLAY_SOURCE]}`, all three arms: nativeSDPA reproduces the contiguous "
        "capture, both paged arms the paged one; readback byte-exact.",
        lambda directory: write_run(directory, pair_spec(REPLAY_SOURCE), RunVariant()),
    ),
    REPLAY_RUN_NAMES["exited"]: (
        "The same run with pagedSegmented failed (execution.json exit code 1, no pagedSegmented/, no analysis.json).",
        lambda directory: write_run(directory, pair_spec(REPLAY_SOURCE), RunVariant(failed_arm="pagedSegmented")),
    ),
    REPLAY_RUN_NAMES["readback"]: (
        "The same run whose pagedFixed readback of the stored keys differs in the last row (one bit of token T-1).",
        lambda directory: write_run(directory, pair_spec(REPLAY_SOURCE), RunVariant(readback_fault_arm="pagedFixed")),
    ),
}


NO_EXTRA: Samples = {}  # write_samples' default: none


def samples_readme(extra: Samples = NO_EXTRA) -> str:
    """README.md of a samples directory: one line per curated packet (and per `extra` sample, a campaign)."""
    lines = [
        "# Sample packets",
        "",
        "Synthetic attention packets generated by `explorer samples --out sample_packets`",
        "(`explorer/samples/packets.py`, fixed seeds: regenerating gives identical bytes).",
        "Open any of them with `explorer analyze sample_packets/<name>` or in the app.",
        "",
    ]
    lines += [f"- `{name}`: {description}" for name, (description, _) in CURATED.items()]
    lines += [
        "",
        "Operator replay runs (docs/replay.md), made by the explorer itself: the arms are its own kernel "
        "emulations (nativeSDPA: `mlx_two_pass`,",
        "pagedFixed and pagedSegmented: `paged_two_pass`), their readback the packet's own K/V bytes. "
        f"Open one with `explorer replay sample_packets/<run> --partner sample_packets/"
        f"{PAIR_NAMES[REPLAY_PARTNER]}`.",
        "",
    ]
    lines += [f"- `{name}`: {description}" for name, (description, _) in REPLAY_RUNS.items()]
    lines += [
        "",
        f"Compare the backend pair with `explorer compare sample_packets/{PAIR_NAMES['paged']} "
        f"sample_packets/{PAIR_NAMES['contiguous']}`;",
        f"pair `{PAIR_NAMES['paged']}` with `{PAIR_NAMES['other-layer']}` or `{PAIR_NAMES['input-differs']}` "
        "to see a selection or an input that differs.",
        "",
        f"The full-size Qwen3.6 geometry (QH16/KVH2/D256/T{QWEN_FULL_TOKENS}, all bfloat16, about 11.4 MB)",
        f"is not committed; `explorer samples --out DIR --full` also writes it as `{FULL_SAMPLE_NAME}`.",
        f"`--full` also writes the backend pair at that geometry: `{FULL_PAIR_NAMES['paged']}` and",
        f"`{FULL_PAIR_NAMES['contiguous']}` (about 11.4 MB each, not committed either), and a complete replay run "
        f"of the contiguous one, `{FULL_REPLAY_RUN_NAME}`.",
        "",
        "The backend pair's outputs come from the explorer's own kernel emulations (paged: "
        f"`{PAIR_EMULATIONS['paged']}`,",
        f"contiguous: `{PAIR_EMULATIONS['contiguous']}`), so on them the matching emulation reproduces every "
        "element by construction",
        "(`explorer compare A B --emulate default`); real captures are the real test.",
        "",
    ]
    lines += [f"- `{name}/`: {description}" for name, (description, _) in extra.items()]
    return "\n".join(lines + ([""] if extra else []))


def write_samples(out: str | os.PathLike, *, full: bool = False, extra: Samples = NO_EXTRA) -> list[Path]:
    """Write every curated packet and replay run (the full-size ones with `full`, and the `extra` samples: name ->
    (description, builder)) plus README.md into `out`; FileExistsError, nothing written, when a name is taken."""
    out = Path(out)
    builders = {name: build for name, (_, build) in (*CURATED.items(), *REPLAY_RUNS.items(), *extra.items())}
    if full:
        builders[FULL_SAMPLE_NAME] = _write_spec(qwen_full_spec)
        builders.update({name: _write_spec(partial(pair_full_spec, side)) for side, name in FULL_PAIR_NAMES.items()})
        builders[FULL_REPLAY_RUN_NAME] = lambda directory: write_run(
            directory, pair_full_spec(REPLAY_SOURCE), RunVariant()
        )
    out.mkdir(parents=True, exist_ok=True)
    taken = [name for name in (*builders, SAMPLES_README) if os.path.lexists(out / name)]
    if taken:
        raise FileExistsError(
            errno.EEXIST, f"it already holds {', '.join(taken)}; samples never overwrite", os.fspath(out)
        )
    written = []
    for name, build in builders.items():
        (out / name).mkdir()  # never through a link, never an existing directory
        written.append(build(out / name))
    write_new(out / SAMPLES_README, samples_readme(extra))
    return written
