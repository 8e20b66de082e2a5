"""Finding a run's source packet by its packetSHA256 among the run's parent and siblings.

Finding a run's source packet by its packetSHA256 (docs/replay.md, The source packet and the partner): the
run's parent and that parent's subdirectories, one level, never further; reads only packet.json files.

A packet.json is read as admission reads it (bounded, no link followed out of its
directory); a subdirectory reached through a link is not searched.
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
