"""Helpers for the admission tests: real packets written by explorer.samples, then mutated on disk.

Imported by the test modules as `packet_support` (this directory has no package)."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from explorer.packet.model import Admission
from explorer.samples.packets import PacketSpec, packet_descriptor, synthetic_spec, write_packet

DELETE = object()  # a change that removes the key
OBSERVED = ("queries", "incomingKeys", "incomingValues", "output")


def _unescape(token: str) -> str | int:
    token = token.replace("~1", "/").replace("~0", "~")
    return int(token) if token.isdigit() else token


def _parent(document: Any, pointer: str) -> tuple[Any, str | int]:
    tokens = [_unescape(token) for token in pointer.split("/")[1:]]
    for token in tokens[:-1]:
        document = document[token]
    return document, tokens[-1]


def apply_changes(document: Any, changes: Mapping[str, Any] | Callable[[Any], None] | None) -> Any:
    """A deep copy of `document` with each JSON pointer set (DELETE removes; a callable is applied to the copy)."""
    document = copy.deepcopy(document)
    if callable(changes):
        changes(document)
        return document
    for pointer, value in (changes or {}).items():
        parent, key = _parent(document, pointer)
        if value is DELETE:
            del parent[key]
        elif isinstance(parent, list) and key == len(parent):
            parent.append(value)
        else:
            parent[key] = value
    return document


def with_snapshot_changes(spec: PacketSpec, changes) -> PacketSpec:
    """The spec with its snapshot changed; the descriptor written from it hashes the new metadata."""
    return dataclasses.replace(spec, snapshot=apply_changes(spec.snapshot, changes))


def with_tensor(spec: PacketSpec, name: str, bits: np.ndarray, dtype: str | None = None) -> PacketSpec:
    """The spec with tensor `name` replaced, its record observation following (so only geometry changes)."""
    dtype = spec.tensors[name][0] if dtype is None else dtype
    tensors = {**spec.tensors, name: (dtype, np.ascontiguousarray(bits))}
    snapshot = copy.deepcopy(spec.snapshot)
    if name in OBSERVED:
        observed = snapshot["records"][0][name]
        observed["dtype"] = dtype
        observed["shape"] = list(bits.shape)
    return dataclasses.replace(spec, tensors=tensors, snapshot=snapshot)


def build(
    directory: Path, *, spec: PacketSpec | None = None, descriptor=None, snapshot=None, metadata: bytes | None = None
) -> Path:
    """Write a packet: `spec` (default synthetic_spec()) with snapshot and packet.json changes applied."""
    spec = synthetic_spec() if spec is None else spec
    if snapshot is not None:
        spec = with_snapshot_changes(spec, snapshot)
    written = apply_changes(packet_descriptor(spec, metadata=metadata), descriptor)
    return write_packet(directory, spec, descriptor=written, metadata=metadata)


def read_descriptor(directory: Path) -> dict:
    return json.loads((directory / "packet.json").read_text())


def write_descriptor(directory: Path, descriptor: dict) -> None:
    (directory / "packet.json").write_text(json.dumps(descriptor, indent=2))


def problems(admission: Admission) -> list[tuple[str, str | None]]:
    return [(problem.code, problem.field) for problem in admission.refusals]


def ordered(expected) -> list[tuple[str, str | None]]:
    """Expected (code, field) pairs in the admission's order: by code, then field (None first)."""
    return sorted(expected, key=lambda item: (item[0], item[1] is not None, item[1] or ""))


def reason_codes(admission: Admission) -> list[str]:
    return [reason.code for reason in admission.reasons]
