"""Writes one packet's views as a standalone offline HTML page, its JSON report and one PNG per view; computes no numbers and never overwrites a file.

The HTML inlines every script, stylesheet and icon (Bokeh INLINE resources; Panel's
component stylesheets, which it links from its CDN even in inline mode, are turned
into data: URLs), so the page opens with no network at all. It is a static snapshot
of each view's state at export time: plots keep zoom, pan and hover, widgets are not
live.

PNGs need system packages, no browser download: Debian's `chromium` package
(`apt-get install chromium`, /usr/bin/chromium) driven headless by Playwright for
Python (`pip install playwright`; never `playwright install`). The exported page is
opened from disk with every non-file request blocked and each view section is
captured as an element screenshot.

Every section opens with a caption band naming the packet, its status, identity,
selection, hash prefix, explorer version and export date, so a PNG pasted alone
still says what it shows. Cards and accordions are exported open; at capture time
the Bokeh toolbars and the views' controls are hidden and scrolling text boxes are
unrolled, so each PNG holds its whole view and nothing to click.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import mimetypes
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from explorer.analysis.ranking import worst_head
from explorer.analysis.report import REPORT_INDENT, REPORT_SUFFIX, packet_name, report_text
from explorer.analysis.result import Analysis
from explorer.export.safeio import write_new
from explorer.version import __version__

EXPORT_DIR_ENV = "EXPLORER_EXPORT_DIR"
DEFAULT_EXPORT_DIR = "exports"
HTML_SUFFIX = ".html"
PNG_SUFFIX = ".png"
MAX_NAME_ATTEMPTS = 1000  # name-2, name-3, ... before giving up on a free file name
SECTION_CLASS = "export-view"
CAPTION_CLASS = "export-caption"
CONTROL_CLASS = "export-control"  # widgets of a view: live in the app, hidden in the PNGs
SHA_DIGITS = 12  # hex digits of packetSHA256 in the caption band
UNKNOWN = "unknown"
CAPTION_STYLE = ("display:flex;flex-wrap:wrap;gap:0.2em 1.2em;padding:0.45em 0.8em;margin:0.3em 0 0.4em 0;"
                 "background:#eef1f5;border-left:4px solid #2f3e4e;font-size:0.9em;color:#1d2733")
CAPTION_ITEM_STYLE = "white-space:nowrap"
PAGE_WIDTH = 1400  # CSS pixels of the page the PNGs are taken from
PAGE_HEIGHT = 1000
RENDER_TIMEOUT_MS = 60_000  # per view: a static page draws in seconds
SETTLE_MS = 300  # one more paint after a view reports itself drawn
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
LOCAL_URL_PREFIXES = ("file:", "data:", "blob:", "about:")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class RenderError(RuntimeError):
    """The PNGs could not be rendered: chromium is missing or a view did not finish drawing."""


@dataclass(frozen=True)
class ExportPaths:
    """Files written by one export: the HTML page, the JSON report and, headless, one PNG per view."""

    html: Path
    report: Path
    pngs: tuple[Path, ...] = ()


def choose_export_dir(argument: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    """The export directory: the argument, else $EXPLORER_EXPORT_DIR, else ./exports."""
    return Path(argument or environ.get(EXPORT_DIR_ENV) or DEFAULT_EXPORT_DIR).expanduser().resolve()


def _export_suffixes() -> tuple[str, ...]:
    from explorer.views import VIEWS

    return (HTML_SUFFIX, REPORT_SUFFIX, *(f"-{slug}{PNG_SUFFIX}" for slug, _, _ in VIEWS))


def _free_stem(out_dir: Path, base: str, suffixes: tuple[str, ...] | None = None) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first stem none of whose export files (`suffixes`) exist."""
    suffixes = _export_suffixes() if suffixes is None else suffixes
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        stem = base if attempt == 1 else f"{base}-{attempt}"
        if not any(os.path.lexists(out_dir / f"{stem}{suffix}") for suffix in suffixes):
            return stem
    raise FileExistsError(f"no free export name for {base} in {out_dir}")


def _write_new(path: Path, data: str | bytes) -> Path:
    """One file written whole or not at all, never over an existing name (explorer.export.safeio)."""
    return write_new(path, data)


def _write_set(files: Mapping[Path, str | bytes]) -> tuple[Path, ...]:
    """Every file of one export, or none of them: a failed write removes the ones this call wrote."""
    written: list[Path] = []
    try:
        for path, data in files.items():
            written.append(_write_new(path, data))
    except BaseException:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return tuple(written)


# ---------------------------------------------------------------- the page


def caption_fields(analysis: Analysis, name: str, stamp: str) -> tuple[tuple[str, str], ...]:
    """(label, text) pairs of the caption band every export carries; 'unknown' where the packet does not say."""
    report = analysis.report()
    identity, selection = report.get("identity") or {}, report.get("selection") or {}
    digest = report["packet"].get("packetSHA256")

    def known(value) -> str:
        return UNKNOWN if value is None else str(value)

    return (("packet", name), ("status", analysis.status), ("model", known(identity.get("modelID"))),
            ("backend", known(identity.get("backend"))), ("request", known(selection.get("requestID"))),
            ("output index", known(selection.get("outputIndex"))), ("layer", known(selection.get("modelLayerIndex"))),
            ("packetSHA256", digest[:SHA_DIGITS] if digest else UNKNOWN),
            ("explorer", __version__), ("exported", stamp))


def caption_html(fields: tuple[tuple[str, str], ...]) -> str:
    """The caption band: one wrapping line of label: value pairs."""
    items = "".join(f'<span style="{CAPTION_ITEM_STYLE}"><span style="color:#5a6470">{html.escape(label)}</span> '
                    f'<b>{html.escape(value)}</b></span>' for label, value in fields)
    return f'<div class="{CAPTION_CLASS}" style="{CAPTION_STYLE}">{items}</div>'


def export_head(analysis: Analysis, head: int | None) -> int:
    """The query head the exported views open on: the one chosen, else the head with the largest primary linf."""
    if head is not None:
        return head
    chosen = worst_head(analysis.numerics)[0] if analysis.numerics is not None else None
    return 0 if chosen is None else chosen


def _static(view) -> None:
    """Fit a freshly built view for a static page: every card and accordion open, every control marked for PNGs."""
    import panel as pn

    for card in view.select(pn.Card):
        card.collapsed = False
    for accordion in view.select(pn.Accordion):
        accordion.active = list(range(len(accordion.objects)))
    for widget in view.select(pn.widgets.Widget):
        widget.css_classes = [*widget.css_classes, CONTROL_CLASS]


def _page(analysis: Analysis, name: str, head: int):
    import panel as pn

    from explorer.views import VIEWS, Selection

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    caption = caption_html(caption_fields(analysis, name, stamp))
    header = pn.pane.HTML(
        f"<h1>{html.escape(name)}</h1><p>Static export of the Attention Packet Explorer views: plots keep zoom "
        "and hover, controls are not live. The JSON report beside this file holds the same numbers; the "
        "repository's docs/ explains the packet rules and the report.</p>", sizing_mode="stretch_width")
    sections = []
    for slug, title, builder in VIEWS:
        view = builder(analysis, Selection(head=head))
        _static(view)
        heading = pn.pane.HTML(f"{caption}<h2>{html.escape(title)}</h2>", sizing_mode="stretch_width")
        sections.append(pn.Column(heading, view, css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{slug}"],
                                  sizing_mode="stretch_width"))
    return pn.Column(header, *sections, sizing_mode="stretch_width")


def _data_url(match: re.Match) -> str:
    from panel.io.resources import DIST_DIR

    path = Path(DIST_DIR) / match.group("path")
    if not path.is_file():
        return match.group(0)
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


@contextmanager
def _detached():
    """Panel state of its own for an export: a private document (no session design, stylesheet cache or
    template config of a running app leaks in) and inline resource mode (restored afterwards)."""
    from bokeh.document import Document
    from panel.io.resources import set_resource_mode
    from panel.io.state import set_curdoc

    with set_curdoc(Document()), set_resource_mode("inline"):
        yield


def _standalone_html(viewable, title: str) -> str:
    """The viewable as one HTML document that loads nothing from anywhere (see the module docstring)."""
    from bokeh.resources import INLINE
    from panel.io.resources import CDN_DIST, LOCAL_DIST

    buffer = io.StringIO()
    viewable.save(buffer, title=title, resources=INLINE, embed=False)
    prefixes = "|".join(re.escape(prefix) for prefix in (CDN_DIST, LOCAL_DIST))
    pattern = re.compile(rf"(?:{prefixes})(?P<path>[A-Za-z0-9_./-]+)(?:\?v=[A-Za-z0-9_.]*)?")
    return pattern.sub(_data_url, buffer.getvalue())


def export_packet(analysis: Analysis, out_dir: str | os.PathLike, *, name: str | None = None,
                  head: int | None = None) -> ExportPaths:
    """Write `<name>.html` (every view, inline resources) and `<name>.report.json` into `out_dir`.

    `head` is the query head the views open on (default: the head with the largest
    primary linf). Existing files are never overwritten: the name gets a -2, -3, ... suffix instead.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or packet_name(analysis)
    stem = _free_stem(out_dir, _UNSAFE_NAME.sub("_", name).strip("._") or "packet")
    with _detached():
        page = _standalone_html(_page(analysis, name, export_head(analysis, head)),
                                title=f"{name} - Attention Packet Explorer")
    report, html_path = _write_set({out_dir / f"{stem}{REPORT_SUFFIX}": report_text(analysis),
                                    out_dir / f"{stem}{HTML_SUFFIX}": page})
    return ExportPaths(html=html_path, report=report)


# ---------------------------------------------------------------- PNGs


def _block_network(route) -> None:
    if route.request.url.startswith(LOCAL_URL_PREFIXES):
        route.continue_()
    else:
        route.abort()


def _screenshots(html_path: str | os.PathLike, slugs: tuple[str, ...]) -> dict[str, bytes]:
    """PNG bytes of each `export-view-<slug>` section of an exported page, rendered by /usr/bin/chromium offline."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        try:
            context = browser.new_context(viewport={"width": PAGE_WIDTH, "height": PAGE_HEIGHT})
            context.route("**/*", _block_network)
            page = context.new_page()
            page.goto(Path(html_path).resolve().as_uri(), timeout=RENDER_TIMEOUT_MS)
            for slug in slugs:
                try:
                    wait_drawn(page, f"{SECTION_CLASS}-{slug}")
                except PlaywrightTimeout:
                    seconds = RENDER_TIMEOUT_MS // 1000
                    raise RenderError(f"the {slug} view did not finish drawing in {seconds} s") from None
            hide_controls(page)
            return {slug: page.locator(f".{SECTION_CLASS}-{slug}").first.screenshot(timeout=RENDER_TIMEOUT_MS)
                    for slug in slugs}
        finally:
            browser.close()


def render_pngs(html_path: str | os.PathLike, out_dir: str | os.PathLike, stem: str) -> tuple[Path, ...]:
    """One PNG per view section of an exported page: `<stem>-<slug>.png`, rendered by /usr/bin/chromium."""
    from explorer.views import VIEWS

    out_dir = Path(out_dir)
    targets = {slug: out_dir / f"{stem}-{slug}{PNG_SUFFIX}" for slug, _, _ in VIEWS}
    taken = [str(path) for path in targets.values() if os.path.lexists(path)]
    if taken:
        raise FileExistsError(f"refusing to overwrite {', '.join(taken)}")
    for slug, png in _screenshots(html_path, tuple(targets)).items():
        _write_new(targets[slug], png)
    return tuple(targets.values())


# findViewWhere(test): the first Bokeh view, from every root, whose model's CSS classes (Panel's css_classes)
# pass `test`; findView(cssClass): the one carrying that class. Both null if none.
FIND_VIEW_JS = """const findViewWhere = (test) => {
    const find = (view) => {
      if (test(view.model.css_classes || [])) return view
      for (const child of view.children()) {
        const found = find(child)
        if (found !== null) return found
      }
      return null
    }
    for (const root of window.Bokeh === undefined ? [] : Bokeh.index.roots) {
      const found = find(root)
      if (found !== null) return found
    }
    return null
  }
  const findView = (cssClass) => findViewWhere((classes) => classes.includes(cssClass))"""
# True once the view with the CSS class has finished drawing.
DRAWN_JS = f"""(cssClass) => {{
  {FIND_VIEW_JS}
  const view = findView(cssClass)
  return view !== null && view.has_finished()
}}"""


# Across every shadow root: hides the Bokeh toolbars and the views' controls (marked CONTROL_CLASS by the export)
# and lets scrolling text boxes grow to their whole text; returns how many elements it hid.
HIDE_CONTROLS_JS = """({hide, grow}) => {
  let hidden = 0
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.matches(hide) && el.style.display !== "none") { el.style.display = "none"; hidden += 1 }
      if (el.matches(grow)) { el.style.maxHeight = "none"; el.style.overflow = "visible" }
      if (el.shadowRoot) walk(el.shadowRoot)
    }
  }
  walk(document)
  return hidden
}"""
STATIC_HIDDEN = f".bk-Toolbar, .{CONTROL_CLASS}"
STATIC_GROWN = "pre"


def hide_controls(page) -> int:
    """Hide every toolbar and view control of an exported page and unroll its text boxes before PNGs are taken."""
    hidden = page.evaluate(HIDE_CONTROLS_JS, {"hide": STATIC_HIDDEN, "grow": STATIC_GROWN})
    page.wait_for_timeout(SETTLE_MS)
    return hidden


def wait_drawn(page, css_class: str, timeout_ms: int = RENDER_TIMEOUT_MS) -> None:
    """Wait until the Bokeh view carrying `css_class` exists and its whole subtree is rendered (a Playwright page)."""
    page.wait_for_function(DRAWN_JS, arg=css_class, timeout=timeout_ms)
    page.wait_for_timeout(SETTLE_MS)


def write_report(analysis: Analysis, out_dir: str | os.PathLike) -> ExportPaths:
    """`explorer report PACKET --out DIR`: the HTML page and JSON report, then one PNG per view."""
    if not Path(CHROMIUM).is_file():
        raise RenderError(f"{CHROMIUM} is missing: install Debian's chromium package to render PNGs")
    paths = export_packet(analysis, out_dir)
    stem = paths.html.name[: -len(HTML_SUFFIX)]
    return ExportPaths(html=paths.html, report=paths.report, pngs=render_pngs(paths.html, out_dir, stem))


# ---------------------------------------------------------------- a packet pair (compare-v1.md)

COMPARISON_SUFFIX = ".comparison.json"
PAIR_SECTION = "pair"


def comparison_text(pair) -> str:
    """The comparison report exactly as `explorer compare --json` prints it."""
    return json.dumps(pair.report(), allow_nan=False, indent=REPORT_INDENT) + "\n"


PAIR_SIDE_FIELDS = ("packet", "status", "backend", "packetSHA256")  # caption fields shown once per side


def pair_caption_fields(pair, names: tuple[str, str], stamp: str) -> tuple[tuple[str, str], ...]:
    """The caption band of a pair: both packets (name, status, backend, hash prefix), the pair status, what the
    two sides share (model, request, output index, layer; 'a | b' where they differ), version and date."""
    sides = [dict(caption_fields(analysis, name, stamp)) for analysis, name in zip((pair.a, pair.b), names)]
    per_side = tuple((f"{label} {side}", fields[label]) for side, fields in zip("ab", sides)
                     for label in PAIR_SIDE_FIELDS)
    shared = tuple((label, a if a == sides[1][label] else f"{a} | {sides[1][label]}")
                   for label, a in sides[0].items() if label not in (*PAIR_SIDE_FIELDS, "explorer", "exported"))
    return (("pair", pair.status), *per_side, *shared, ("explorer", __version__), ("exported", stamp))


def pair_names(pair) -> tuple[str, str]:
    """The two packets' directory names (sides a and b)."""
    return packet_name(pair.a), packet_name(pair.b)


def _pair_page(pair, name: str, names: tuple[str, str]):
    import panel as pn

    from explorer.views.pair import build

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = pn.pane.HTML(
        f"<h1>{html.escape(name)}</h1><p>Side a: <code>{html.escape(pair.a.admission.path)}</code>; side b: "
        f"<code>{html.escape(pair.b.admission.path)}</code>. Pair status: <b>{pair.status}</b>. Static export of the "
        f"Attention Packet Explorer pair view (explorer {__version__}, {stamp}): plots keep zoom and hover, "
        "clicks and controls are not live. The comparison JSON beside this file holds the same numbers.</p>",
        sizing_mode="stretch_width")
    view = build(pair)
    _static(view)
    caption = pn.pane.HTML(caption_html(pair_caption_fields(pair, names, stamp)), sizing_mode="stretch_width")
    section = pn.Column(caption, view, css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{PAIR_SECTION}"],
                        sizing_mode="stretch_width")
    return pn.Column(header, section, sizing_mode="stretch_width")


def export_pair(pair, out_dir: str | os.PathLike, *, name: str | None = None, names: tuple[str, str] | None = None,
                png: bool = False) -> ExportPaths:
    """Write `<a>-vs-<b>.html` (the pair view, inline resources), `<a>-vs-<b>.comparison.json` and, with `png`,
    `<a>-vs-<b>-pair.png` (the pair section without toolbars or controls) into `out_dir`, all or none.

    `names` are the packets' names in the caption band (default their directory names); `report` of the
    returned paths is the comparison JSON. Existing files are never overwritten.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = names or pair_names(pair)
    name = name or f"{names[0]}-vs-{names[1]}"
    base = _UNSAFE_NAME.sub("_", name).strip("._") or "pair"
    png_suffix = f"-{PAIR_SECTION}{PNG_SUFFIX}"
    stem = _free_stem(out_dir, base, (HTML_SUFFIX, COMPARISON_SUFFIX, png_suffix))
    with _detached():
        page = _standalone_html(_pair_page(pair, name, names), title=f"{name} - Attention Packet Explorer")
    files: dict[Path, str | bytes] = {out_dir / f"{stem}{COMPARISON_SUFFIX}": comparison_text(pair),
                                      out_dir / f"{stem}{HTML_SUFFIX}": page}
    if png:
        files[out_dir / f"{stem}{png_suffix}"] = _section_png(page, PAIR_SECTION)
    written = _write_set(files)
    return ExportPaths(html=written[1], report=written[0], pngs=written[2:])


def _section_png(page: str, section: str) -> bytes:
    """One section of an exported page (pair, replay) as a PNG, rendered from a private temporary copy of the page."""
    if not Path(CHROMIUM).is_file():
        raise RenderError(f"{CHROMIUM} is missing: install Debian's chromium package to render PNGs")
    with tempfile.TemporaryDirectory(prefix=f"explorer-{section}-") as scratch:
        html_path = Path(scratch) / f"{section}{HTML_SUFFIX}"
        html_path.write_text(page, encoding="utf-8")
        return _screenshots(html_path, (section,))[section]


# ---------------------------------------------------------------- a replay run

REPLAY_SUFFIX = ".replay.json"
REPLAY_SECTION = "replay"


def replay_caption_fields(run, name: str, stamp: str) -> tuple[tuple[str, str], ...]:
    """The caption band of a replay run: the run, its status, the packet's caption fields and the partner."""
    packet = dict(caption_fields(run.packet, packet_name(run.packet), stamp)) if run.packet is not None else {}
    shown = tuple((label, value) for label, value in packet.items() if label not in ("status", "explorer", "exported"))
    partner = packet_name(run.partner) if run.partner is not None else "none"
    return (("replay run", name), ("replay", run.status), *shown, ("partner", partner), ("explorer", __version__),
            ("exported", stamp))


def _replay_page(run, name: str):
    import panel as pn

    from explorer.views.replay import build

    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = pn.pane.HTML(
        f"<h1>{html.escape(name)}</h1><p>Replay run <code>{html.escape(run.path)}</code>. Replay status: "
        f"<b>{run.status}</b>. Static export of the Attention Packet Explorer replay view (explorer {__version__}, "
        f"{stamp}): plots keep zoom and hover, clicks and controls are not live. The replay JSON beside this file "
        "holds the same numbers.</p>", sizing_mode="stretch_width")
    view = build(run)
    _static(view)
    caption = pn.pane.HTML(caption_html(replay_caption_fields(run, name, stamp)), sizing_mode="stretch_width")
    section = pn.Column(caption, view, css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{REPLAY_SECTION}"],
                        sizing_mode="stretch_width")
    return pn.Column(header, section, sizing_mode="stretch_width")


def export_replay(run, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False) -> ExportPaths:
    """Write `<run>.html` (the replay view, inline resources), `<run>.replay.json` and, with `png`,
    `<run>-replay.png` into `out_dir`, all or none; existing files are never overwritten.

    `name` is the run's name in the caption band (default its directory name).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or os.path.basename(os.path.normpath(run.path))
    base = _UNSAFE_NAME.sub("_", name).strip("._") or REPLAY_SECTION
    png_suffix = f"-{REPLAY_SECTION}{PNG_SUFFIX}"
    stem = _free_stem(out_dir, base, (HTML_SUFFIX, REPLAY_SUFFIX, png_suffix))
    with _detached():
        page = _standalone_html(_replay_page(run, name), title=f"{name} - Attention Packet Explorer")
    report = json.dumps(run.report(), allow_nan=False, indent=REPORT_INDENT) + "\n"
    files: dict[Path, str | bytes] = {out_dir / f"{stem}{REPLAY_SUFFIX}": report, out_dir / f"{stem}{HTML_SUFFIX}": page}
    if png:
        files[out_dir / f"{stem}{png_suffix}"] = _section_png(page, REPLAY_SECTION)
    written = _write_set(files)
    return ExportPaths(html=written[1], report=written[0], pngs=written[2:])
