"""Finding a run's source packet by its packetSHA256: the run's parent and its subdirectories.

Reads only packet.json files, as admission does (bounded, no link followed out); a linked subdirectory is skipped.
"""

from __future__ import annotations

import os

from explorer.packet.files import open_packet


def _packet_hash(directory: str) -> str | None:
    with open_packet(directory) as packet:
        return packet.sha256


def _candidates(parent: str) -> list[str]:
    """The parent itself, then its subdirectories (not links), by name."""
    try:
        with os.scandir(parent) as entries:
            below = sorted(entry.path for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:
        below = []
    return [parent, *below]


def discover(run: str, packet_sha256: str) -> list[str]:
    """Every directory beside `run` whose packet.json hashes to `packet_sha256` (the caller decides on 0 or 2+)."""
    parent = os.path.dirname(os.path.abspath(run))
    return [directory for directory in _candidates(parent) if _packet_hash(directory) == packet_sha256]
