"""Attention Packet Explorer: the public entry points analyze, compare, replay, triage and campaign.

`analyze(path)`, `compare(a, b)`, `replay(run)`, `triage(root)` and `campaign(root)` are the public entry points;
importing this never loads the UI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas

    from explorer.analysis.result import Analysis
    from explorer.pair.model import Pair
    from explorer.replay.model import Replay

from explorer.version import __version__

__all__ = ["__version__", "analyze", "campaign", "compare", "replay", "triage"]


def analyze(path: str | os.PathLike, emulate: str | Iterable[str] | None = None) -> Analysis:
    """Admit and analyze the packet at `path` (a directory or its packet.json); see docs/report.md.

    `emulate`: None (no kernel emulation), "default" (the default set) or a list of
    emulation ids such as "mlx_two_pass(partialDType=float32)".
    """
    from explorer.analysis.analyze import analyze as analyze_packet

    return analyze_packet(path, emulate=emulate)


def compare(
    a: str | os.PathLike | Analysis, b: str | os.PathLike | Analysis, emulate: str | Iterable[str] | None = None
) -> Pair:
    """Compare two captures of one selection (paths or analyze() results) into an immutable Pair; never raises for
    packet content.

    `emulate` as for analyze: each side's kernel emulations and the emulation x side matrix.
    """
    from explorer.pair.compare import compare as compare_pair

    return compare_pair(a, b, emulate=emulate)


def replay(
    run: str | os.PathLike,
    packet: str | os.PathLike | Analysis | None = None,
    partner: str | os.PathLike | Analysis | None = None,
    emulate: str | Iterable[str] | None = None,
) -> Replay:
    """Read an operator replay run against its packet (and a partner capture) into an immutable Replay (docs/replay.md).

    `packet` defaults to the one packet beside the run whose packet.json hashes to its
    packetSHA256 (AmbiguousPacketError when two do); `emulate` as for analyze, scored
    against each arm's output. Never raises for the content of the run or the packets.
    """
    from explorer.replay.replay import replay as read_replay

    return read_replay(run, packet=packet, partner=partner, emulate=emulate)


def triage(root: str | os.PathLike, jobs: int | None = None, scheduler: str | None = None) -> pandas.DataFrame:
    """Summarize every packet under `root` as `explorer triage` does, one DataFrame row per packet (columns and
    dtypes: docs/triage-and-app.md); never raises for packet content.

    `jobs`: local worker processes (default: all cores); `scheduler`: a Dask scheduler address or 'local:N'
    (needs the `cluster` extra) instead of local processes.
    """
    from explorer.catalog.frame import triage_frame

    return triage_frame(root, jobs=jobs, scheduler=scheduler)


def campaign(
    root: str | os.PathLike,
    jobs: int | None = None,
    scheduler: str | None = None,
    request: str | None = None,
    backends: tuple[str, str] | None = None,
    emulate: str | Iterable[str] | None = None,
) -> pandas.DataFrame:
    """Every capture campaign under `root` as `explorer campaign` finds it: one DataFrame row per cell, the origins in
    `df.attrs["campaigns"]` (columns and keys: docs/campaigns.md); never raises for packet content.

    `request`: only that requestID; `backends`: the two backends to compare; `emulate` as for analyze, run on each
    campaign's first outputs-differ cell; `jobs` / `scheduler` as for triage.
    """
    from explorer.campaigns.frame import campaign_frame

    ids = None if emulate is None else ((emulate,) if isinstance(emulate, str) else tuple(emulate))
    return campaign_frame(
        root,
        jobs=jobs,
        scheduler=scheduler,
        request=request,
        backends=None if backends is None else tuple(backends),
        emulate=ids,
    )
