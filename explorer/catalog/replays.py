"""The replay runs under one root and the packet each binds to; reads only bounded JSON files.

A run (a directory holding input.json one or two levels down) binds to the listed packet whose packet.json
hashes to its packetSHA256 (docs/replay.md); both files are read as admission reads them.
"""

from __future__ import annotations

from pathlib import Path

from explorer.catalog.discovery import Entry, discover
from explorer.packet.files import open_directory, open_packet
from explorer.packet.schema import is_sha256
from explorer.replay.run import INPUT_JSON, read_json


def _bound_hash(run: Path) -> str | None:
    """input.json's packetSHA256, or None when it cannot be read or is not a hash."""
    with open_directory(str(run)) as (root, _problem):
        if root is None:
            return None
        document = read_json(root, INPUT_JSON)
    value = None if document.problem is not None else document.value.get("packetSHA256")
    return value if is_sha256(value) else None


class RunIndex:
    """The replay runs under one root as discovered now, each with the packet.json hash it names."""

    def __init__(self, root: Path):
        self.root = root
        self.entries: tuple[Entry, ...] = discover(root, INPUT_JSON)
        self._bound = {entry.name: _bound_hash(entry.path) for entry in self.entries}

    def runs_of(self, packet: Path) -> tuple[str, ...]:
        """The names of the runs whose packetSHA256 is this packet's packet.json hash (read now), by name."""
        with open_packet(str(packet)) as file:
            digest = file.sha256
        return tuple(name for name, bound in self._bound.items() if digest is not None and bound == digest)
