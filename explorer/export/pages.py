"""Writes one packet's views as a standalone offline HTML page, its JSON report and one PNG per view.

All or none; computes no numbers and never overwrites a file.

The HTML inlines every script, stylesheet and icon (Bokeh INLINE resources; Panel's
component stylesheets, which it links from its CDN even in inline mode, are turned
into data: URLs), so the page opens with no network at all. It is a static snapshot
of each view's state at export time: plots still zoom, pan and give exact values,
widgets are not live.

PNGs need system packages, no browser download: Debian's `chromium` package
(`apt-get install chromium`, /usr/bin/chromium) driven headless by Playwright for
Python (`pip install playwright`; never `playwright install`). The exported page is
opened from disk with every non-file request blocked and each view section is
captured as an element screenshot.

Every section opens with a caption band naming the packet, its status, identity,
selection, hash prefix, explorer version and export date, so a PNG pasted alone
still says what it shows. The page holds no control: each setting chosen in the app
is written as text, cards are plain open sections, buttons and instructions about
clicking are left out (`static_view`). At capture time the Bokeh toolbars are hidden
and scrolling text boxes unrolled; a view taller than MAX_PNG_HEIGHT is split into
numbered parts, each under the caption band.
"""

from __future__ import annotations

import base64
import contextlib
import html
import importlib.util
import io
import json
import mimetypes
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from explorer.analysis.ranking import worst_score_head
from explorer.analysis.report import REPORT_INDENT, REPORT_SUFFIX, packet_name, report_text
from explorer.analysis.result import Analysis
from explorer.export.findings import FINDINGS_SUFFIX, packet_markdown, pair_markdown, replay_markdown
from explorer.export.split import split_png
from explorer.foundations.bounded import clip, escaped_bytes
from explorer.foundations.safeio import write_new
from explorer.packet.model import REFUSED
from explorer.version import __version__

EXPORT_DIR_ENV = "EXPLORER_EXPORT_DIR"
DEFAULT_EXPORT_DIR = "exports"
HTML_SUFFIX = ".html"
PNG_SUFFIX = ".png"
MAX_NAME_ATTEMPTS = 1000  # name-2, name-3, ... before giving up on a free file name
MAX_STEM_CHARS = 100  # characters of a packet name kept in file names (a name may be 255 bytes, a path 4096)
SECTION_CLASS = "export-view"
CAPTION_CLASS = "export-caption"
SETTING_CLASS = "export-setting"  # a control's setting, shown as text on a static page
SHA_DIGITS = 12  # hex digits of packetSHA256 in the caption band
UNKNOWN = "unknown"
CAPTION_STYLE = (
    "display:flex;flex-wrap:wrap;gap:0.2em 1.2em;padding:0.45em 0.8em;margin:0.3em 0 0.4em 0;"
    "background:#eef1f5;border-left:4px solid #2f3e4e;font-size:0.9em;color:#1d2733"
)
CAPTION_ITEM_STYLE = "white-space:nowrap"
PAGE_WIDTH = 1280  # CSS pixels of the page the PNGs are taken from: the exported page fits a 1,280 px window
REFUSED_PNG_VIEW = "summary"  # the one PNG of a refused packet
PAGE_HEIGHT = 1000
# What `report` holds beyond the analysis and its emulations (docs/report.md, "Memory"): the plotting libraries, every
# view's Bokeh document and the page itself in memory before anything is written (measured 225-240 MiB; the views
# send bounded data whatever the geometry, see the attention curve's thinning).
REPORT_PAGE_BYTES = 256 * 1024 * 1024
RENDER_TIMEOUT_MS = 60_000  # per view: a static page draws in seconds
SETTLE_MS = 300  # one more paint after a view reports itself drawn
VIEW_TITLE = "h2"  # a section's view title, under its caption band: every PNG part repeats both
SUBHEADINGS = "h3, h4"  # headings inside a view (and the titles of its cards): a part continuing one repeats it
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_INSTALL = "apt-get install chromium"  # Debian's package; Playwright never downloads a browser here
PLAYWRIGHT_MODULE = "playwright"
PLAYWRIGHT_INSTALL = "pip install -e '.[export]', or pip install playwright; no browser is downloaded"
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
LOCAL_URL_PREFIXES = ("file:", "data:", "blob:", "about:")
# Building and saving an export's views goes through process-wide state of HoloViews, Bokeh and Panel (the plotting
# renderer, the resource mode): two renderings at once on two threads corrupted each other (HoloViews' _update_title
# met a str). One export renders its page at a time; the PNGs (chromium, a process of its own) are taken outside.
RENDERING = threading.RLock()
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class RenderError(RuntimeError):
    """The PNGs could not be rendered: chromium is missing or cannot start, or a view did not finish drawing."""


@dataclass(frozen=True)
class ExportPaths:
    """Files written by one export: the HTML page, the JSON report and, headless, one PNG per view."""

    html: Path
    report: Path
    pngs: tuple[Path, ...] = ()
    findings: Path | None = None  # NAME.findings.md (explorer.export.findings), beside the PNGs it links


def choose_export_dir(argument: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    """The export directory: the argument, else $EXPLORER_EXPORT_DIR, else ./exports, made absolute.

    os.path.realpath, not Path.resolve: a symlink loop is left in the path (writing there fails with ELOOP)
    instead of raising RuntimeError."""
    chosen = argument or environ.get(EXPORT_DIR_ENV) or DEFAULT_EXPORT_DIR
    return Path(os.path.realpath(os.path.expanduser(chosen)))


def stem_base(name: str, fallback: str) -> str:
    """The file-name stem of a packet or pair name: ASCII letters, digits and ._- only, at most MAX_STEM_CHARS."""
    return _UNSAFE_NAME.sub("_", name).strip("._")[:MAX_STEM_CHARS] or fallback


def _export_suffixes() -> tuple[str, ...]:
    from explorer.views import VIEWS

    return (
        HTML_SUFFIX,
        REPORT_SUFFIX,
        FINDINGS_SUFFIX,
        *(f"-{slug}{part}{PNG_SUFFIX}" for slug, _, _ in VIEWS for part in ("", "-1")),
    )


def _free_stem(out_dir: Path, base: str, suffixes: tuple[str, ...] | None = None) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first stem none of whose export files (`suffixes`) exist."""
    suffixes = _export_suffixes() if suffixes is None else suffixes
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        stem = base if attempt == 1 else f"{base}-{attempt}"
        if not any(os.path.lexists(out_dir / f"{stem}{suffix}") for suffix in suffixes):
            return stem
    raise FileExistsError(f"no free export name for {base} in {out_dir}")


def _write_named(
    out_dir: Path, base: str, files: Mapping[str, str | bytes], suffixes: tuple[str, ...] | None = None
) -> tuple[Path, ...]:
    """Every file of one export (`files`: suffix -> content) under the first free stem, all or none.

    The name is reserved by the export's first file: `write_new` links it only while its name is free, so of two
    exports that chose the same stem at the same moment exactly one gets it; the other, having written nothing,
    takes the next free stem. Every export is written, under a name of its own."""
    for _ in range(MAX_NAME_ATTEMPTS):
        stem = _free_stem(out_dir, base, suffixes)
        try:
            return _write_set({out_dir / f"{stem}{suffix}": data for suffix, data in files.items()})
        except FileExistsError:
            continue  # another export took the stem between the look and the write
    raise FileExistsError(f"no free export name for {base} in {out_dir}")


def _write_new(path: Path, data: str | bytes) -> Path:
    """One file written whole or not at all, never over an existing name (explorer.foundations.safeio)."""
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


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _view_titles() -> dict[str, str]:
    from explorer.views import VIEWS

    return {slug: title for slug, title, _ in VIEWS}


def _with_findings(written: tuple[Path, ...], markdown) -> ExportPaths:
    """The export just written (JSON, HTML, PNGs) and its `<stem>.findings.md` beside it, whose text is
    `markdown(stem, png file names)`; when the findings file cannot be written the export's other files are removed
    (all or none) and the error raised."""
    report, page, pngs = written[0], written[1], written[2:]
    stem = page.name[: -len(HTML_SUFFIX)]
    try:
        findings = _write_new(page.parent / f"{stem}{FINDINGS_SUFFIX}", markdown(stem, [p.name for p in pngs]))
    except BaseException:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return ExportPaths(html=page, report=report, pngs=pngs, findings=findings)


def shown_emulations(analysis: Analysis) -> Analysis:
    """The analysis an export's JSON serializes: with the emulations its Emulations view shows (the view's default
    set, computed once and cached by analyze), so the JSON beside the Emulations PNG holds the counts it shows
    (docs/report.md, "Exports"). Unchanged without numerics or when it already holds that set."""
    import dataclasses

    from explorer.analysis.analyze import emulations_of
    from explorer.analysis.emulation import normalised_ids, shape_of
    from explorer.views.packet.emulations import EmulationsView

    if analysis.numerics is None:
        return analysis
    request = EmulationsView(analysis).ids()
    ids = normalised_ids(request, shape_of(analysis.admission.tensors))
    if analysis.emulations_requested == ids:
        return analysis
    emulations, counts = emulations_of(analysis, request)
    return dataclasses.replace(analysis, emulations=emulations, emulation_counts=counts, emulations_requested=ids)


# ---------------------------------------------------------------- the page


def caption_fields(analysis: Analysis, name: str, stamp: str) -> tuple[tuple[str, str], ...]:
    """(label, text) pairs of the caption band every export carries; 'unknown' where the packet does not say."""
    report = analysis.report()
    identity, selection = report.get("identity") or {}, report.get("selection") or {}
    digest = report["packet"].get("packetSHA256")

    def known(value) -> str:
        return UNKNOWN if value is None else str(value)

    return (
        ("packet", escaped_bytes(name)),
        ("status", analysis.status),
        ("model", known(identity.get("modelID"))),
        ("backend", known(identity.get("backend"))),
        ("request", known(selection.get("requestID"))),
        ("output index", known(selection.get("outputIndex"))),
        ("layer", known(selection.get("modelLayerIndex"))),
        ("packetSHA256", digest[:SHA_DIGITS] if digest else UNKNOWN),
        ("explorer", __version__),
        ("exported", stamp),
    )


def caption_html(fields: tuple[tuple[str, str], ...]) -> str:
    """The caption band: one wrapping line of label: value pairs."""
    items = "".join(
        f'<span style="{CAPTION_ITEM_STYLE}"><span style="color:#5a6470">{html.escape(label)}</span> '
        f"<b>{html.escape(value)}</b></span>"
        for label, value in fields
    )
    return f'<div class="{CAPTION_CLASS}" style="{CAPTION_STYLE}">{items}</div>'


def export_head(analysis: Analysis, head: int | None) -> int:
    """The query head the exported views open on: the one chosen, else the packet's worst head (the largest score, the
    head the app opens on)."""
    if head is not None:
        return head
    chosen = worst_score_head(analysis.numerics) if analysis.numerics is not None else None
    return 0 if chosen is None else chosen


def static_view(view):
    """A freshly built view made fit for a static page: every control replaced by the setting it shows, as text (or
    left out when it is a button: nothing on the page looks live that is not), every card open as a plain titled
    column, every bound chart drawn for the settings shown, and every instruction about the live app, progress
    indicator and part hidden at export time left out."""
    import panel as pn
    from panel.param import ParamFunction, ParamMethod

    from explorer.views.shared.common import HINT_CLASS

    if not getattr(view, "visible", True) or isinstance(view, pn.widgets.indicators.Indicator):
        return None  # hidden in the app at export time, or a live progress indicator: nothing to show on a page
    if isinstance(view, pn.widgets.Widget):
        return _setting(view)
    if HINT_CLASS in (getattr(view, "css_classes", None) or []):
        return None
    if isinstance(view, ParamFunction):
        return static_view(pn.panel(view.object()))
    if isinstance(view, ParamMethod):
        return static_view(pn.panel(view.object()))
    if isinstance(view, pn.viewable.Viewer):
        return static_view(view.__panel__())
    if isinstance(view, pn.Card):
        title = pn.pane.HTML(
            f"<h4 style='margin:0.4em 0 0.2em 0'>{html.escape(view.title)}</h4>", sizing_mode="stretch_width"
        )
        return static_view(pn.Column(title, *view.objects, sizing_mode="stretch_width", css_classes=view.css_classes))
    if isinstance(view, (pn.layout.ListLike, pn.GridBox)):
        view.objects = [part for part in map(static_view, view.objects) if part is not None]
    return view


def _setting(widget):
    """The value a control shows, as a line of text (None for a button or a download: they do nothing here)."""
    import panel as pn

    if isinstance(widget, (pn.widgets.Button, pn.widgets.FileDownload)):
        return None
    value = widget.value
    options = getattr(widget, "options", None)
    if isinstance(options, Mapping):  # the label the control shows for its value
        shown = next((label for label, option in options.items() if option == value), value)
    else:
        shown = ("yes" if value else "no") if isinstance(value, bool) else value
    if not widget.name:
        return None  # a value without a name would say nothing on a page
    label = widget.name
    return pn.pane.HTML(
        f'<p class="{SETTING_CLASS}" style="margin:0.2em 0"><b>{html.escape(label)}:</b> {html.escape(str(shown))}</p>',
        sizing_mode="stretch_width",
    )


def _page(analysis: Analysis, name: str, head: int):
    import panel as pn

    from explorer.views import VIEWS, Selection

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    caption = caption_html(caption_fields(analysis, name, stamp))
    header = pn.pane.HTML(
        f"<h1>{html.escape(escaped_bytes(name))}</h1><p>Static export of the Attention Packet Explorer views: the "
        "plots still zoom, pan and give each cell's exact values; each setting chosen in the app is written as text. "
        "The JSON report beside this file holds the same numbers; the repository's docs/ explains the packet rules "
        "and the report.</p>",
        sizing_mode="stretch_width",
    )
    sections = []
    for slug, title, builder in VIEWS:
        view = static_view(builder(analysis, Selection(head=head)))
        heading = pn.pane.HTML(f"{caption}<h2>{html.escape(title)}</h2>", sizing_mode="stretch_width")
        sections.append(
            pn.Column(
                heading, view, css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{slug}"], sizing_mode="stretch_width"
            )
        )
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
    template config of a running app leaks in) and inline resource mode (restored afterwards), one export at a
    time (RENDERING)."""
    from bokeh.document import Document
    from panel.io.resources import set_resource_mode
    from panel.io.state import set_curdoc

    with RENDERING, set_curdoc(Document()), set_resource_mode("inline"):
        yield


def _standalone_html(viewable, title: str) -> str:
    """The viewable as one HTML document that loads nothing from anywhere (see the module docstring); a byte of a
    file name that is not UTF-8 anywhere in it is written as \\xNN (bounded.escaped_bytes)."""
    from bokeh.resources import INLINE
    from panel.io.resources import CDN_DIST, LOCAL_DIST

    buffer = io.StringIO()
    viewable.save(buffer, title=escaped_bytes(title), resources=INLINE, embed=False)
    prefixes = "|".join(re.escape(prefix) for prefix in (CDN_DIST, LOCAL_DIST))
    pattern = re.compile(rf"(?:{prefixes})(?P<path>[A-Za-z0-9_./-]+)(?:\?v=[A-Za-z0-9_.]*)?")
    return escaped_bytes(pattern.sub(_data_url, buffer.getvalue()))


def _packet_html(analysis: Analysis, name: str, head: int | None) -> str:
    """The standalone page of every view of one packet, opening on `head` (default: export_head); its views are
    given the analysis the JSON beside it serializes (shown_emulations), so the Raw view shows that report."""
    with _detached():
        return _standalone_html(
            _page(shown_emulations(analysis), name, export_head(analysis, head)),
            title=f"{name} - Attention Packet Explorer",
        )


def export_packet(
    analysis: Analysis, out_dir: str | os.PathLike, *, name: str | None = None, head: int | None = None
) -> ExportPaths:
    """Write `<name>.html` (every view, inline resources), `<name>.report.json` (with the emulations the page shows)
    and `<name>.findings.md` into `out_dir`, all or none.

    `head` is the query head the views open on (default: the largest-score head). Existing files are never
    overwritten: the name gets a -2, -3, ... suffix instead.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or packet_name(analysis)
    page = _packet_html(analysis, name, head)
    return _packet_files(analysis, out_dir, name, head, page, {})


# ---------------------------------------------------------------- PNGs


def _block_network(route) -> None:
    if route.request.url.startswith(LOCAL_URL_PREFIXES):
        route.continue_()
    else:
        route.abort()


def require_chromium() -> None:
    """RenderError naming what to install when CHROMIUM is not an executable file or Playwright is not installed
    (`pip install -e .` does not bring it: the `export` extra does)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        raise RenderError(f"{CHROMIUM} is missing: PNGs need Debian's chromium package ({CHROMIUM_INSTALL})")
    if importlib.util.find_spec(PLAYWRIGHT_MODULE) is None:
        raise RenderError(f"Playwright is not installed: PNGs need it to drive {CHROMIUM} ({PLAYWRIGHT_INSTALL})")


def _screenshots(html_path: str | os.PathLike, slugs: tuple[str, ...]) -> dict[str, list[bytes]]:
    """PNG bytes of each `export-view-<slug>` section of an exported page, rendered by /usr/bin/chromium offline;
    RenderError when chromium is missing or fails, or a view does not draw."""
    from playwright.sync_api import Error as PlaywrightError

    require_chromium()
    # Playwright's sync API refuses a thread that runs an asyncio loop (a Jupyter kernel, a test session holding
    # a browser, a served callback): render on a thread of our own, whichever thread asked.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="explorer-png") as renderer:
        rendering = renderer.submit(_rendered, html_path, slugs)
    try:
        return rendering.result()
    except PlaywrightError as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise RenderError(f"chromium could not render the page: {clip(first_line)}") from None


def _rendered(html_path: str | os.PathLike, slugs: tuple[str, ...]) -> dict[str, list[bytes]]:
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
            shots = {}
            for slug in slugs:
                section = page.locator(f".{SECTION_CLASS}-{slug}").first
                top = section.bounding_box()["y"]
                boxes = [
                    (round(box["y"] - top), round(box["y"] + box["height"] - top))
                    for box in (heading.bounding_box() for heading in section.locator(SUBHEADINGS).all())
                    if box is not None and box["height"] > 0
                ]
                title = _title_height(section, top)  # measured before the screenshot scrolls the page
                shots[slug] = split_png(section.screenshot(timeout=RENDER_TIMEOUT_MS), title, headings=boxes)
            return shots
        finally:
            browser.close()


def _title_height(section, top: float) -> int:
    """Rows of a section's title band: its caption band and, under it, the view's title (h2) when it has one."""
    bottom = 0
    for selector in (f".{CAPTION_CLASS}", VIEW_TITLE):
        box = section.locator(selector).first.bounding_box() if section.locator(selector).count() else None
        if box is not None:
            bottom = max(bottom, round(box["y"] + box["height"] - top))
    return bottom


def page_screenshots(page: str, slugs: tuple[str, ...]) -> dict[str, list[bytes]]:
    """The PNG parts of each `export-view-<slug>` section of a standalone page (one part unless it is taller than
    MAX_PNG_HEIGHT), rendered from a private temporary copy of the page."""
    require_chromium()
    with tempfile.TemporaryDirectory(prefix="explorer-render-") as scratch:
        html_path = Path(scratch) / f"page{HTML_SUFFIX}"
        html_path.write_text(page, encoding="utf-8")
        return _screenshots(html_path, slugs)


def png_suffixes(shots: Mapping[str, list[bytes]]) -> dict[str, bytes]:
    """The file-name ending of each section's PNG after the export's stem: `-<slug>.png`, or `-<slug>-1.png`,
    `-2.png`, ... for the parts of a section taller than MAX_PNG_HEIGHT."""
    files = {}
    for slug, parts in shots.items():
        names = (
            [f"-{slug}{PNG_SUFFIX}"]
            if len(parts) == 1
            else [f"-{slug}-{number}{PNG_SUFFIX}" for number in range(1, len(parts) + 1)]
        )
        files.update(zip(names, parts, strict=True))
    return files


def png_slugs(analysis: Analysis) -> tuple[str, ...]:
    """The views drawn as PNGs: every view, or for a refused packet the Summary alone (every other view would only
    repeat that nothing in it is interpreted)."""
    from explorer.views import VIEWS

    return (REFUSED_PNG_VIEW,) if analysis.status == REFUSED else tuple(slug for slug, _, _ in VIEWS)


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


# Across every shadow root: hides the Bokeh toolbars
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
STATIC_HIDDEN = ".bk-Toolbar"
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


def write_report(
    analysis: Analysis, out_dir: str | os.PathLike, *, name: str | None = None, head: int | None = None
) -> ExportPaths:
    """`explorer report PACKET --out DIR` and the app's Export: the HTML page, the JSON report and the PNGs
    (`png_slugs`), all or none; `name` and `head` as for `export_packet`.

    Everything is made in memory first (the PNGs from a private temporary copy of the page), then written by
    _write_set: a full disk, a taken name or a missing or failing chromium (RenderError, raised before
    anything is written) leaves no file of this report behind. Only `out_dir` itself may have been created.
    """
    require_chromium()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or packet_name(analysis)
    page = _packet_html(analysis, name, head)
    pngs = png_suffixes(page_screenshots(page, png_slugs(analysis)))
    return _packet_files(analysis, out_dir, name, head, page, pngs)


def _packet_files(
    analysis: Analysis, out_dir: Path, name: str, head: int | None, page: str, pngs: Mapping[str, bytes]
) -> ExportPaths:
    """Write one packet's export under a free stem: its JSON (with the emulations the page shows), the page, the
    PNGs and the findings file, all or none."""
    shown = shown_emulations(analysis)
    written = _write_named(
        out_dir, stem_base(name, "packet"), {REPORT_SUFFIX: report_text(shown), HTML_SUFFIX: page, **pngs}
    )
    return _with_findings(
        written,
        lambda stem, png_names: packet_markdown(
            shown,
            caption_fields(analysis, name, _stamp()),
            stem,
            png_names,
            export_head(analysis, head),
            _view_titles(),
        ),
    )


# ---------------------------------------------------------------- a packet pair (docs/pairs.md)

COMPARISON_SUFFIX = ".comparison.json"
PAIR_SECTION = "pair"


def comparison_text(pair) -> str:
    """The comparison report exactly as `explorer compare --json` prints it."""
    return json.dumps(pair.report(), allow_nan=False, indent=REPORT_INDENT) + "\n"


PAIR_SIDE_FIELDS = ("packet", "status", "backend", "packetSHA256")  # caption fields shown once per side


def pair_caption_fields(pair, names: tuple[str, str], stamp: str) -> tuple[tuple[str, str], ...]:
    """The caption band of a pair: both packets (name, status, backend, hash prefix), the pair status, what the
    two sides share (model, request, output index, layer; 'a | b' where they differ), version and date."""
    sides = [
        dict(caption_fields(analysis, name, stamp)) for analysis, name in zip((pair.a, pair.b), names, strict=True)
    ]
    per_side = tuple(
        (f"{label} {side}", fields[label])
        for side, fields in zip("ab", sides, strict=True)
        for label in PAIR_SIDE_FIELDS
    )
    shared = tuple(
        (label, a if a == sides[1][label] else f"{a} | {sides[1][label]}")
        for label, a in sides[0].items()
        if label not in (*PAIR_SIDE_FIELDS, "explorer", "exported")
    )
    return (("pair", pair.status), *per_side, *shared, ("explorer", __version__), ("exported", stamp))


def pair_names(pair) -> tuple[str, str]:
    """The two packets' directory names (sides a and b)."""
    return packet_name(pair.a), packet_name(pair.b)


def _pair_page(pair, name: str, names: tuple[str, str]):
    import panel as pn

    from explorer.views.pair.view import build

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = pn.pane.HTML(
        f"<h1>{html.escape(name)}</h1><p>Side a: <code>{html.escape(pair.a.admission.path)}</code>; side b: "
        f"<code>{html.escape(pair.b.admission.path)}</code>. Pair status: <b>{pair.status}</b>. Static export of the "
        f"Attention Packet Explorer pair view (explorer {__version__}, {stamp}): the plots still zoom, pan and give "
        "each cell's exact values. "
        "The comparison JSON beside this file holds the same numbers.</p>",
        sizing_mode="stretch_width",
    )
    view = static_view(build(pair))
    caption = pn.pane.HTML(caption_html(pair_caption_fields(pair, names, stamp)), sizing_mode="stretch_width")
    section = pn.Column(
        caption, view, css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{PAIR_SECTION}"], sizing_mode="stretch_width"
    )
    return pn.Column(header, section, sizing_mode="stretch_width")


def export_pair(
    pair,
    out_dir: str | os.PathLike,
    *,
    name: str | None = None,
    names: tuple[str, str] | None = None,
    png: bool = False,
) -> ExportPaths:
    """Write `<a>-vs-<b>.html` (the pair view, inline resources), `<a>-vs-<b>.comparison.json` and, with `png`,
    `<a>-vs-<b>-pair.png` (the pair section without toolbars or controls) into `out_dir`, all or none.

    `names` are the packets' names in the caption band (default their directory names); `report` of the
    returned paths is the comparison JSON. Existing files are never overwritten.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = names or pair_names(pair)
    name = name or f"{names[0]}-vs-{names[1]}"
    base = stem_base(name, "pair")
    taken = (
        HTML_SUFFIX,
        COMPARISON_SUFFIX,
        FINDINGS_SUFFIX,
        f"-{PAIR_SECTION}{PNG_SUFFIX}",
        f"-{PAIR_SECTION}-1{PNG_SUFFIX}",
    )
    with _detached():
        page = _standalone_html(_pair_page(pair, name, names), title=f"{name} - Attention Packet Explorer")
    files: dict[str, str | bytes] = {COMPARISON_SUFFIX: comparison_text(pair), HTML_SUFFIX: page}
    if png:
        files.update(png_suffixes({PAIR_SECTION: _pair_png(page)}))
    written = _write_named(out_dir, base, files, taken)
    return _with_findings(
        written,
        lambda stem, png_names: pair_markdown(
            pair, pair_caption_fields(pair, names, _stamp()), name, stem, png_names, {PAIR_SECTION: "Pair view"}
        ),
    )


def _pair_png(page: str) -> list[bytes]:
    """The pair section of an exported pair page as PNG parts (one unless taller than MAX_PNG_HEIGHT), rendered from
    a private temporary copy of the page."""
    return page_screenshots(page, (PAIR_SECTION,))[PAIR_SECTION]


# ---------------------------------------------------------------- a replay run

REPLAY_SUFFIX = ".replay.json"
REPLAY_SECTION = "replay"


def replay_caption_fields(run, name: str, stamp: str) -> tuple[tuple[str, str], ...]:
    """The caption band of a replay run: the run, its status, the packet's caption fields and the partner."""
    packet = dict(caption_fields(run.packet, packet_name(run.packet), stamp)) if run.packet is not None else {}
    shown = tuple((label, value) for label, value in packet.items() if label not in ("status", "explorer", "exported"))
    partner = escaped_bytes(packet_name(run.partner)) if run.partner is not None else "none"
    return (
        ("replay run", escaped_bytes(name)),
        ("replay", run.status),
        *shown,
        ("partner", partner),
        ("explorer", __version__),
        ("exported", stamp),
    )


def _replay_page(run, name: str):
    import panel as pn

    from explorer.views.replay.view import build

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = pn.pane.HTML(
        f"<h1>{html.escape(escaped_bytes(name))}</h1>"
        f"<p>Replay run <code>{html.escape(escaped_bytes(run.path))}</code>. "
        f"Replay status: <b>{run.status}</b>. Static export of the Attention Packet Explorer replay view (explorer "
        f"{__version__}, {stamp}): each setting chosen in the app is written as text, numbers at 4 significant "
        "digits. The replay JSON beside this file holds the same numbers at full precision.</p>",
        sizing_mode="stretch_width",
    )
    view = static_view(build(run))
    caption = pn.pane.HTML(caption_html(replay_caption_fields(run, name, stamp)), sizing_mode="stretch_width")
    section = pn.Column(
        caption, view, css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{REPLAY_SECTION}"], sizing_mode="stretch_width"
    )
    return pn.Column(header, section, sizing_mode="stretch_width")


def export_replay(run, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False) -> ExportPaths:
    """Write `<run>.html` (the replay view, inline resources), `<run>.replay.json` and, with `png`,
    `<run>-replay.png` (or its numbered parts) into `out_dir`, all or none; existing files are never overwritten.

    `name` is the run's name in the caption band (default its directory name).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or os.path.basename(os.path.normpath(run.path))
    taken = (
        HTML_SUFFIX,
        REPLAY_SUFFIX,
        FINDINGS_SUFFIX,
        f"-{REPLAY_SECTION}{PNG_SUFFIX}",
        f"-{REPLAY_SECTION}-1{PNG_SUFFIX}",
    )
    with _detached():
        page = _standalone_html(_replay_page(run, name), title=f"{name} - Attention Packet Explorer")
    report = json.dumps(run.report(), allow_nan=False, indent=REPORT_INDENT) + "\n"
    files: dict[str, str | bytes] = {REPLAY_SUFFIX: report, HTML_SUFFIX: page}
    if png:
        files.update(png_suffixes(page_screenshots(page, (REPLAY_SECTION,))))
    written = _write_named(out_dir, stem_base(name, REPLAY_SECTION), files, taken)
    return _with_findings(
        written,
        lambda stem, png_names: replay_markdown(
            run, replay_caption_fields(run, name, _stamp()), name, stem, png_names, {REPLAY_SECTION: "Replay view"}
        ),
    )


# ---------------------------------------------------------------- a capture campaign (docs/campaigns.md)

CAMPAIGN_SUFFIX = ".campaign.json"
CAMPAIGN_SECTION = "campaign"


def _campaign_page(campaign: dict, name: str):
    import panel as pn

    from explorer.views.campaign.view import build

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    key = campaign["key"]
    header = pn.pane.HTML(
        f"<h1>{html.escape(escaped_bytes(name))}</h1><p>Campaign {html.escape(campaign['id'])} of request "
        f"<b>{html.escape(str(key['requestID']))}</b>, model {html.escape(str(key['modelID']))}, backends "
        f"{html.escape(' vs '.join(campaign['backends']))}. Static export of the Attention Packet Explorer campaign "
        f"view (explorer {__version__}, {stamp}); the campaign JSON and the findings beside this file hold the same "
        "numbers.</p>",
        sizing_mode="stretch_width",
    )
    caption = pn.pane.HTML(
        caption_html(
            (
                ("campaign", campaign["id"]),
                ("request", str(key["requestID"])),
                ("model", escaped_bytes(str(key["modelID"]))),
                ("backends", " vs ".join(campaign["backends"])),
                ("explorer", __version__),
                ("exported", stamp),
            )
        ),
        sizing_mode="stretch_width",
    )
    section = pn.Column(
        caption,
        static_view(build(campaign)),
        css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{CAMPAIGN_SECTION}"],
        sizing_mode="stretch_width",
    )
    return pn.Column(header, section, sizing_mode="stretch_width")


def export_campaign(
    campaign: dict, out_dir: str | os.PathLike, *, name: str | None = None, png: bool = False
) -> ExportPaths:
    """Write `<name>.html` (the campaign view), `<name>.campaign.json` (one campaign of the report),
    `<name>.findings.md` (its write-up) and, with `png`, `<name>-campaign.png` into `out_dir`, all or none.

    `campaign` is one entry of the campaign report's `campaigns`; `report` of the returned paths is the JSON, the
    findings file is beside it with FINDINGS_SUFFIX. Existing files are never overwritten.
    """
    from explorer.campaigns.report import findings_markdown

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = name or f"campaign-{campaign['id']}"
    taken = (
        HTML_SUFFIX,
        CAMPAIGN_SUFFIX,
        FINDINGS_SUFFIX,
        f"-{CAMPAIGN_SECTION}{PNG_SUFFIX}",
        f"-{CAMPAIGN_SECTION}-1{PNG_SUFFIX}",
    )
    with _detached():
        page = _standalone_html(_campaign_page(campaign, name), title=f"{name} - Attention Packet Explorer")
    files: dict[str, str | bytes] = {
        CAMPAIGN_SUFFIX: json.dumps(campaign, allow_nan=False, indent=REPORT_INDENT) + "\n",
        HTML_SUFFIX: page,
        FINDINGS_SUFFIX: findings_markdown(campaign),
    }
    if png:
        files.update(png_suffixes(page_screenshots(page, (CAMPAIGN_SECTION,))))
    written = _write_named(out_dir, stem_base(name, CAMPAIGN_SECTION), files, taken)
    return ExportPaths(html=written[1], report=written[0], pngs=written[3:], findings=written[2])
