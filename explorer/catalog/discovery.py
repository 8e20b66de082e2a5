"""Lists the packet directories under one root (shared by the app and `explorer triage`); reads no packet content and never opens a path outside the root."""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

PACKET_FILE = "packet.json"
MAX_DEPTH = 2  # a packet is a directory one or two levels below the root
ROOT_ENV = "EXPLORER_PACKET_ROOT"
SAMPLES_DIR = "sample_packets"


@dataclass(frozen=True)
class Entry:
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
    except OSError:
        return False


def _subdirectories(directory: Path) -> list[Path]:
    try:
        children = sorted(directory.iterdir(), key=lambda child: child.name)
    except OSError:
        return []
    return [child for child in children if not child.name.startswith(".") and child.is_dir()]


def _holds(directory: Path, marker: str) -> bool:
    """`marker` exists and is no directory: a FIFO or a link is listed too, and admission refuses it."""
    candidate = directory / marker
    return os.path.lexists(candidate) and not candidate.is_dir()


def discover(root: str | os.PathLike, marker: str = PACKET_FILE) -> tuple[Entry, ...]:
    """Every directory holding `marker` (packet.json; a replay run's input.json) one or two levels below `root`, by name.

    Hidden directories and anything that resolves outside the root (symbolic links)
    are skipped; a packet directory is not searched further. Nothing is capped:
    every packet found is returned.
    """
    root = Path(root).resolve()
    found: list[Entry] = []
    pending = deque((child, 1) for child in _subdirectories(root))
    while pending:
        directory, depth = pending.popleft()
        if not _inside(directory, root):
            continue
        if _holds(directory, marker):
            found.append(Entry(directory.relative_to(root).as_posix(), directory))
        elif depth < MAX_DEPTH:
            pending.extend((child, depth + 1) for child in _subdirectories(directory))
    return tuple(sorted(found, key=lambda entry: entry.name))


def lookup(entries: tuple[Entry, ...], name: object) -> Entry | None:
    """The listed entry called exactly `name`, or None: the browser only ever chooses among listed names."""
    return next((entry for entry in entries if entry.name == name), None)
