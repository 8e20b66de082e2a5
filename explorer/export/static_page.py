"""An export's page: each section under its caption band, every control as text, one offline file.

Every script, stylesheet and icon is inlined (Panel's CDN stylesheets as data: URLs), so the page opens with no network;
its plots still zoom, pan and give exact values. Each section's caption band (the kind's caption fields) and title make
a PNG pasted alone say what it shows. Builds the page in memory; writes nothing.
"""

from __future__ import annotations

import base64
import html
import io
import mimetypes
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from explorer.foundations.bounded import escaped_bytes

SECTION_CLASS = "export-view"
CAPTION_CLASS = "export-caption"
SETTING_CLASS = "export-setting"  # a control's setting, shown as text on a static page
CAPTION_STYLE = (
    "display:flex;flex-wrap:wrap;gap:0.2em 1.2em;padding:0.45em 0.8em;margin:0.3em 0 0.4em 0;"
    "background:#eef1f5;border-left:4px solid #2f3e4e;font-size:0.9em;color:#1d2733"
)
CAPTION_ITEM_STYLE = "white-space:nowrap"
VIEW_TITLE = "h2"  # a section's view title, under its caption band: every PNG part repeats both
SUBHEADINGS = "h3, h4"  # headings inside a view (and the titles of its cards): a part continuing one repeats it
PAGE_TITLE = "{name} - Attention Packet Explorer"
STAMP_FORMAT = "%Y-%m-%d %H:%M UTC"
# Building and saving an export's views goes through process-wide state of HoloViews, Bokeh and Panel (the plotting
# renderer, the resource mode): two renderings at once on two threads corrupted each other (HoloViews' _update_title
# met a str). One export renders its page at a time; the PNGs (chromium, a process of its own) are taken outside.
RENDERING = threading.RLock()

CaptionFields = tuple[tuple[str, str], ...]  # (label, text) pairs of a caption band


@dataclass(frozen=True)
class Section:
    """One section of an exported page: its slug (`export-view-<slug>`, `NAME-<slug>.png`), title and view builder."""

    slug: str
    title: str
    build: Callable[[], object]


def stamp() -> str:
    """The export date every caption band and findings file carries."""
    return datetime.now(UTC).strftime(STAMP_FORMAT)


def caption_html(fields: tuple[tuple[str, str], ...]) -> str:
    """The caption band: one wrapping line of label: value pairs."""
    items = "".join(
        f'<span style="{CAPTION_ITEM_STYLE}"><span style="color:#5a6470">{html.escape(label)}</span> '
        f"<b>{html.escape(value)}</b></span>"
        for label, value in fields
    )
    return f'<div class="{CAPTION_CLASS}" style="{CAPTION_STYLE}">{items}</div>'


def static_view(view):
    """A freshly built view made static: every control as the setting it shows (a button left out), every card an open
    titled column, every bound chart drawn, and hints, progress indicators and hidden parts left out."""
    import panel as pn
    from panel.param import ParamFunction, ParamMethod

    from explorer.views.shared.common import HINT_CLASS

    if not getattr(view, "visible", True) or isinstance(view, pn.widgets.indicators.Indicator):
        return None  # hidden in the app at export time, or a live progress indicator: nothing to show on a page
    if isinstance(view, pn.widgets.Widget):
        return _setting(view)
    if HINT_CLASS in (getattr(view, "css_classes", None) or []):
        return None
    if isinstance(view, (ParamFunction, ParamMethod)):
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
    return pn.pane.HTML(
        f'<p class="{SETTING_CLASS}" style="margin:0.2em 0"><b>{html.escape(widget.name)}:</b> '
        f"{html.escape(str(shown))}</p>",
        sizing_mode="stretch_width",
    )


def _section(section: Section, caption: str):
    import panel as pn

    heading = pn.pane.HTML(f"{caption}<h2>{html.escape(section.title)}</h2>", sizing_mode="stretch_width")
    return pn.Column(
        heading,
        static_view(section.build()),
        css_classes=[SECTION_CLASS, f"{SECTION_CLASS}-{section.slug}"],
        sizing_mode="stretch_width",
    )


def standalone_page(name: str, intro: str, fields: CaptionFields, sections: Sequence[Section]) -> str:
    """The whole offline page of one export: `name` as its heading, the `intro` paragraph (HTML), then every section
    under the caption band of `fields` and its title."""
    import panel as pn

    with _detached():
        header = pn.pane.HTML(f"<h1>{html.escape(escaped_bytes(name))}</h1><p>{intro}</p>", sizing_mode="stretch_width")
        caption = caption_html(fields)
        page = pn.Column(header, *(_section(s, caption) for s in sections), sizing_mode="stretch_width")
        return _standalone_html(page, title=PAGE_TITLE.format(name=name))


def _data_url(match: re.Match) -> str:
    from panel.io.resources import DIST_DIR

    path = Path(DIST_DIR) / match.group("path")
    if not path.is_file():
        return match.group(0)
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


@contextmanager
def _detached():
    """A private Panel document (nothing of a running app's session leaks in) in inline resource mode, one export at a
    time (RENDERING)."""
    from bokeh.document import Document
    from panel.io.resources import set_resource_mode
    from panel.io.state import set_curdoc

    with RENDERING, set_curdoc(Document()), set_resource_mode("inline"):
        yield


def _standalone_html(viewable, title: str) -> str:
    """The viewable as one HTML document that loads nothing; a name's byte that is not UTF-8 is written as \\xNN."""
    from bokeh.resources import INLINE
    from panel.io.resources import CDN_DIST, LOCAL_DIST

    buffer = io.StringIO()
    viewable.save(buffer, title=escaped_bytes(title), resources=INLINE, embed=False)
    prefixes = "|".join(re.escape(prefix) for prefix in (CDN_DIST, LOCAL_DIST))
    pattern = re.compile(rf"(?:{prefixes})(?P<path>[A-Za-z0-9_./-]+)(?:\?v=[A-Za-z0-9_.]*)?")
    return escaped_bytes(pattern.sub(_data_url, buffer.getvalue()))
