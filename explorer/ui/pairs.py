"""The app's pair mode: the open packet's partners and the pair view (`?packet=A&compare=B`).

Computes no numbers and opens only listed packets.
"""

from __future__ import annotations

import param

from explorer.export.files import ExportPaths
from explorer.export.pages import export_pair
from explorer.foundations.bounded import escaped_bytes
from explorer.pair.compare import compare
from explorer.pair.model import Pair, SamePacketError
from explorer.ui import catalog
from explorer.ui.area import ListedMode, export_written, first_shown
from explorer.ui.mode import Context
from explorer.ui.shared import content_seen, echo
from explorer.views.shared.markup import esc

QUERY_COMPARE = "compare"
PAIR_STATUS_STYLE = "padding:0.3em 0;font-size:1.05em"
NO_PARTNERS = "No other packet under this root captures the same selection."
PARTNERS_PENDING = "Statuses are still being read: partners appear as their summaries arrive."
EXPORT_LABEL, EXPORT_WIDTH = "Export pair: HTML + PNG + JSON + findings.md", 340
EXPORT_BUSY = "Exporting the pair view (the PNG takes a few seconds) ..."
MAX_PARTNER_BUTTONS = 12  # a root of many captures of one selection lists the first ones; compare= opens any


class PairMode(ListedMode):
    """The partner list of `packet` and, while `partner` is set, the pair view of (packet, partner)."""

    OPENED, QUERY, WHAT = "partner", QUERY_COMPARE, "Compare"
    packet = param.String(default="", doc="The open packet (side a of a pair).")
    partner = param.String(default="", doc="The packet compared with it (side b), '' when no pair is open.")

    def __init__(self, context: Context, **params):
        classes = ("partner-note", "pair-partners", "partner-problem")
        super().__init__(context, "pair", classes, (EXPORT_LABEL, EXPORT_WIDTH), **params)
        self._emulate: str | None = None  # the emulation set the pair view computed, carried by its export
        context.packets.param.watch(lambda _event: self.list_partners(), "filled")

    partner_note = property(lambda self: self._note.object, doc="The sidebar's note above the partner buttons.")

    def follow(self, packet: str) -> None:
        """A packet was opened: list its partners (the shell closed any pair)."""
        self.packet = packet
        self.list_partners()

    def list_partners(self) -> None:
        """The open packet's partners as buttons (one click opens the pair), or why there are none."""
        if not self.packet:
            return
        names = self.index.partners(self.packet)
        pending = "" if self.index.complete else f"<br>{PARTNERS_PENDING}"
        pending += first_shown(len(names), MAX_PARTNER_BUTTONS, "compare=NAME")
        lead = f" ({len(names)})" if names else f': <span class="no-partners">{NO_PARTNERS}</span>'
        a = escaped_bytes(self.packet)
        self._list(
            f'<div class="partner-note-text" data-partners="{len(names)}" style="font-size:0.9em" '
            f'title="Packets of the same selection as {esc(self.packet)}: one click compares it (a) with one (b)">'
            f"<b>Pairs</b>{lead}{pending}</div>",
            (
                (name, escaped_bytes(name), f"Compare {a} (a) with {escaped_bytes(name)} (b)", ["partner-button"])
                for name in names[:MAX_PARTNER_BUTTONS]
            ),
            "partner-list",
        )

    def open(self, name: str) -> list[str]:
        """Open the pair (packet, name), both re-admitted now; returns notes (and shows them when nothing opened)."""
        problem = self._refusal(name)
        if problem:
            return [problem]
        entry_a, entry_b = (catalog.lookup(self.index.entries, n) for n in (self.packet, name))
        try:
            pair = compare(entry_a.path, entry_b.path)
        except SamePacketError as error:
            return [f"Compare &quot;{echo(name)}&quot;: {esc(error)}; it was ignored."]
        self._opened(name, pair)
        return []

    def _refusal(self, name: str) -> str:
        if catalog.lookup(self.index.entries, name) is None:
            return f"Compare &quot;{echo(name)}&quot; is not listed under this root; it was ignored."
        if name == self.packet:
            return f"Compare &quot;{echo(name)}&quot; is the open packet itself; it was ignored."
        return ""

    def _show(self, pair: Pair) -> None:
        from explorer.views.pair.view import build

        self._emulate = None  # a view drawn afresh has computed no emulation yet
        self.area.show(
            f'<div class="pair-status-line" data-a="{esc(self.packet)}" data-b="{esc(self.partner)}" '
            f'data-status="{pair.status}" style="{PAIR_STATUS_STYLE}">Pair <b>a</b> {esc(self.packet)} '
            f"&nbsp;vs&nbsp; <b>b</b> {esc(self.partner)} &nbsp; (pair status: <b>{pair.status}</b>)</div>",
            lambda: build(pair, self.context.runner, self._emulated),
            "pair view",
        )

    def _emulated(self, request: str) -> None:
        self._emulate = request

    pair = property(lambda self: self.shown_result, doc="The pair on screen, None while none is open.")

    def export(self) -> None:
        """Export the open pair as its files are now, with the emulation set its view computed; a pair whose files
        changed since it was shown is drawn again."""
        if self.pair is None:
            return
        names, shown, emulate = (self.packet, self.partner), self.pair, self._emulate
        now: list[Pair] = []  # the pair as its files are now, once the work has read them

        def work() -> ExportPaths:
            now.append(compare(*(catalog.lookup(self.index.entries, n).path for n in names)))
            return export_pair(now[0], self.export_dir, names=names, png=True, emulate=emulate)

        def changed() -> bool:
            return bool(now) and any(
                content_seen(fresh) != content_seen(before)
                for fresh, before in zip((now[0].a, now[0].b), (shown.a, shown.b), strict=True)
            )

        def redraw() -> None:  # also when the export failed: the view shows the files as they are now
            if changed() and self.pair is shown:
                self.shown_result = now[0]
                self._show(now[0])

        def finish(paths: ExportPaths) -> None:
            self.area.downloads.offer_export(paths, "Download comparison JSON")
            self.area.export_note.object = export_written("pair-export-note", paths)
            if changed():
                self.area.export_note.object += (
                    '<div class="pair-changed">The files of this pair changed since it '
                    "was shown; the view and the export show them as they are now.</div>"
                )

        self._export_through_runner("The pair export", EXPORT_BUSY, work, finish, settled=redraw)
