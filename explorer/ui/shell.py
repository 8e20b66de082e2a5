"""The app shell: the modes (packet, pair, replay run, campaign), one shown at a time, and the URL.

Computes no numbers and opens only listed packets. Every mode's area is made when first shown. Every change a
browser asks for runs under one lock per session, in the order the browser asked (explorer.ui.arrival). A mode
that opens tells the shell, which closes the others; adding a mode is one module and one entry of MODES.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import panel as pn

from explorer.catalog.index import PacketIndex
from explorer.export.files import EXPORT_DIR_ENV, choose_export_dir
from explorer.foundations.bounded import clip
from explorer.ui import catalog
from explorer.ui.background import Runner
from explorer.ui.campaigns import CampaignMode
from explorer.ui.mode import Context, Mode, one_at_a_time
from explorer.ui.packet import MESSAGE_STYLE, QUERY_PACKET, PacketMode, list_badge
from explorer.ui.packets import PacketList
from explorer.ui.pairs import PairMode
from explorer.ui.replays import ReplayMode
from explorer.ui.url import QueryWriter, read_query, session_query, write_query
from explorer.views.shared.markup import esc

log = logging.getLogger(__name__)

MODES = (PairMode, ReplayMode, CampaignMode)  # beside the single packet, each listed above the packet list
RETRY_OPEN_MS = 100  # the first packet's opening waits this long for a packet being opened on a thread


def parse_options(argv: Sequence[str], environ: Mapping[str, str] = os.environ) -> tuple[Path, Path]:
    """(packet root, export directory) from `panel serve explorer/app.py --args ...` and the environment."""
    parser = argparse.ArgumentParser(prog="explorer/app.py", add_help=False)
    parser.add_argument("--root", help=f"packet root (default ${catalog.ROOT_ENV} or sample_packets/)")
    parser.add_argument("--export-dir", help=f"where Export writes (default ${EXPORT_DIR_ENV} or ./exports)")
    options, _ = parser.parse_known_args(list(argv))
    return catalog.choose_root(options.root, environ), choose_export_dir(options.export_dir, environ)


class Shell:
    """One browser session: the mode shown (the single packet unless a pair, run or campaign is), in the URL."""

    def __init__(self, root: Path, export_dir: Path, on_status: Callable[[str], None] = lambda packet: None):
        self.root, self.export_dir = root, export_dir
        self.index = PacketIndex(root)  # discovered afresh for every session, and rescanned while it lasts
        self.lock = threading.RLock()  # one change of the page at a time (module docstring)
        self._document = pn.state.curdoc  # the session's document (its loop runs the list's pushes), None outside
        self._opener: Mode | None = None  # the mode opening another one (a campaign its cell's pair): kept open
        self._query_writer = QueryWriter(width=0, height=0, margin=0)
        self._view: tuple | None = None  # the view of the browser's history entry shown (None before the first)
        self._reading = False  # opening what a URL names (a load, Back, Forward): its entry is rewritten once
        self.packets = PacketList(self.index, badge=list_badge, on_choose=self.choose)
        self.runner = Runner()
        context = Context(
            self.index, self.packets, export_dir, self.runner, self.lock, self._shown, self._changed, self._open_pair
        )
        self.single = PacketMode(context, on_status)
        self.modes: tuple[Mode, ...] = (self.single, *(kind(context) for kind in MODES))
        self.mode: Mode = self.single
        self.tab_bar = self.single.tab_bar
        self.pairs, self.replays, self.campaigns = self.modes[1:]
        self.sidebar = pn.Column(
            *(mode.sidebar for mode in self.modes[1:]), self.single.sidebar, sizing_mode="stretch_width"
        )
        self.main = pn.Column(
            self._query_writer,
            pn.Row(self.single.status, self.single.export_button, sizing_mode="stretch_width"),
            self.single.panel,
            sizing_mode="stretch_width",
        )
        self._initial_query = session_query()
        self.packets.start()
        # A named packet or a filled list opens before the first paint (from an onload callback views were lost).
        if self._names_listed_packet(self._initial_query) or self.packets.filled:
            self._open_requested()
        # after the page loaded: Panel drops what opening it changes until then (explorer.ui.background.on_page)
        self.packets.param.watch(lambda _event: self.runner.on_page(self._on_filled), "filled")
        self._query_writer.param.watch(lambda _event: self.visit(self._query_writer.visited), "visits")

    @one_at_a_time
    def _shown(self, mode: Mode | None) -> None:
        """`mode` opened (None: back to the single packet): every other mode closes but its opener."""
        shown = mode or self.single
        for other in self.modes:
            if other is not shown and other is not self._opener:
                other.close(notify=False)
        if mode is self.single:
            for other in self.modes:
                other.follow(self.single.packet)
        self.mode = shown
        self._changed()

    @one_at_a_time
    def _changed(self) -> None:
        """A mode's area joins the page when first shown (above its opener's); the URL follows."""
        for mode in self.modes[1:]:
            if mode.panel.visible and mode.panel not in self.main.objects:
                self.main.insert(self.main.objects.index(self.single.panel), mode.panel)
        if self._opener is not None:
            objects = list(self.main.objects)
            if self._opener.panel in objects and objects.index(self._opener.panel) > objects.index(self.mode.panel):
                objects.remove(self._opener.panel)
                objects.insert(objects.index(self.mode.panel), self._opener.panel)
                self.main.objects = objects
            return  # what shows and the URL follow once the mode opened by another is open
        if not self._reading:  # ... and once every mode a URL names has opened (Shell._open_from_query)
            self._follow(new_entry=True)

    def _follow(self, new_entry: bool) -> None:
        """What shows (a campaign's grid under its own header) and the URL follow the mode shown; `new_entry`: a new
        view's URL is a history entry of its own (else its entry is rewritten: a load, Back, Forward)."""
        self.single.reveal(self.mode is self.single)
        self.single.status.visible = self.mode is not self.campaigns or bool(self.single.message)
        query = {name: value for mode in self.modes for name, value in mode.query().items()}
        view = (type(self.mode).__name__, () if self.mode is self.single else tuple(self.mode.query().items()))
        self._query_writer.push = new_entry and self._view is not None and view != self._view
        self._view = view
        self._query_writer.query = write_query(query)

    @one_at_a_time
    def _open_pair(self, opener: Mode, a: str, b: str) -> list[str]:
        """Open packet a compared with b for `opener` (a campaign's cell), which stays open; returns notes."""
        self._opener = opener
        try:
            if self.single.packet != a:
                self.single.say(" ".join(self.single.open(a)))
            if self.pairs.pair is not None and (self.pairs.packet, self.pairs.partner) == (a, b):
                self._shown(self.pairs)  # the URL's compare= opened it a moment ago: kept, not read and drawn again
                return []
            return self.pairs.open(b)
        finally:
            self._opener = None

    def _open_from_query(self, search: str, *, afresh: bool = False) -> None:
        """Open what the URL query names (`afresh`: from the single packet, as Back does); what shows and the URL's
        entry follow once, when every mode has opened (never a half-opened view's URL, as the packet's on a cell's)."""
        query = read_query(search)
        self._reading = True
        try:
            if afresh:
                self._shown(None)
            # a URL naming another mode opens the packet under it: its view is built only if it shows (reveal)
            self.single.panel.visible = not any(mode.QUERY in query for mode in self.modes[1:])
            notes = [note for mode in self.modes for note in mode.from_query(query)]  # the single packet first
            self.single.say(" ".join(notes))
            if self.single.packet:
                self.single.element_from_query(query)
        finally:
            self._reading = False
            self._follow(new_entry=False)

    def _names_listed_packet(self, search: str) -> bool:
        name = read_query(search).get(QUERY_PACKET)
        return name is not None and catalog.lookup(self.index.entries, name) is not None

    def _on_filled(self, *_event) -> None:
        """On the session's loop, once the list is filled: open what the URL asks for (retried while the lock is held:
        every session's loop would stall)."""
        if not self.lock.acquire(blocking=self._document is None):  # outside a session: no loop to stall
            self._document.add_timeout_callback(self._on_filled, RETRY_OPEN_MS)
            return
        try:
            self._open_requested()
        finally:
            self.lock.release()

    @one_at_a_time
    def _open_requested(self, *_event) -> None:
        if not self.single.packet:
            self._open_from_query(self._initial_query)

    @one_at_a_time
    def open_url(self, search: str) -> None:
        """Open what the URL query `search` ("?packet=NAME&tab=errors&element=3,7") names, as a page load does."""
        self._open_from_query(search)

    @one_at_a_time
    def visit(self, search: str) -> None:
        """Show the history entry of URL query `search`, as Back and Forward do (rewritten, not pushed)."""
        self._open_from_query(search, afresh=True)

    @one_at_a_time
    def choose(self, name: str) -> None:
        """Choose the packet `name` in the list, as a click on its row does (the open packet is read again)."""
        if name == self.single.packet:
            self.single.say(" ".join(self.single.open(name)))
        self.single.packet = name

    url_query = property(lambda self: self._query_writer.query, doc='The URL query the page shows ("?packet=...").')
    url_pushed = property(lambda self: self._query_writer.push, doc="The URL query was a new history entry.")
    single_shown = property(lambda self: self.single.panel.visible, doc="The single packet's views are shown.")


def open_session(
    root: Path, export_dir: Path, on_status: Callable[[str], None] = lambda packet: None
) -> tuple[pn.viewable.Viewable, pn.viewable.Viewable]:
    """(sidebar, main) of one session's Shell, or a note naming the root and the error when it cannot be set up."""
    try:
        shell = Shell(root, export_dir, on_status=on_status)
    except Exception as error:  # whatever it is, every session would otherwise get an empty page
        log.exception("the session could not be set up for root %s", root)
        reason = error.strerror if isinstance(error, OSError) and error.strerror else f"{type(error).__name__}: {error}"
        note = (
            f'<div class="shell-message session-failed" style="{MESSAGE_STYLE}">The packets under '
            f"<code>{esc(clip(str(root)))}</code> could not be listed: {esc(clip(reason))}. "
            "Fix the root (or its permissions) and reload the page.</div>"
        )
        return pn.Column(sizing_mode="stretch_width"), pn.pane.HTML(note, sizing_mode="stretch_width")
    return shell.sidebar, shell.main
