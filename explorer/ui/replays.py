"""The app's replay mode: the runs bound to the open packet and their view (`?packet=NAME&replay=RUN`).

Computes no numbers and opens only listed runs of the open packet.
"""

from __future__ import annotations

import param

from explorer.catalog.discovery import lookup
from explorer.catalog.replays import RunIndex
from explorer.export.files import ExportPaths
from explorer.export.pages import export_replay
from explorer.replay.model import Replay
from explorer.replay.replay import replay
from explorer.ui.area import ListedMode, export_written, first_shown
from explorer.ui.mode import Context
from explorer.ui.shared import echo
from explorer.views.shared.markup import esc

QUERY_REPLAY = "replay"
REPLAY_STATUS_STYLE = "padding:0.3em 0;font-size:1.05em"
NO_RUNS = "No replay run under this root binds to this packet."
EXPORT_LABEL, EXPORT_WIDTH = "Export replay: HTML + PNG + JSON + findings.md", 350
EXPORT_BUSY = "Exporting the replay view (the PNG takes a few seconds) ..."
MAX_RUN_BUTTONS = 12  # the first runs by name; replay= in the URL opens any other listed run of the packet


class ReplayMode(ListedMode):
    """The replay runs of `packet` and, while `run` is set, the Replay view of that run."""

    OPENED, QUERY, WHAT = "run", QUERY_REPLAY, "Replay"
    packet = param.String(default="", doc="The open packet (the runs' source).")
    run = param.String(default="", doc="The replay run shown, '' when none is open.")

    def __init__(self, context: Context, **params):
        classes = ("replay-note", "replay-runs", "replay-problem")
        super().__init__(context, "replay", classes, (EXPORT_LABEL, EXPORT_WIDTH), **params)
        self.runs = RunIndex(self.index.root)

    def _bound(self) -> tuple[str, ...]:
        entry = lookup(self.index.entries, self.packet)
        return () if entry is None else self.runs.runs_of(entry.path)

    def follow(self, packet: str) -> None:
        """A packet was opened: list the runs bound to it (the shell closed any run)."""
        self.packet = name = packet
        names = self._bound()
        more = first_shown(len(names), MAX_RUN_BUTTONS, "replay=RUN")
        lead = f" ({len(names)})" if names else f': <span class="no-replays">{NO_RUNS}</span>'
        self._list(
            f'<div class="replay-note-text" data-runs="{len(names)}" style="font-size:0.9em" '
            f'title="Replay runs bound to {esc(name)}: one click opens one"><b>Replay runs</b>{lead}{more}</div>',
            ((run, run, f"Open the replay run {run} of {name}", ["replay-button"]) for run in names[:MAX_RUN_BUTTONS]),
            "replay-list",
        )

    def _partner(self) -> str | None:
        """The view's partner: the first packet of the same selection by another backend, else any (by name)."""
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
        self._opened(run, self._compute(run))
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

    def export(self) -> None:
        """Export the open run as its files are now."""
        if self.shown_result is None:
            return
        run = self.run

        def work() -> tuple[Replay, ExportPaths]:
            result = self._compute(run)  # the files now
            return result, export_replay(result, self.export_dir, name=run, png=True)

        def finish(outcome: tuple[Replay, ExportPaths]) -> None:
            result, paths = outcome
            if self.run == run:
                self.shown_result = result
            self.area.downloads.offer_export(paths, "Download replay JSON")
            self.area.export_note.object = export_written("replay-export-note", paths)

        self._export_through_runner("The replay export", EXPORT_BUSY, work, finish)
