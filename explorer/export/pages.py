"""Exports a packet, a pair, a replay run or a campaign: one flow for page, PNGs, JSON and findings.

The page is assembled in memory (static_page) and its sections drawn as PNGs when asked (browser; a missing or failing
Chromium raises RenderError before anything is written), then every file is written under one free name, all or none
(files). Computes no numbers and never overwrites a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from explorer.analysis.report import packet_name
from explorer.analysis.result import Analysis
from explorer.export.browser import page_screenshots, require_chromium
from explorer.export.files import ExportPaths, png_suffixes, stem_base, write_export
from explorer.export.findings import findings_markdown
from explorer.export.kinds import (
    CAMPAIGN,
    PACKET,
    PAIR,
    REPLAY,
    Kind,
    PacketSubject,
    PairSubject,
    campaign_name,
    export_head,
    pair_names,
    shown_emulations,
)
from explorer.export.static_page import stamp, standalone_page

# What `report` holds beyond the analysis and its emulations (docs/report.md, "Memory"): the plotting libraries, every
# view's Bokeh document and the page itself in memory before anything is written (measured 225-240 MiB; the views
# send bounded data whatever the geometry, see the attention curve's thinning).
REPORT_PAGE_BYTES = 256 * 1024 * 1024


def export(kind: Kind, subject, out_dir: str | os.PathLike, name: str, *, png: bool) -> ExportPaths:
    """Write one export of `kind` into `out_dir` under a free stem made from `name`: the JSON, the page, with `png` one
    PNG per drawn section (or its numbered parts), and NAME.findings.md linking them, all or none."""
    if png:
        require_chromium()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    when = stamp()
    fields = kind.caption(subject, name, when)
    sections = kind.sections(subject)
    page = standalone_page(name, kind.intro(subject, name, when), fields, sections)
    titles = {section.slug: section.title for section in sections}
    drawn = tuple(titles) if kind.drawn is None else kind.drawn(subject)
    pngs = png_suffixes(page_screenshots(page, drawn)) if png else {}
    write_up = kind.write_up(subject, name, fields)
    return write_export(
        out_dir,
        stem_base(name, kind.fallback),
        (kind.json_suffix, kind.report(subject)),
        page,
        pngs,
        lambda stem, png_names: findings_markdown(write_up, stem, png_names, titles, kind.json_suffix),
        tuple(titles),
    )


def _packet(analysis: Analysis, head: int | None, emulation: Mapping[str, object] | None) -> PacketSubject:
    settings = dict(emulation or {})
    return PacketSubject(shown_emulations(analysis, settings), export_head(analysis, head), settings)


def export_packet(
    analysis: Analysis,
    out_dir: str | os.PathLike,
    *,
    name: str | None = None,
    head: int | None = None,
    emulation: Mapping[str, object] | None = None,
    png: bool = False,
) -> ExportPaths:
    """Write `<name>.html` (every view, inline resources), `<name>.report.json` (with the emulations the page shows),
    `<name>.findings.md` and, with `png` (`explorer report` and the app's Export), one PNG per view (a refused packet:
    the Summary's alone) into `out_dir`, all or none.

    `head` is the query head the views open on (default: the largest-score head); `emulation` the Emulations view's
    settings by URL name (default: its defaults; `{"emulationSet": "builds"}` leads with which build wrote the packet).
    Existing files are never overwritten: the name gets a -2, -3, ... suffix instead.
    """
    return export(PACKET, _packet(analysis, head, emulation), out_dir, name or packet_name(analysis), png=png)


def export_pair(
    pair,
    out_dir: str | os.PathLike,
    *,
    name: str | None = None,
    names: tuple[str, str] | None = None,
    png: bool = False,
    emulate: str | Iterable[str] | None = None,
) -> ExportPaths:
    """Write `<a>-vs-<b>.html` (the pair view), `.comparison.json`, `.findings.md` and, with `png`, `-pair.png` (or its
    numbered parts) into `out_dir`, all or none.

    `emulate`: the emulation set the pair's page computed (as for compare; from analyze's cache), then in the page,
    PNGs, findings and `emulationMatrix`. `names`: the packets' names in the caption band (default their directories).
    """
    from explorer.pair.emulation import with_emulations

    if emulate is not None:
        pair = with_emulations(pair, emulate)
    names = names or pair_names(pair)
    return export(PAIR, PairSubject(pair, names), out_dir, name or f"{names[0]}-vs-{names[1]}", png=png)


def export_replay(run, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False) -> ExportPaths:
    """Write `<run>.html` (the replay view), `.replay.json`, `.findings.md` and, with `png`, `-replay.png` (or its
    numbered parts) into `out_dir`, all or none; `name` defaults to the run's directory name."""
    return export(REPLAY, run, out_dir, name or os.path.basename(os.path.normpath(run.path)), png=png)


def export_campaign(
    campaign: dict, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False
) -> ExportPaths:
    """Write `<name>.html` (the campaign view), `.campaign.json`, `.findings.md` and, with `png`, `-campaign.png` into
    `out_dir`, all or none; `campaign` is one entry of the report's `campaigns`, `name` defaults to campaign_name."""
    return export(CAMPAIGN, campaign, out_dir, name or campaign_name(campaign), png=png)
