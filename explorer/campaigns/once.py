"""One computation per campaign, shared by every session asking for it while it runs; the last kept.

Several app sessions opening one uncomputed campaign share one computation (one set of worker processes), and
a campaign asked for again with the same contents is served from the last REPORT_CACHE_ENTRIES kept.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from typing import Any

from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.catalog.discovery import Entry
from explorer.foundations.cache import BoundedCache
from explorer.foundations.single_flight import SingleFlight

REPORT_CACHE_ENTRIES = 4  # campaign report entries kept per process (a few hundred bytes per cell)

_reports: BoundedCache[dict[str, Any]] = BoundedCache(REPORT_CACHE_ENTRIES)
_flights: SingleFlight[dict[str, Any] | None] = SingleFlight()


def _key(root: str | os.PathLike, ident: str, contents: Hashable, emulate: tuple[str, ...] | None) -> Hashable:
    return os.fspath(root), ident, contents, emulate


def campaign_report_held(
    root: str | os.PathLike, ident: str, *, contents: Hashable, emulate: tuple[str, ...] | None = None
) -> dict[str, Any] | None:
    """The report entry of campaign `ident` if it is kept for these contents (nothing computed)."""
    return _reports.peek(_key(root, ident, contents, emulate))


def campaign_report_once(
    root: str | os.PathLike,
    entries: Sequence[Entry],
    ident: str,
    *,
    contents: Hashable,
    jobs: int,
    context: str | None = None,
    emulate: tuple[str, ...] | None = None,
) -> dict[str, Any] | None:
    """The report entry of campaign `ident` among `entries` under `root` (None when there is none), computed once
    per root, id, `contents` (what the packets hold) and emulations; callers meanwhile share its result."""
    key = _key(root, ident, contents, emulate)

    def compute() -> dict[str, Any] | None:
        held = _reports.get(key)
        if held is not None:
            return held
        run = run_campaigns(root, jobs=jobs, entries=entries, context=context, emulate=emulate)
        found = next(
            (campaign for campaign in build_campaign_report(run)["campaigns"] if campaign["id"] == ident), None
        )
        if found is not None:
            _reports.put(key, found)
        return found

    held = _reports.get(key)
    return held if held is not None else _flights.run(key, compute)
