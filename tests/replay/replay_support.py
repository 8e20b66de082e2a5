"""Helpers of the replay tests: a sample pair and a replay run written into a temporary root.

Helpers of the replay tests: a sample pair and a replay run written into a temporary root, with edits; no
assertions.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from explorer.packet.dtypes import BITS_DTYPE
from explorer.replay.model import ARMS
from explorer.samples import packets as samples
from explorer.samples.replays import RunVariant, analysis_document, run_files

SOURCE, PARTNER, RUN = "contiguous-capture", "paged-capture", "run"


@functools.cache
def spec(side: str) -> samples.PacketSpec:
    return samples.pair_spec(side)


def scale_of(packet: samples.PacketSpec) -> float:
    return float(np.uint32(packet.snapshot["records"][0]["scaleBits"]).view(np.float32))


@functools.cache
def _files(variant: RunVariant) -> Mapping[str, bytes]:
    source = spec("contiguous")
    return run_files(samples.make_packet_files(source), source.tensors, scale_of(source), variant)


COMPLETE_RUN = RunVariant()  # no failed arm, no readback fault


def run_of(variant: RunVariant = COMPLETE_RUN) -> dict[str, bytes]:
    """A fresh copy of the files of a sample run of the contiguous capture."""
    return dict(_files(variant))


def write_root(root: Path, files: Mapping[str, bytes] | None = None, partner: bool = True) -> Path:
    """root/SOURCE (the contiguous capture), root/PARTNER (the paged one) and root/RUN; returns the run."""
    samples.write_packet(root / SOURCE, spec("contiguous"))
    if partner:
        samples.write_packet(root / PARTNER, spec("paged"))
    return samples.write_files(root / RUN, run_of() if files is None else files)


def edit_json(files: dict[str, bytes], name: str, change: Callable[[dict], None]) -> dict[str, bytes]:
    value = json.loads(files[name])
    change(value)
    files[name] = json.dumps(value, indent=2).encode()
    return files


def replace_tensor(files: dict[str, bytes], arm: str, name: str, data: bytes) -> dict[str, bytes]:
    """The arm's tensor `name` replaced by `data`, its descriptor's hash and length following."""
    files[f"{arm}/{name}.bin"] = data

    def describe(result: dict) -> None:
        result["tensors"][name].update(byteCount=len(data), sha256=hashlib.sha256(data).hexdigest())

    return edit_json(files, f"{arm}/result.json", describe)


def flip_bit(data: bytes, offset: int, bit: int = 0) -> bytes:
    changed = bytearray(data)
    changed[offset] ^= 1 << bit
    return bytes(changed)


def spec_run(packet: samples.PacketSpec) -> dict[str, bytes]:
    """The files of a complete replay run of the packet `packet` (arms from the explorer's emulations)."""
    return run_files(samples.make_packet_files(packet), packet.tensors, scale_of(packet), RunVariant())


def with_tool_analysis(
    files: dict[str, bytes],
    packet: samples.PacketSpec,
    reference: np.ndarray,
    arm_outputs: Mapping[str, np.ndarray] | None = None,
) -> dict[str, bytes]:
    """analysis.json rewritten against the tool reference `reference` (float32 [QH, D]) for the arms' outputs.

    `arm_outputs`: native bits [1, QH, 1, D] per arm, written as the arms' output.bin too; default the run's own.
    """
    dtype = packet.tensors["queries"][0]
    shape = packet.tensors["queries"][1].shape
    if arm_outputs is None:
        arm_outputs = {
            arm: np.frombuffer(files[f"{arm}/output.bin"], dtype=BITS_DTYPE[dtype]).reshape(shape) for arm in ARMS
        }
    else:
        for arm, bits in arm_outputs.items():
            replace_tensor(files, arm, "output", np.ascontiguousarray(bits, dtype=BITS_DTYPE[dtype]).tobytes())
    value = json.loads(files["input.json"])
    document = analysis_document(
        value, hashlib.sha256(files["input.json"]).hexdigest(), packet.tensors, scale_of(packet), arm_outputs, reference
    )
    files["analysis.json"] = (json.dumps(document, indent=2) + "\n").encode()
    return files
