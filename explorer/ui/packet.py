"""The single-packet mode: status line, the views as tabs, the element panel and the Export.

Computes no numbers and opens only listed packets. A view is built when its tab opens, the export's note and
downloads when first used. URL parameters: `packet`, `tab`, `head`, `element` and the Emulations view's settings.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from functools import partial

import panel as pn
import param

from explorer.analysis.analyze import analyze
from explorer.analysis.element import locate, parse_index
from explorer.analysis.ranking import ranked_heads
from explorer.analysis.result import Analysis
from explorer.export.files import ExportPaths
from explorer.export.pages import export_packet
from explorer.foundations.formatting import short_number
from explorer.ui import catalog
from explorer.ui.area import Downloads, button, export_written, view_error
from explorer.ui.batch import one_message
from explorer.ui.mode import Context, one_at_a_time
from explorer.ui.shared import content_seen, echo
from explorer.ui.tabbar import TabBar
from explorer.views import VIEWS, Selection
from explorer.views.packet.element import element_html
from explorer.views.packet.emulations import settings_from_query
from explorer.views.shared.markup import esc, status_badge

log = logging.getLogger(__name__)

SLUGS = tuple(slug for slug, _, _ in VIEWS)
TITLES = {slug: title for slug, title, _ in VIEWS}
BUILDERS = {slug: builder for slug, _, builder in VIEWS}
BACKGROUND_VIEWS = ("emulations",)  # views whose builder takes the session's runner (they ask the core through it)
QUERY_PACKET, QUERY_TAB, QUERY_HEAD = "packet", "tab", "head"
QUERY_ELEMENT = "element"  # `element=H,C` (query head, channel) or `element=N` (flat index over [QH, D])
HEAD_PATTERN = re.compile(r"[0-9]{1,6}")  # ASCII digits only: str.isdigit() also accepts '²', which int() refuses
SCORE_TITLE = (
    "score: the largest |output - primary reference| / allowance over the compared heads (allowance: half "
    "the output dtype's spacing plus the head's FP64 noise floor; docs/report.md)"
)
EXPORT_LABEL, EXPORT_WIDTH = "Export HTML + PNG + JSON + findings.md", 300
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
BADGE_STYLE = "padding:0 0.5em;font-size:0.85em;margin-right:0.5em;"  # the list's chip: smaller than a view's
META_STYLE = "font-size:0.85em;color:#444444"
# Each part of the status line is its own box, so a long list of codes wraps below, never over, the name and chip.
STATUS_LINE_STYLE = "display:flex;flex-wrap:wrap;align-items:baseline;gap:0.2em 0.6em"
MESSAGE_STYLE = "padding:0.4em 0.8em;border-left:4px solid #8a8a8a;background:#f3f3f3"


def list_badge(status: str) -> str:
    """The packet list's chip of a status."""
    return badge_html(catalog.Summary("", status, (), None, None, None, None, None, None), "packet-badge")


def badge_html(summary: catalog.Summary, css_class: str, heads: int | None = None) -> str:
    """A neutral status chip with the packet's score when it has one, then the heads not compared and the codes."""
    score = "" if summary.score is None else f" &middot; score {esc(short_number(summary.score))}"
    badge = status_badge(summary.status, css_class=css_class, text=score, title=SCORE_TITLE, style=BADGE_STYLE)
    details = list(summary.codes)
    if summary.heads_not_compared:
        of = "" if heads is None else f" of {heads}"
        details.insert(0, f"{summary.heads_not_compared}{of} heads not compared")
    return f'{badge}<span class="packet-meta" style="{META_STYLE}">{esc(", ".join(details))}</span>'


class PacketMode(param.Parameterized):
    """The open packet, tab and head (mirrored in the URL) with the message and status line above them."""

    QUERY = QUERY_PACKET
    packet = param.String(default="", doc="Name of the open packet, one of the listed names.")
    tab = param.Selector(objects=list(SLUGS), default=SLUGS[0], doc="Slug of the open view.")
    head = param.Integer(default=0, bounds=(0, None), doc="Selected query head.")

    def __init__(self, context: Context, on_status: Callable[[str], None], **params):
        super().__init__(**params)
        self.context, self.lock, self._on_status = context, context.lock, on_status
        self.sidebar = context.packets.panel
        self._seen: dict[str, tuple] = {}  # packet name -> content_seen of what this session last showed
        self._shown: Analysis | None = None  # the analysis on screen
        self._selection: Selection | None = None
        self._emulation: dict[str, object] = {}  # the Emulations view's non-default parameters, by URL name
        self._head_asked = False  # the URL named the head: the packet opens on it, not on its worst head
        self.message = ""  # notes about the last request, above the status line in the same pane
        self.status_line = ""
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        self._element_box: pn.Row | None = None  # the element dock, made when an element is first selected
        self.tab_bar = TabBar(tabs=[[slug, TITLES[slug]] for slug in SLUGS], active=self.tab, margin=(0, 5))
        self._view_holder = pn.Column(sizing_mode="stretch_width")  # the open tab's view, the only one on the page
        self._views: dict[str, pn.viewable.Viewable] = {}  # slug -> view of the shown packet, built on first open
        self.export_button = button(EXPORT_LABEL, EXPORT_WIDTH, "packet-export", self.export, color="primary")
        self._export_note: pn.pane.HTML | None = None  # made with the downloads at the first export
        self._downloads: Downloads | None = None
        self.panel = pn.Column(self.tab_bar, self._view_holder, sizing_mode="stretch_width")
        self.tab_bar.param.watch(self._on_active, "active")
        self.param.watch(self._on_packet, "packet")
        self.param.watch(self._on_tab, "tab")
        self.param.watch(self._on_head, "head")

    def say(self, message_html: str, *, append: bool = False) -> None:
        """Show `message_html` as the note above the status line ('' removes it); `append` adds it below the last."""
        note = f'<div class="shell-message" style="{MESSAGE_STYLE}">{message_html}</div>' if message_html else ""
        self.message = self.message + note if append else note
        self.status.object = self.message + self.status_line

    def reveal(self, shown: bool) -> None:
        """Show (or hide, while another mode is shown) the views and the Export button; the open tab's view is built
        when first shown (a packet opened under a campaign cell's pair draws nothing until it is)."""
        self.panel.visible = self.export_button.visible = shown
        if shown and self._shown is not None:
            self._build(self.tab)

    def open(self, name: str) -> list[str]:
        """Open the listed packet `name` now (read again when it is the open one); returns notes."""
        if catalog.lookup(self.context.index.entries, name) is None:
            return [f"Packet &quot;{echo(name)}&quot; is not listed under this root; it was ignored."]
        with param.parameterized.discard_events(self):
            self.packet = name
        return self._open()

    def from_query(self, query: Mapping[str, str]) -> list[str]:
        """Open the packet, tab, head and emulation settings the URL query names (else the list's first packet)."""
        notes = []
        name = query.get(QUERY_PACKET)
        if name is not None and catalog.lookup(self.context.index.entries, name) is None:
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
            f"{name} &quot;{echo(text)}&quot; is not {esc(accepts)}; using its default."
            for name, text, accepts in problems
        ]
        with param.parameterized.discard_events(self):
            self.tab, self.head = tab, int(head)
        self.tab_bar.active = self.tab
        if name is None and self.context.packets.filled:
            name = self.context.packets.first_in_order()  # the list's first row; else opened once filled
        return notes + ([] if name is None else self.open(name))

    def query(self) -> dict[str, str]:
        """The URL query parameters of the open packet, tab, head, element and emulation settings."""
        query = {QUERY_PACKET: self.packet, QUERY_TAB: self.tab, QUERY_HEAD: str(self.head)}
        if self._selection is not None and self._selection.element is not None:
            query[QUERY_ELEMENT] = "{},{}".format(*self._selection.element)
        query.update((name, str(value)) for name, value in self._emulation.items())
        return query

    def close(self, notify: bool = True) -> None:
        """The packet stays open under another mode: nothing to drop."""

    def follow(self, packet: str) -> None:
        """The packet mode opens packets itself."""

    def _current(self) -> tuple[Analysis, list[str]]:
        """The open packet analyzed again now, with a note when its files changed since this session showed it."""
        analysis = analyze(catalog.lookup(self.context.index.entries, self.packet).path)
        before, self._seen[self.packet] = self._seen.get(self.packet), content_seen(analysis)
        if before is None or before == self._seen[self.packet]:
            return analysis, []
        return analysis, [
            f"The files of {esc(self.packet)} changed since this session last showed it; "
            f"this is its status now: {analysis.status}."
        ]

    def _open(self) -> list[str]:
        analysis, notes = self._current()
        with one_message():
            return notes + self._show(analysis)

    def _show(self, analysis: Analysis) -> list[str]:
        self._shown = analysis
        self.context.packets.highlight(self.packet)
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
        self._selection = Selection(head=self.head, emulation=self._emulation)
        self._selection.param.watch(self._on_selection_head, "head")
        self._selection.param.watch(self._on_selection_element, "element")
        self._selection.param.watch(self._on_selection_tab, "tab")
        self._selection.param.watch(self._on_selection_emulation, "emulation")
        if self._element_box is not None:
            self._element_box.visible = False
        summary = catalog.summarize(analysis)
        heads = None if analysis.score is None else analysis.score.heads
        self.status_line = (
            f'<div class="status-line" data-packet="{esc(self.packet)}" style="{STATUS_LINE_STYLE}">'
            f"<b>{esc(self.packet)}</b>{badge_html(summary, 'status-badge', heads)}</div>"
        )
        self.status.object = self.message + self.status_line
        self._on_status(self.packet)
        if self._export_note is not None:
            self._export_note.object = ""
            self._downloads.clear()
        self._views = {}
        self._view_holder.param.update(objects=[], css_classes=[])
        if self.panel.visible:
            self._build(self.tab)
        self.context.shown(self)
        return notes

    def _build(self, slug: str) -> None:
        """Show `slug`'s view (built once per packet) in the holder, marked `view-{slug}` and `view-built-{slug}`."""
        if self._view_holder.objects and self._shown_slug() == slug:
            return
        view = self._views.get(slug)
        if view is None:
            builder = BUILDERS[slug]
            if slug in BACKGROUND_VIEWS:
                builder = partial(builder, runner=self.context.runner)
            try:
                view = builder(self._shown, self._selection)
            except Exception as error:  # a programming error in a view must not take the other tabs down
                log.exception("view %s raised for packet %s", slug, self.packet)
                view = pn.pane.HTML(view_error(f"{TITLES[slug]} view", error))
            self._views[slug] = view
        self._view_holder.param.update(objects=[view], css_classes=[f"view-{slug}", f"view-built-{slug}"])

    def _shown_slug(self) -> str | None:
        built = [name for name in self._view_holder.css_classes if name.startswith("view-built-")]
        return built[0].removeprefix("view-built-") if built else None

    @one_at_a_time
    def _on_packet(self, event: param.parameterized.Event) -> None:
        if catalog.lookup(self.context.index.entries, event.new) is None:
            self.say(f"Packet &quot;{echo(event.new)}&quot; is not listed under this root; it was ignored.")
            with param.parameterized.discard_events(self):
                self.packet = event.old
            return
        self.say(" ".join(self._open()))

    @one_at_a_time
    def _on_active(self, event: param.parameterized.Event) -> None:
        if event.new in SLUGS:
            self.tab = event.new
        else:  # not a label the bar was given: put the open one back
            self.tab_bar.active = self.tab

    @one_at_a_time
    def _on_tab(self, event: param.parameterized.Event) -> None:
        with one_message():
            self.tab_bar.active = event.new
            if self.packet:
                if self.panel.visible:
                    self._build(event.new)
                self.context.changed()

    @one_at_a_time
    def _on_head(self, event: param.parameterized.Event) -> None:
        if self._selection is not None:
            self._selection.head = event.new
        self.context.changed()

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
        self.context.changed()

    @one_at_a_time
    def _on_selection_element(self, event: param.parameterized.Event) -> None:
        """Show the element panel of the clicked (head, channel) and write it into the URL."""
        with one_message():
            if event.new is not None and self._element_box is None:
                self._make_element_dock()
            if self._element_box is not None:
                self._element_box[0].object = "" if event.new is None else element_html(self._shown, *event.new)
                self._element_box.visible = event.new is not None
            self.context.changed()

    def _make_element_dock(self) -> None:
        """The element panel and its Close button, docked over the window's bottom (the clicked map stays put)."""
        panel = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["element-panel-pane"])
        close = button("Close element", 130, "element-close", self.close_element)
        self._element_box = pn.Row(panel, close, visible=False, styles=ELEMENT_DOCK_STYLE, css_classes=["element-dock"])
        self.panel.insert(0, self._element_box)

    def element_from_query(self, query: Mapping[str, str]) -> None:
        """Select the element named by `element=` in the URL query, or add a note saying why it was ignored."""
        value = query.get(QUERY_ELEMENT)
        if value is None or not self.packet or self._selection is None:
            return
        problem = self._select_element(value)
        if problem:
            self.say(f"Element &quot;{echo(value)}&quot; {problem}; it was ignored.", append=True)

    def _select_element(self, value: str) -> str:
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
            return f"is outside the output ({esc(error)})"
        self._selection.element = position
        return ""

    def close_element(self) -> None:
        """Close the element panel, as its Close button does."""
        if self._selection is not None:
            self._selection.element = None

    # ------------------------------------------------------------ export

    def export(self) -> None:
        """Export the open packet as its files are now (through the session's runner, off the event loop)."""
        if not self.packet:
            return
        name, head = self.packet, self.head
        emulation = dict(self._selection.emulation) if self._selection is not None else {}  # the view's set

        def work() -> tuple[Analysis, list[str], ExportPaths]:
            analysis, notes = self._current()  # the numbers of the files on disk now
            paths = export_packet(
                analysis, self.context.export_dir, name=name, head=head, emulation=emulation, png=True
            )
            return analysis, notes, paths

        def finish(result: tuple[Analysis, list[str], ExportPaths]) -> None:
            analysis, notes, paths = result
            with self.lock:
                if notes and name == self.packet:
                    with one_message():
                        self.say(" ".join(notes + self._show(analysis)))
                self._downloads.offer_export(paths, "Download JSON report")
                self._export_note.object = export_written("export-note", paths)

        if self._export_note is None:  # the note and downloads join the page at its first export
            self._export_note = pn.pane.HTML("", sizing_mode="stretch_width")
            self._downloads = Downloads("packet-downloads")
            self.panel.insert(0, pn.Column(self._downloads.panel, self._export_note, sizing_mode="stretch_width"))
        self.context.runner.export(
            self.export_button,
            self._export_note,
            what="Export",
            busy=EXPORT_BUSY,
            export_dir=self.context.export_dir,
            work=work,
            finish=finish,
        )

    analysis = property(lambda self: self._shown, doc="The analysis on screen, None before a packet is open.")
    selection = property(lambda self: self._selection, doc="The views' shared selection (head, element, tab), or None.")
    built_views = property(lambda self: dict(self._views), doc="The views built for the open packet so far, by slug.")

    @property
    def shown_view(self) -> tuple[str, pn.viewable.Viewable] | None:
        """(slug, view) of the open tab, the one view on the page; None before a packet is open."""
        slug = self._shown_slug()
        return None if slug is None else (slug, self._view_holder.objects[0])

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
