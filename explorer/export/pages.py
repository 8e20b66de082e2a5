"""Exports a packet, a pair, a replay run or a campaign: one flow for page, PNGs, JSON and findings.

Every kind (explorer.export.kinds) goes through `export`: the page is assembled in memory
(explorer.export.static_page), its sections drawn as PNGs when asked
(explorer.export.browser), then the JSON, the page, the PNGs and NAME.findings.md are
written under one free name, all or none (explorer.export.files). A missing or failing
Chromium (RenderError) is raised before anything is written; a full disk or a taken name
leaves no file of the export behind (only the export directory itself may have been
created). Computes no numbers and never overwrites a file. The entry points below keep
the names the app, the command line and the notebooks call.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from explorer.analysis.report import packet_name
from explorer.analysis.result import Analysis
from explorer.export.browser import page_screenshots, require_chromium
from explorer.export.files import (
    ExportPaths,
    png_suffixes,
    stem_base,
    write_export,
)
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
    """Write one export of `kind` into `out_dir` under a free stem made from `name`: the JSON, the page (every
    section under its caption band), with `png` one PNG per drawn section (or its numbered parts), and
    NAME.findings.md linking them, all or none."""
    if png:
        require_chromium()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    when = stamp()
    fields = kind.caption(subject, name, when)
    sections = kind.sections(subject)
    page = standalone_page(name, kind.intro(subject, name, when), fields, sections)
    pngs = png_suffixes(page_screenshots(page, kind.drawn(subject))) if png else {}
    titles = {section.slug: section.title for section in sections}
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
) -> ExportPaths:
    """Write `<name>.html` (every view, inline resources), `<name>.report.json` (with the emulations the page shows)
    and `<name>.findings.md` into `out_dir`, all or none.

    `head` is the query head the views open on (default: the largest-score head); `emulation` the Emulations
    view's settings by URL name (default: its defaults; `{"emulationSet": "builds"}` leads with which build wrote
    the packet). Existing files are never overwritten: the name gets a -2, -3, ... suffix instead.
    """
    return export(PACKET, _packet(analysis, head, emulation), out_dir, name or packet_name(analysis), png=False)


def write_report(
    analysis: Analysis,
    out_dir: str | os.PathLike,
    *,
    name: str | None = None,
    head: int | None = None,
    emulation: Mapping[str, object] | None = None,
) -> ExportPaths:
    """`explorer report PACKET --out DIR` and the app's Export: what export_packet writes and one PNG per view (a
    refused packet: the Summary's alone), all or none; `name`, `head` and `emulation` as for `export_packet`."""
    return export(PACKET, _packet(analysis, head, emulation), out_dir, name or packet_name(analysis), png=True)


def export_pair(
    pair,
    out_dir: str | os.PathLike,
    *,
    name: str | None = None,
    names: tuple[str, str] | None = None,
    png: bool = False,
    emulate: str | Iterable[str] | None = None,
) -> ExportPaths:
    """Write `<a>-vs-<b>.html` (the pair view), `<a>-vs-<b>.comparison.json`, `<a>-vs-<b>.findings.md` and, with
    `png`, `<a>-vs-<b>-pair.png` (or its numbered parts) into `out_dir`, all or none.

    `emulate` is the emulation set the pair's page computed (as for compare: "default", "sweep" or ids; the sides'
    emulations come from analyze's cache, so the matrix is the page's): the matrix is then in the page, the PNGs,
    the findings and the JSON's `emulationMatrix`. `names` are the packets' names in the caption band (default
    their directory names); `report` of the returned paths is the comparison JSON.
    """
    from explorer.pair.emulation import with_emulations

    if emulate is not None:
        pair = with_emulations(pair, emulate)
    names = names or pair_names(pair)
    return export(PAIR, PairSubject(pair, names), out_dir, name or f"{names[0]}-vs-{names[1]}", png=png)


def export_replay(run, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False) -> ExportPaths:
    """Write `<run>.html` (the replay view), `<run>.replay.json`, `<run>.findings.md` and, with `png`,
    `<run>-replay.png` (or its numbered parts) into `out_dir`, all or none; `name` is the run's name in the caption
    band (default its directory name)."""
    return export(REPLAY, run, out_dir, name or os.path.basename(os.path.normpath(run.path)), png=png)


def export_campaign(
    campaign: dict, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False
) -> ExportPaths:
    """Write `<name>.html` (the campaign view), `<name>.campaign.json` (one campaign of the report),
    `<name>.findings.md` and, with `png`, `<name>-campaign.png` into `out_dir`, all or none.

    `campaign` is one entry of the campaign report's `campaigns`; `name` defaults to its model and request
    (campaign_name)."""
    return export(CAMPAIGN, campaign, out_dir, name or campaign_name(campaign), png=png)
