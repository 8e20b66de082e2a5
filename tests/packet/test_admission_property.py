"""Property tests: mutated valid packets never make admission or analysis raise.

Property tests: mutated valid packets (field values and types, bytes, lengths, paths) never make admission or
analysis raise.

`test_admit_never_raises` checks admission alone; `test_analyze_never_raises`
runs the same mutations through `explorer.analyze` (the numerics) and the JSON
report, and is skipped only while `explorer.analysis.analyze` does not exist.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.packet.admission import admit
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED
from explorer.samples.packets import DEFAULT_TENSOR_FILES, synthetic_spec
from explorer.samples.writer import DEFAULT_METADATA_FILE, metadata_bytes

from admission_cases import SPEC_REFUSAL_CODES
from packet_support import DELETE, build

EXAMPLES = 60
NO_HANG = pytest.mark.timeout(120)
BASE = synthetic_spec()
DATA_FILES = [DEFAULT_METADATA_FILE, *DEFAULT_TENSOR_FILES.values()]
ALL_FILES = ["packet.json", *DATA_FILES]


def _pointers(document: Any, prefix: str = "") -> list[str]:
    found = [prefix] if prefix else []
    if isinstance(document, dict):
        items = document.items()
    elif isinstance(document, list):
        items = enumerate(document)
    else:
        return found
    for key, value in items:
        found += _pointers(value, f"{prefix}/{str(key).replace('~', '~0').replace('/', '~1')}")
    return found


with tempfile.TemporaryDirectory() as _scratch:
    _DESCRIPTOR = json.loads((build(Path(_scratch) / "p", spec=BASE) / "packet.json").read_text())
DESCRIPTOR_POINTERS = _pointers(_DESCRIPTOR)
SNAPSHOT_POINTERS = _pointers(BASE.snapshot)

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 2, 3, 4, 48, 64, 2**31, 2**32, 2**64, 262145, 33554433]),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(
        [
            "",
            "float16",
            "bfloat16",
            "float32",
            "little",
            "big",
            "decode",
            "paged",
            "confirmed",
            "packet.json",
            "../x",
            "queries.bin",
            "stored-keys.bin",
            "a" * 64,
        ]
    ),
    st.lists(st.integers(-3, 70), max_size=5),
    st.just({}),
    st.just(DELETE),
)


@dataclass(frozen=True)
class FieldChange:
    target: str  # "descriptor" or "snapshot"
    pointer: str
    value: Any
    stale_hash: bool = False  # snapshot only: keep the old metadata hash in packet.json


@dataclass(frozen=True)
class ByteChange:
    file: str
    offset: int
    kind: str  # flip, truncate, append


@dataclass(frozen=True)
class PathChange:
    file: str
    kind: str  # directory, missing, fifo, alias, escape


mutation = st.one_of(
    st.builds(FieldChange, st.just("descriptor"), st.sampled_from(DESCRIPTOR_POINTERS), values),
    st.builds(FieldChange, st.just("snapshot"), st.sampled_from(SNAPSHOT_POINTERS), values, st.booleans()),
    st.builds(
        ByteChange, st.sampled_from(DATA_FILES), st.integers(0, 4096), st.sampled_from(["flip", "truncate", "append"])
    ),
    st.builds(
        PathChange, st.sampled_from(ALL_FILES), st.sampled_from(["directory", "missing", "fifo", "alias", "escape"])
    ),
)


def _set(document: Any, pointer: str, value: Any) -> None:
    """Set or delete at `pointer`; a pointer whose parent an earlier change removed is left alone."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    try:
        for token in tokens[:-1]:
            document = document[int(token)] if isinstance(document, list) else document[token]
        key = int(tokens[-1]) if isinstance(document, list) else tokens[-1]
        if value is DELETE:
            del document[key]
        else:
            document[key] = value
    except (KeyError, IndexError, TypeError, ValueError):
        return  # the parent is gone: nothing to change


def _apply_file_change(path: Path, change: ByteChange | PathChange) -> None:
    target = path / change.file
    if not target.is_file() or target.is_symlink():
        return
    if isinstance(change, ByteChange):
        data = bytearray(target.read_bytes())
        if not data:
            return
        if change.kind == "flip":
            data[change.offset % len(data)] ^= 0xFF
        elif change.kind == "truncate":
            del data[change.offset % len(data) :]
        else:
            data += b"\0" * (1 + change.offset % 7)
        target.write_bytes(bytes(data))
        return
    if change.kind == "directory":
        target.unlink()
        target.mkdir()
    elif change.kind == "missing":
        target.unlink()
    elif change.kind == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif change.kind == "alias":
        target.unlink()
        os.symlink("packet.json" if change.file != "packet.json" else "queries.bin", target)
    else:
        outside = path.parent / f"outside-{change.file}"
        os.replace(target, outside)
        os.symlink(outside, target)


def write_mutated(directory: Path, changes: list) -> tuple[Path, bool]:
    """Write the base packet with `changes`; also return whether a hash no longer matches the bytes."""
    snapshot = json.loads(metadata_bytes(BASE))
    stale = False
    for change in changes:
        if isinstance(change, FieldChange) and change.target == "snapshot":
            _set(snapshot, change.pointer, change.value)
            stale |= change.stale_hash
    new_metadata = json.dumps(snapshot).encode()  # NaN and Infinity literals allowed: the parser must refuse them
    declared_metadata = json.dumps(json.loads(metadata_bytes(BASE))).encode() if stale else new_metadata

    def descriptor_changes(descriptor: dict) -> None:
        for change in changes:
            if isinstance(change, FieldChange) and change.target == "descriptor":
                _set(descriptor, change.pointer, change.value)

    path = build(directory, spec=BASE, descriptor=descriptor_changes, metadata=declared_metadata)
    declared = {name: (path / name).read_bytes() for name in DATA_FILES}
    if stale:
        (path / DEFAULT_METADATA_FILE).write_bytes(new_metadata)
    for change in changes:
        if not isinstance(change, FieldChange):
            _apply_file_change(path, change)
    # A regular file whose bytes differ from those its descriptor hashed (symlinks and special files are
    # refused by path rules instead).
    broken = any(
        (path / name).is_file() and not (path / name).is_symlink() and (path / name).read_bytes() != data
        for name, data in declared.items()
    )
    return path, broken


def _check_admission(admission, broken: bool) -> None:
    keys = [(p.code, p.field is not None, p.field or "") for p in admission.refusals]
    assert keys == sorted(keys)
    assert all(p.code in SPEC_REFUSAL_CODES and isinstance(p.message, str) and p.message for p in admission.refusals)
    assert all(p.field is None or p.field.startswith("/") for p in admission.refusals)
    if admission.refusals:
        assert admission.reasons == ()
    else:
        assert None not in (admission.identity, admission.selection, admission.sample, admission.geometry)
    if admission.tensors is not None:
        assert admission.geometry is not None
    if broken:
        assert admission.refused


@NO_HANG
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutation, min_size=1, max_size=3))
def test_admit_never_raises(changes):
    with tempfile.TemporaryDirectory() as scratch:
        path, broken = write_mutated(Path(scratch) / "packet", changes)
        _check_admission(admit(path), broken)


@NO_HANG
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutation, min_size=1, max_size=3))
def test_analyze_never_raises(changes):
    analysis = pytest.importorskip("explorer.analysis.analyze")  # the numerics; skipped only until they exist
    with tempfile.TemporaryDirectory() as scratch:
        path, broken = write_mutated(Path(scratch) / "packet", changes)
        result = analysis.analyze(path)
        assert result.status in (ANALYZED, INCONCLUSIVE, REFUSED)
        report = result.report()
        json.dumps(report, allow_nan=False)
        assert report["status"] == result.status
        if broken:
            assert result.status == REFUSED
        _check_admission(result.admission, broken)
