"""The app shell: packet list, the views registry as tabs, the URL query and the Export button.

Computes no numbers and opens only listed packets.

The first page holds what it shows first: the list, the status line, the tab labels and the
open view. Every other view is built when its tab opens, the pair, replay and campaign areas
and the export's note and downloads when first used. Every change a browser asks for (a tab,
a packet, a head, an element) runs under one lock per session: with callbacks on threads, a
tab click landing while a packet opened was otherwise lost now and then (the label moved, the
view did not).
"""

from __future__ import annotations

import argparse
import functools
import html
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from panel.custom import JSComponent
from panel.io.location import Location

from explorer.analysis.analyze import analyze
from explorer.analysis.element import locate, parse_index
from explorer.analysis.result import Analysis
from explorer.catalog.index import PacketIndex
from explorer.export.pages import EXPORT_DIR_ENV, ExportPaths, choose_export_dir, write_report
from explorer.foundations.bounded import clip
from explorer.foundations.formatting import short_number
from explorer.ui import catalog
from explorer.ui.area import Downloads
from explorer.ui.campaigns import QUERY_CAMPAIGN, QUERY_CELL, CampaignMode
from explorer.ui.exporting import run_export
from explorer.ui.packets import PacketList
from explorer.ui.pairs import QUERY_COMPARE, PairMode
from explorer.ui.replays import QUERY_REPLAY, ReplayMode
from explorer.ui.shared import content_seen, echo, shown_name
from explorer.ui.tabbar import TabBar
from explorer.views import VIEWS, Selection
from explorer.views.packet.element import element_html
from explorer.views.packet.emulations import settings_from_query
from explorer.views.shared.html_summary import ranked_heads, written_note
from explorer.views.shared.markup import status_badge

log = logging.getLogger(__name__)

SLUGS = tuple(slug for slug, _, _ in VIEWS)
TITLES = {slug: title for slug, title, _ in VIEWS}
BUILDERS = {slug: builder for slug, _, builder in VIEWS}
QUERY_PACKET, QUERY_TAB, QUERY_HEAD = "packet", "tab", "head"
HEAD_PATTERN = re.compile(r"[0-9]{1,6}")  # ASCII digits only: str.isdigit() also accepts '²', which int() refuses
SCORE_TITLE = (
    "score: the largest |output - primary reference| / allowance over the compared heads (allowance: half "
    "the output dtype's spacing plus the head's FP64 noise floor; docs/report.md)"
)
EXPORT_LABEL, EXPORT_WIDTH = "Export HTML + PNG + JSON", 210
EXPORT_BUSY = "Exporting every view of this packet (the PNGs take a few seconds) ..."
ELEMENT_DOCK_STYLE = {
    "position": "fixed",
    "bottom": "0",
    "right": "0",
    "z-index": "1000",
    "width": "min(780px, 62vw)",
    "max-height": "46vh",
    "overflow": "auto",
    "background": "#ffffff",
    "box-shadow": "0 -2px 10px rgba(0, 0, 0, 0.25)",
}
QUERY_ELEMENT = "element"  # `element=H,C` (query head, channel) or `element=N` (flat index over [QH, D])
# A name's bytes that are not UTF-8 (surrogateescape's stand-ins) are percent-encoded as themselves, and read back.
URL_ERRORS = "surrogateescape"

BADGE_STYLE = "padding:0 0.5em;font-size:0.85em;margin-right:0.5em;"  # the list's chip: smaller than a view's
META_STYLE = "font-size:0.85em;color:#444444"
# Each part of the status line is its own box, so a long list of codes wraps below, never over, the name and chip.
STATUS_LINE_STYLE = "display:flex;flex-wrap:wrap;align-items:baseline;gap:0.2em 0.6em"
MESSAGE_STYLE = "padding:0.4em 0.8em;border-left:4px solid #8a8a8a;background:#f3f3f3"
RETRY_OPEN_MS = 100  # the first packet's opening waits this long for a packet being opened on a thread


def parse_options(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> tuple[Path, Path]:
    """(packet root, export directory) from `panel serve explorer/app.py --args ...` and the environment."""
    parser = argparse.ArgumentParser(prog="explorer/app.py", add_help=False)
    parser.add_argument("--root", help=f"packet root (default ${catalog.ROOT_ENV} or sample_packets/)")
    parser.add_argument("--export-dir", help=f"where Export writes (default ${EXPORT_DIR_ENV} or ./exports)")
    options, _ = parser.parse_known_args(list(argv))
    return catalog.choose_root(options.root, environ), choose_export_dir(options.export_dir, environ)


def _list_badge(status: str) -> str:
    return badge_html(catalog.Summary("", status, (), None, None, None, None, None, None), "packet-badge")


def badge_html(summary: catalog.Summary, css_class: str, heads: int | None = None) -> str:
    """A neutral status chip carrying the packet's score (error / allowance) when it has one, then the heads not
    compared (of `heads`) and the status codes."""
    score = "" if summary.score is None else f" &middot; score {html.escape(short_number(summary.score))}"
    badge = status_badge(summary.status, css_class=css_class, text=score, title=SCORE_TITLE, style=BADGE_STYLE)
    details = list(summary.codes)
    if summary.heads_not_compared:
        of = "" if heads is None else f" of {heads}"
        details.insert(0, f"{summary.heads_not_compared}{of} heads not compared")
    return f'{badge}<span class="packet-meta" style="{META_STYLE}">{html.escape(", ".join(details))}</span>'


def session_query() -> str:
    """This session's URL query ('?'-prefixed, '' outside a session), read from the page request through Panel's public
    `pn.state.session_args` (the request's bytes, decoded as URL_ERRORS keeps a byte that is not UTF-8)."""
    arguments = pn.state.session_args
    pairs = [(name, values[-1].decode("utf-8", URL_ERRORS)) for name, values in arguments.items() if values]
    return "?" + urlencode(pairs, errors=URL_ERRORS) if pairs else ""


class StringQueryLocation(Location):
    """A Location whose query parameters stay strings: Panel's own parsing calls int() on anything str.isdigit()
    accepts ('²', 5,000 digits), which raised and left the page blank."""

    @property
    def query_params(self) -> dict[str, str]:
        return dict(parse_qsl(self.search[1:], errors=URL_ERRORS))


def page_location() -> Location | bool:
    """The Location the app's template gets (`servable(location=...)`, Panel's public way to give a page its own):
    a StringQueryLocation of this session's request, or True (Panel's own) outside a session."""
    document = pn.state.curdoc
    context = document.session_context if document is not None else None
    return StringQueryLocation.from_request(context.request) if context is not None else True


def one_at_a_time(method: Callable) -> Callable:
    """`method` of a Shell run under the session's lock (the module docstring says why)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._busy:
            return method(self, *args, **kwargs)

    return locked


class QueryWriter(JSComponent):
    """Writes `query` into the browser's address bar (history.replaceState) whenever it changes, draws nothing."""

    query = param.String(default="", doc="The URL query, '?'-prefixed.")

    _esm = """
export function render({ model }) {
  const write = () => {
    const url = new URL(window.location.href)
    url.search = model.query
    if (url.href !== window.location.href) {
      window.history.replaceState(window.history.state, "", url.href)
    }
  }
  model.on("query", write)
  write()
}
"""


class Shell(param.Parameterized):
    """One browser session: which packet, tab and head are open, mirrored in the URL query."""

    packet = param.String(default="", doc="Name of the open packet, one of the listed names.")
    tab = param.Selector(objects=list(SLUGS), default=SLUGS[0], doc="Slug of the open view.")
    head = param.Integer(default=0, bounds=(0, None), doc="Selected query head.")

    def __init__(self, root: Path, export_dir: Path, on_status: Callable[[str], None] = lambda packet: None, **params):
        """`on_status(packet)` hears every status line shown (the server's per-session timings)."""
        super().__init__(**params)
        self._on_status = on_status
        self.root = root
        self.export_dir = export_dir
        self.index = PacketIndex(root)  # discovered afresh for every session, and rescanned while it lasts
        self._seen: dict[str, tuple] = {}  # packet name -> content_seen of what this session last showed
        self._shown: Analysis | None = None  # the analysis on screen
        self._selection: Selection | None = None
        self._emulation: dict[str, object] = {}  # the Emulations view's non-default parameters, by URL name
        self._head_asked = False  # the URL named the head: the first packet opens on it, not on its worst head
        self._query_writer = QueryWriter(width=0, height=0, margin=0)
        self._message_html = ""  # notes about the last request, above the status line in the same pane
        self._status_html = ""
        self._status = pn.pane.HTML("", sizing_mode="stretch_width")
        self._element_box: pn.Row | None = None  # the element dock, made when an element is first selected
        self.tab_bar = TabBar(tabs=[[slug, TITLES[slug]] for slug in SLUGS], active=self.tab, margin=(0, 5))
        self._view_holder = pn.Column(sizing_mode="stretch_width")  # the open tab's view, the only one on the page
        self._views: dict[str, pn.viewable.Viewable] = {}  # slug -> view of the shown packet, built on first open
        self._export_button = pn.widgets.Button(
            label=EXPORT_LABEL, color="primary", width=EXPORT_WIDTH, css_classes=["packet-export"]
        )
        self._export_note: pn.pane.HTML | None = None  # made with the downloads at the first export
        self._downloads: Downloads | None = None
        self._busy = threading.RLock()  # one change of the page at a time (module docstring)
        self._document = pn.state.curdoc  # the session's document (its loop runs the list's pushes), None outside
        self.packets = PacketList(self.index, badge=_list_badge, on_choose=self._choose)
        self.pairs = PairMode(self.index, self.packets, export_dir, on_change=self._on_pair)
        self.replays = ReplayMode(self.index, self.packets, export_dir, on_change=self._on_replay)
        self.campaigns = CampaignMode(
            self.index, self.packets, export_dir, on_change=self._on_campaign, on_pair=self._open_pair
        )
        self.sidebar = pn.Column(
            self.pairs.sidebar,
            self.replays.sidebar,
            self.campaigns.sidebar,
            self.packets.panel,
            sizing_mode="stretch_width",
        )
        self._single = pn.Column(  # the open packet's views, hidden while a pair is shown
            self.tab_bar, self._view_holder, sizing_mode="stretch_width"
        )
        # The pair, replay and campaign areas join the page when one is first shown (_on_mode), before _single.
        self.main = pn.Column(
            self._query_writer,
            pn.Row(self._status, self._export_button, sizing_mode="stretch_width"),
            self._single,
            sizing_mode="stretch_width",
        )
        self.tab_bar.param.watch(self._on_active, "active")
        self._export_button.on_click(self._on_export)
        self._initial_query = session_query()
        self.packets.start()
        # A link naming its packet, or a list that knows every status already, opens before the first paint: views
        # and URL changed from an onload callback were lost on about one page load in three. Otherwise the first
        # packet by status and ratio opens when the list is filled (pushed through the session's own loop).
        if self._names_listed_packet(self._initial_query) or self.packets.filled:
            self._open_requested()
        self.packets.param.watch(self._on_filled, "filled")
        self.param.watch(self._on_packet, "packet")
        self.param.watch(self._on_tab, "tab")
        self.param.watch(self._on_head, "head")

    # ------------------------------------------------------------ packet list

    @property
    def entries(self) -> tuple[catalog.Entry, ...]:
        """The packets listed now (the list rescans its root while the session lasts)."""
        return self.index.entries

    def _analysis(self, entry: catalog.Entry) -> Analysis:
        """The packet analyzed now: admission re-reads and re-hashes its files on every call (explorer.analyze
        reuses numerics only for the same verified content); nothing is kept by name."""
        return analyze(entry.path)

    @one_at_a_time
    def _choose(self, name: str) -> None:
        if name == self.packet:  # choosing the open packet again reads it again
            self._say(" ".join(self._open()))
        self.packet = name

    # ------------------------------------------------------------ URL query

    def _open_from_query(self, search: str) -> None:
        query = dict(parse_qsl(search.lstrip("?"), errors=URL_ERRORS))
        notes = []
        name = query.get(QUERY_PACKET)
        if name is not None and catalog.lookup(self.entries, name) is None:
            notes.append(f"Packet &quot;{echo(name)}&quot; is not listed under this root; it was ignored.")
            name = None
        tab = query.get(QUERY_TAB, SLUGS[0])
        if tab not in SLUGS:
            notes.append(f"Tab &quot;{echo(tab)}&quot; does not exist; showing {TITLES[SLUGS[0]]}.")
            tab = SLUGS[0]
        self._head_asked = QUERY_HEAD in query  # else the packet opens on its worst head
        head = query.get(QUERY_HEAD, "0")
        if HEAD_PATTERN.fullmatch(head) is None:
            notes.append(
                f"Head &quot;{echo(head)}&quot; is not a head number; showing the head with the largest score."
            )
            head, self._head_asked = "0", False
        self._emulation, problems = settings_from_query(query)
        notes += [
            f"{name} &quot;{echo(text)}&quot; is not {html.escape(accepts)}; using its default."
            for name, text, accepts in problems
        ]
        with param.parameterized.discard_events(self):
            self.tab, self.head = tab, int(head)
        self.tab_bar.active = self.tab
        if name is None and self.packets.filled:
            name = self.packets.first_in_order()  # the list's first row; else opened once filled
        if name is not None:
            with param.parameterized.discard_events(self):
                self.packet = name
            notes += self._open()
        notes += self.pairs.from_query(query.get(QUERY_COMPARE))
        notes += self.replays.from_query(query.get(QUERY_REPLAY))
        notes += self.campaigns.from_query(query.get(QUERY_CAMPAIGN), query.get(QUERY_CELL))
        self._say(" ".join(notes))

    def _push_url(self) -> None:
        query = {QUERY_PACKET: self.packet, QUERY_TAB: self.tab, QUERY_HEAD: str(self.head)}
        if self._selection is not None and self._selection.element is not None:
            query[QUERY_ELEMENT] = "{},{}".format(*self._selection.element)
        query.update((name, str(value)) for name, value in self._emulation.items())
        query.update(self.pairs.query())
        query.update(self.replays.query())
        query.update(self.campaigns.query())
        self._query_writer.query = "?" + urlencode(query, errors=URL_ERRORS)

    @one_at_a_time
    def _on_pair(self) -> None:
        """A pair opened or closed: an open replay run gives way to it (one view beside the packet at a time)."""
        if self.pairs.partner:
            self.replays.close(notify=False)
        else:
            self.campaigns.leave()
        self._on_mode()

    @one_at_a_time
    def _on_replay(self) -> None:
        """A replay run opened or closed: an open pair gives way to it (one view beside the packet at a time)."""
        if self.replays.run:
            self.pairs.close(notify=False)
        self._on_mode()

    @one_at_a_time
    def _on_campaign(self) -> None:
        """A campaign's grid opened or closed: an open pair or replay run gives way to it."""
        if self.campaigns.shown:
            self.pairs.close(notify=False)
            self.replays.close(notify=False)
        self._on_mode()

    @one_at_a_time
    def _open_pair(self, a: str, b: str) -> list[str]:
        """Open the pair (a, b) of a campaign's cell: packet a, then b as its partner; returns notes."""
        if self.packet != a:  # opened here: the URL's campaign is opened before the packet watcher exists
            with param.parameterized.discard_events(self):
                self.packet = a
            self._say(" ".join(self._open()))
        return self.pairs.open(b)

    def _on_mode(self) -> None:
        """A pair, a replay run or a campaign opened or closed: its area joins the page when first shown, the single
        packet's views hide while one is shown; the URL follows."""
        for area in (self.pairs.panel, self.replays.panel, self.campaigns.panel):
            if area.visible and area not in self.main.objects:
                self.main.insert(self.main.objects.index(self._single), area)
        self._single.visible = self._export_button.visible = not (
            self.pairs.partner or self.replays.run or self.campaigns.shown
        )
        self._push_url()

    def _say(self, message_html: str, *, append: bool = False) -> None:
        """Show `message_html` as the note above the status line ('' removes it); `append` adds it below the last."""
        note = f'<div class="shell-message" style="{MESSAGE_STYLE}">{message_html}</div>' if message_html else ""
        self._message_html = self._message_html + note if append else note
        self._draw_status()

    def _draw_status(self) -> None:
        self._status.object = self._message_html + self._status_html

    # ------------------------------------------------------------ opening

    def _current(self) -> tuple[Analysis, list[str]]:
        """The open packet analyzed again now, with a note when its files changed since this session showed it."""
        analysis = self._analysis(catalog.lookup(self.entries, self.packet))
        before, self._seen[self.packet] = self._seen.get(self.packet), content_seen(analysis)
        if before is None or before == self._seen[self.packet]:
            return analysis, []
        return analysis, [
            f"The files of {shown_name(self.packet)} changed since this session last showed it; "
            f"this is its status now: {analysis.status}."
        ]

    def _open(self) -> list[str]:
        """Show self.packet (one message to the browser); returns notes about the request for the message line."""
        analysis, notes = self._current()
        with pn.io.hold():
            return notes + self._show(analysis)

    def _show(self, analysis: Analysis) -> list[str]:
        """Fresh selection, empty tabs, then the active tab built."""
        self._shown = analysis
        self.packets.highlight(self.packet)
        notes = []
        worst = ranked_heads(analysis.numerics)[0] if analysis.numerics is not None else 0  # the largest score
        if not self._head_asked:
            with param.parameterized.discard_events(self):
                self.head = worst
        self._head_asked = False
        geometry = analysis.admission.geometry
        if geometry is not None and self.head >= geometry["queryHeads"]:
            notes.append(
                f"Head {self.head} is not a query head of this packet "
                f"(0..{geometry['queryHeads'] - 1}); showing head {worst}, the one with the largest score."
            )
            with param.parameterized.discard_events(self):
                self.head = worst
        self._selection = Selection(head=self.head)
        self._selection.param.watch(self._on_selection_head, "head")
        self._selection.param.watch(self._on_selection_element, "element")
        self._selection.param.watch(self._on_selection_tab, "tab")
        self._selection.emulation = self._emulation
        self._selection.param.watch(self._on_selection_emulation, "emulation")
        if self._element_box is not None:
            self._element_box.visible = False
        summary = catalog.summarize(analysis)
        self._status_html = (
            f'<div class="status-line" data-packet="{shown_name(self.packet)}" style="{STATUS_LINE_STYLE}">'
            f"<b>{shown_name(self.packet)}</b>"
            f"{badge_html(summary, 'status-badge', None if analysis.score is None else analysis.score.heads)}</div>"
        )
        self._draw_status()
        self._on_status(self.packet)
        if self._export_note is not None:
            self._export_note.object = ""
            self._downloads.clear()
        self._views = {}
        self._view_holder.param.update(objects=[], css_classes=[])
        self._build(self.tab)
        self.pairs.show_packet(self.packet)
        self.replays.show_packet(self.packet)
        self.campaigns.leave()
        self._on_mode()
        return notes

    def _build(self, slug: str) -> None:
        """Show `slug`'s view (built once per packet, kept while the packet is open) in the view holder, which
        carries `view-{slug}` and `view-built-{slug}` (the browser tests and benchmarks find the open view by them)."""
        if self._view_holder.objects and self._shown_slug() == slug:
            return
        view = self._views.get(slug)
        if view is None:
            try:
                view = BUILDERS[slug](self._shown, self._selection)
            except Exception as error:  # a programming error in a view must not take the other tabs down
                log.exception("view %s raised for packet %s", slug, self.packet)
                view = pn.pane.HTML(
                    f'<div class="view-error">The {html.escape(TITLES[slug])} view could not be '
                    f"built: {html.escape(type(error).__name__)}: {html.escape(str(error))}</div>"
                )
            self._views[slug] = view
        self._view_holder.param.update(objects=[view], css_classes=[f"view-{slug}", f"view-built-{slug}"])

    def _shown_slug(self) -> str | None:
        """The slug of the view in the holder, None while it holds none."""
        built = [name for name in self._view_holder.css_classes if name.startswith("view-built-")]
        return built[0].removeprefix("view-built-") if built else None

    # ------------------------------------------------------------ watchers

    @one_at_a_time
    def _on_packet(self, event: param.parameterized.Event) -> None:
        if catalog.lookup(self.entries, event.new) is None:
            self._say(f"Packet &quot;{echo(event.new)}&quot; is not listed under this root; it was ignored.")
            with param.parameterized.discard_events(self):
                self.packet = event.old
            return
        self._say(" ".join(self._open()))

    def _names_listed_packet(self, search: str) -> bool:
        """True when the URL query's `packet=` names a packet listed under this root."""
        name = dict(parse_qsl(search.lstrip("?"), errors=URL_ERRORS)).get(QUERY_PACKET)
        return name is not None and catalog.lookup(self.entries, name) is not None

    def _on_filled(self, *_event) -> None:
        """The list knows every status (pushed on the session's loop): open what the URL asks for. A packet being
        opened on a callback thread holds the session's lock; rather than stall the server's loop (every session's)
        until it is done, try again RETRY_OPEN_MS later."""
        if not self._busy.acquire(blocking=self._document is None):  # outside a session: no loop to stall
            self._document.add_timeout_callback(self._on_filled, RETRY_OPEN_MS)
            return
        try:
            self._open_requested()
        finally:
            self._busy.release()

    @one_at_a_time
    def _open_requested(self, *_event) -> None:
        """Open what the URL asks for; without ?packet=, the first by status and ratio once the list is filled."""
        if not self.packet:
            self._open_from_query(self._initial_query)
            if self.packet:
                self._element_from_query(self._initial_query)

    @one_at_a_time
    def _on_active(self, event: param.parameterized.Event) -> None:
        if event.new in SLUGS:
            self.tab = event.new
        else:  # not a label the bar was given: put the open one back
            self.tab_bar.active = self.tab

    @one_at_a_time
    def _on_tab(self, event: param.parameterized.Event) -> None:
        with pn.io.hold():
            self.tab_bar.active = event.new
            if self.packet:
                self._build(event.new)
                self._push_url()

    @one_at_a_time
    def _on_head(self, event: param.parameterized.Event) -> None:
        if self._selection is not None:
            self._selection.head = event.new
        self._push_url()

    @one_at_a_time
    def _on_selection_head(self, event: param.parameterized.Event) -> None:
        self.head = event.new

    @one_at_a_time
    def _on_selection_tab(self, event: param.parameterized.Event) -> None:
        if event.new in SLUGS:
            self.tab = event.new

    @one_at_a_time
    def _on_selection_emulation(self, event: param.parameterized.Event) -> None:
        self._emulation = event.new
        self._push_url()

    @one_at_a_time
    def _on_selection_element(self, event: param.parameterized.Event) -> None:
        """Show the element panel of the clicked (head, channel) and write it into the URL."""
        with pn.io.hold():
            if event.new is not None and self._element_box is None:
                self._make_element_dock()
            if self._element_box is not None:
                self._element_box[0].object = "" if event.new is None else element_html(self._shown, *event.new)
                self._element_box.visible = event.new is not None
            self._push_url()

    def _make_element_dock(self) -> None:
        """The element panel with its Close button, docked over the bottom of the window: opening it moves nothing on
        the page (the clicked map stays put)."""
        panel = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["element-panel-pane"])
        close = pn.widgets.Button(label="Close element", color="light", width=130, css_classes=["element-close"])
        close.on_click(lambda _event: self.close_element())
        self._element_box = pn.Row(panel, close, visible=False, styles=ELEMENT_DOCK_STYLE, css_classes=["element-dock"])
        self._single.insert(0, self._element_box)

    # ------------------------------------------------------------ element query

    def _element_from_query(self, search: str) -> None:
        """Select the element named by `element=` in the URL query, or add a note saying why it was ignored."""
        value = dict(parse_qsl(search.lstrip("?"), errors=URL_ERRORS)).get(QUERY_ELEMENT)
        if value is None or not self.packet or self._selection is None:
            return
        problem = self._select_element(value)
        if not problem:
            return
        self._say(f"Element &quot;{echo(value)}&quot; {problem}; it was ignored.", append=True)

    def _select_element(self, value: str) -> str:
        """Select element `value` ('H,C' or a flat index); returns what is wrong with it, or '' when selected."""
        try:
            first, second = parse_index(value)
        except ValueError:
            return "is not H,C (query head, channel) or a flat index"
        tensors = self._shown.admission.tensors
        if tensors is None:
            return "cannot be shown: this packet's tensors did not verify"
        heads, channels = tensors["output"].shape[1], tensors["output"].shape[3]
        try:
            position = locate(heads, channels, first, second)
        except IndexError as error:
            return f"is outside the output ({html.escape(str(error))})"
        self._selection.element = position
        return ""

    # ------------------------------------------------------------ export

    def _on_export(self, _event) -> None:
        """Export the open packet as its files are now (explorer.ui.exporting runs it off the event loop)."""
        if not self.packet:
            return
        name, head = self.packet, self.head

        def work() -> tuple[Analysis, list[str], ExportPaths]:
            analysis, notes = self._current()  # the numbers of the files on disk now
            return analysis, notes, write_report(analysis, self.export_dir, name=name, head=head)

        def finish(result: tuple[Analysis, list[str], ExportPaths]) -> None:
            analysis, notes, paths = result
            with self._busy:
                if notes and name == self.packet:
                    with pn.io.hold():
                        self._say(" ".join(notes + self._show(analysis)))
                self._offer(paths)

        if self._export_note is None:  # the note and downloads join the page at its first export
            self._export_note = pn.pane.HTML("", sizing_mode="stretch_width")
            self._downloads = Downloads("packet-downloads")
            self._single.insert(0, pn.Column(self._downloads.panel, self._export_note, sizing_mode="stretch_width"))
        run_export(
            self._export_button,
            self._export_note,
            what="Export",
            busy=EXPORT_BUSY,
            export_dir=self.export_dir,
            work=work,
            finish=finish,
        )

    def _offer(self, paths: ExportPaths) -> None:
        self._downloads.offer(((paths.html, "Download HTML"), (paths.report, "Download JSON report")))
        self._export_note.object = written_note(
            "export-note",
            (("export-html", paths.html), ("export-json", paths.report), *(("export-png", png) for png in paths.pngs)),
        )

    # ------------------------------------------------------------ what a page does, for callers without a browser

    @one_at_a_time
    def open_url(self, search: str) -> None:
        """Open what the URL query `search` (e.g. "?packet=NAME&tab=errors&element=3,7") names, as a page loaded
        with it does."""
        self._open_from_query(search)
        if self.packet:
            self._element_from_query(search)

    @one_at_a_time
    def choose(self, name: str) -> None:
        """Choose the packet `name` in the list, as a click on its row does (the open packet is read again)."""
        self._choose(name)

    def export(self) -> None:
        """Export the open packet, as the Export button does."""
        self._on_export(None)

    def close_element(self) -> None:
        """Close the element panel, as its Close button does."""
        if self._selection is not None:
            self._selection.element = None

    @property
    def url_query(self) -> str:
        """The URL query the page shows now ("?packet=...")."""
        return self._query_writer.query

    @property
    def analysis(self) -> Analysis | None:
        """The analysis on screen, None before a packet is open."""
        return self._shown

    @property
    def message(self) -> str:
        """The notes about the last request shown above the status line (HTML), '' when there are none."""
        return self._message_html

    @property
    def status_line(self) -> str:
        """The open packet's status line (HTML), '' before a packet is open."""
        return self._status_html

    @property
    def shown_view(self) -> tuple[str, pn.viewable.Viewable] | None:
        """(slug, view) of the open tab, the one view on the page; None before a packet is open."""
        slug = self._shown_slug()
        return None if slug is None else (slug, self._view_holder.objects[0])

    @property
    def built_views(self) -> dict[str, pn.viewable.Viewable]:
        """The views built for the open packet so far, by slug (each kept while the packet stays open)."""
        return dict(self._views)

    @property
    def single_shown(self) -> bool:
        """True while the single packet's views are shown (no pair, replay run or campaign open)."""
        return self._single.visible

    @property
    def exporting(self) -> bool:
        """True while an Export runs (its button shows it is busy)."""
        return self._export_button.loading

    @property
    def export_note(self) -> str:
        """What the last Export said (HTML): the files written, or why nothing was; '' before one."""
        return "" if self._export_note is None else self._export_note.object

    @property
    def offered_downloads(self) -> list[tuple[str, str]]:
        """(label, file) of each download the last Export offered."""
        return [] if self._downloads is None else [(button.label, button.file) for button in self._downloads.offered]

    @property
    def element_panel(self) -> str | None:
        """The element panel's HTML while it is shown, '' while it is closed, None before one was first opened."""
        if self._element_box is None:
            return None
        return self._element_box[0].object if self._element_box.visible else ""

    @property
    def selection(self) -> Selection | None:
        """The views' shared selection (head, element, tab) of the open packet; None before one is open."""
        return self._selection


def open_session(
    root: Path,
    export_dir: Path,
    on_status: Callable[[str], None] = lambda packet: None,
) -> tuple[pn.viewable.Viewable, pn.viewable.Viewable]:
    """(sidebar, main) of one browser session's Shell (`on_status` as for Shell); when the session cannot be set up
    at all (a root that cannot be listed, say), a one-line note naming the root and the error instead of a blank
    page."""
    try:
        shell = Shell(root, export_dir, on_status=on_status)
    except Exception as error:  # whatever it is, every session would otherwise get an empty page
        log.exception("the session could not be set up for root %s", root)
        reason = error.strerror if isinstance(error, OSError) and error.strerror else f"{type(error).__name__}: {error}"
        note = (
            f'<div class="shell-message session-failed" style="{MESSAGE_STYLE}">The packets under '
            f"<code>{shown_name(clip(str(root)))}</code> could not be listed: {shown_name(clip(reason))}. "
            "Fix the root (or its permissions) and reload the page.</div>"
        )
        return pn.Column(sizing_mode="stretch_width"), pn.pane.HTML(note, sizing_mode="stretch_width")
    return shell.sidebar, shell.main
