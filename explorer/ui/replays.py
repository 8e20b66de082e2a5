"""The app's replay mode: the runs bound to the open packet and the Replay view with its export.

The app's replay mode: the sidebar's list of replay runs bound to the open packet and the Replay view
(`?packet=NAME&replay=RUN`) with its export; computes no numbers and opens only listed runs of the open
packet.

The partner of the view is the first packet of the same selection captured by another
backend (else any partner), by name; the view says which.
"""

from __future__ import annotations

from collections.abc import Mapping

import panel as pn
import param

from explorer.catalog.discovery import lookup
from explorer.catalog.replays import RunIndex
from explorer.export.files import ExportPaths
from explorer.export.pages import export_replay
from explorer.replay.model import Replay
from explorer.replay.replay import replay
from explorer.ui.area import ModeArea, add_problems, choice_buttons, export_written, first_shown, note_and_buttons
from explorer.ui.mode import Context, one_at_a_time
from explorer.ui.shared import echo
from explorer.views.shared.markup import esc

QUERY_REPLAY = "replay"
REPLAY_STATUS_STYLE = "padding:0.3em 0;font-size:1.05em"
NO_RUNS = "No replay run under this root binds to this packet."
EXPORT_LABEL, EXPORT_WIDTH = "Export replay: HTML + PNG + JSON + findings.md", 350
EXPORT_BUSY = "Exporting the replay view (the PNG takes a few seconds) ..."
MAX_RUN_BUTTONS = 12  # the first runs by name; replay= in the URL opens any other listed run of the packet


class ReplayMode(param.Parameterized):
    """The replay runs of `packet` and, while `run` is set, the Replay view of that run."""

    packet = param.String(default="", doc="The open packet (the runs' source).")
    run = param.String(default="", doc="The replay run shown, '' when none is open.")

    def __init__(self, context: Context, **params):
        super().__init__(**params)
        self.context, self.index, self.export_dir, self.lock = context, context.index, context.export_dir, context.lock
        self.runs = RunIndex(self.index.root)
        self._replay: Replay | None = None
        self._note = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["replay-note"])
        self.sidebar = pn.Column(self._note, sizing_mode="stretch_width", css_classes=["replay-runs"])
        self.area = ModeArea(
            "replay",
            export_label=EXPORT_LABEL,
            export_width=EXPORT_WIDTH,
            on_close=self.close,
            on_export=self.export,
        )
        self.panel = self.area.panel

    # ------------------------------------------------------------ the run list

    def _bound(self) -> tuple[str, ...]:
        entry = lookup(self.index.entries, self.packet)
        return () if entry is None else self.runs.runs_of(entry.path)

    def follow(self, packet: str) -> None:
        """A packet was opened: list the runs bound to it (the shell closed any run)."""
        self.packet = name = packet
        names = self._bound()
        buttons = choice_buttons(
            ((run, run, f"Open the replay run {run} of {name}", ["replay-button"]) for run in names[:MAX_RUN_BUTTONS]),
            self._clicked,
        )
        more = first_shown(len(names), MAX_RUN_BUTTONS, "replay=RUN")
        lead = f" ({len(names)})" if names else f': <span class="no-replays">{NO_RUNS}</span>'
        self._note.object = (
            f'<div class="replay-note-text" data-runs="{len(names)}" style="font-size:0.9em" '
            f'title="Replay runs bound to {esc(name)}: one click opens one">'
            f"<b>Replay runs</b>{lead}{more}</div>"
        )
        self.sidebar.objects = note_and_buttons(self._note, buttons, "replay-list")

    @one_at_a_time
    def _clicked(self, run: str) -> None:
        add_problems(self._note, self.open(run), "replay-problem")

    # ------------------------------------------------------------ the view

    def from_query(self, query: Mapping[str, str]) -> list[str]:
        """Open the run named by `replay=` in the URL query; returns notes about it for the message line."""
        value = query.get(QUERY_REPLAY)
        if value is None:
            return []
        if not self.packet:
            return [f"Replay &quot;{echo(value)}&quot; needs an open packet; it was ignored."]
        return self.open(value)

    def _partner(self) -> str | None:
        """The first partner captured by another backend, else the first partner, by name (None without one)."""
        names = self.index.partners(self.packet)
        mine = self.index.summary(self.packet)
        other = [
            n
            for n in names
            if mine is not None and (s := self.index.summary(n)) is not None and s.backend != mine.backend
        ]
        return (other or list(names) or [None])[0]

    def _compute(self, run: str) -> Replay:
        partner = self._partner()
        return replay(
            lookup(self.runs.entries, run).path,
            packet=lookup(self.index.entries, self.packet).path,
            partner=None if partner is None else lookup(self.index.entries, partner).path,
        )

    def open(self, run: str) -> list[str]:
        """Open the run (re-read now); returns notes (and shows nothing) when it is not a listed run of the packet."""
        if run not in self._bound():
            return [f"Replay &quot;{echo(run)}&quot; is not a listed replay run of {esc(self.packet)}; it was ignored."]
        result = self._compute(run)
        with pn.io.hold():
            self._replay = result
            self.run = run
            self._show(result)
            self.context.shown(self)
        return []

    def _show(self, result: Replay) -> None:
        from explorer.views.replay.view import build

        partner = "none" if result.partner is None else esc(result.report()["partner"]["name"])
        self.area.show(
            f'<div class="replay-status-line" data-packet="{esc(self.packet)}" '
            f'data-run="{esc(self.run)}" data-status="{result.status}" style="{REPLAY_STATUS_STYLE}">'
            f"Replay run <b>{esc(self.run)}</b> of {esc(self.packet)}, partner {partner} "
            f"&nbsp; (replay status: <b>{result.status}</b>)</div>",
            lambda: build(result),
            "replay view",
        )

    def close(self, notify: bool = True) -> None:
        """Back to the single packet: the replay view is dropped and `replay=` leaves the URL."""
        if not self.run:
            return
        with pn.io.hold():
            self._replay = None
            self.run = ""
            self.area.hide()
            if notify:
                self.context.shown(None)

    def query(self) -> dict[str, str]:
        """The URL query parameters of the open run."""
        return {QUERY_REPLAY: self.run} if self.run else {}

    # ------------------------------------------------------------ export

    def export(self) -> None:
        """Export the open run as its files are now (through the session's runner, off the event loop)."""
        if self._replay is None:
            return
        run = self.run

        def work() -> tuple[Replay, ExportPaths]:
            result = self._compute(run)  # the files now
            return result, export_replay(result, self.export_dir, name=run, png=True)

        def finish(outcome: tuple[Replay, ExportPaths]) -> None:
            result, paths = outcome
            if self.run == run:
                self._replay = result
            self.area.downloads.offer_export(paths, "Download replay JSON")
            self.area.export_note.object = export_written("replay-export-note", paths)

        self.context.runner.export(
            self.area.export_button,
            self.area.export_note,
            what="The replay export",
            busy=EXPORT_BUSY,
            export_dir=self.export_dir,
            work=work,
            finish=finish,
        )
