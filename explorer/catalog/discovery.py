"""Lists the packet directories under one root (shared by the app and `explorer triage`).

Reads no packet content and never opens a path outside the root.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from pathlib import Path

from explorer.foundations.record import Record, record
from explorer.packet.files import PACKET_JSON

MAX_DEPTH = 2  # a packet is a directory one or two levels below the root
ROOT_ENV = "EXPLORER_PACKET_ROOT"
SAMPLES_DIR = "sample_packets"


@record
class Entry(Record):
    """One listed packet: its name (a '/'-separated path relative to the root) and its directory."""

    name: str
    path: Path


def default_root() -> Path:
    """The bundled sample_packets/ next to the package (repository checkout), else under the working directory."""
    bundled = Path(__file__).resolve().parents[2] / SAMPLES_DIR
    return bundled if bundled.is_dir() else Path.cwd() / SAMPLES_DIR


def choose_root(argument: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    """The packet root: the --root argument, else $EXPLORER_PACKET_ROOT, else the bundled samples."""
    chosen = argument or environ.get(ROOT_ENV) or None
    return Path(chosen).expanduser().resolve() if chosen else default_root()


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def _identity(directory: Path) -> tuple[int, int] | None:
    """(device, inode) of the directory a path leads to (links followed), or None when it cannot be stat'ed."""
    try:
        status = os.stat(directory)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _subdirectories(directory: Path) -> list[Path] | None:
    """The visible subdirectories, real ones before links, by name; None when the directory cannot be listed."""
    try:
        children = sorted(directory.iterdir(), key=lambda child: (child.is_symlink(), child.name))
    except OSError:
        return None
    return [child for child in children if not child.name.startswith(".") and os.path.isdir(child)]


def _marker_file(directory: Path, marker: str) -> bool | None:
    """True when `marker` exists and is no directory (admission refuses a FIFO or link); None when unsearchable."""
    candidate = directory / marker
    try:
        os.lstat(candidate)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return None
    return not os.path.isdir(candidate)


def discover(root: str | os.PathLike, marker: str = PACKET_JSON) -> tuple[Entry, ...]:
    """Every directory holding `marker` (packet.json; a replay run's input.json) one or two levels below `root`, by
    name: hidden ones and what resolves outside the root skipped, each visited once (device and inode), one that
    cannot be listed listed itself (admission says why), nothing capped."""
    root = Path(root).resolve()
    found: list[Entry] = []
    seen = {_identity(root)}
    pending = deque((child, 1) for child in _subdirectories(root) or ())
    while pending:
        directory, depth = pending.popleft()
        identity = _identity(directory)
        if identity is None or identity in seen or not _inside(directory, root):
            continue
        seen.add(identity)
        holds = _marker_file(directory, marker)
        children = _subdirectories(directory) if holds is False and depth < MAX_DEPTH else []
        if holds or holds is None or children is None:
            found.append(Entry(directory.relative_to(root).as_posix(), directory))
        else:
            pending.extend((child, depth + 1) for child in children)
    return tuple(sorted(found, key=lambda entry: entry.name))


def lookup(entries: tuple[Entry, ...], name: object) -> Entry | None:
    """The listed entry called exactly `name`, or None: the browser only ever chooses among listed names."""
    return next((entry for entry in entries if entry.name == name), None)
