"""The app's campaign mode: the sidebar's list of campaigns and the Campaign view.

The app's campaign mode: the sidebar's list of campaigns under the root and the Campaign view (`?campaign=ID`),
whose cells open their pair (`&cell=STEP,LAYER`); computes no numbers itself.

The campaigns are listed from the packet index's summaries (packets sharing model,
artifact, input and request, two or more of them). Opening one runs the campaign
computation (explorer/campaigns/) on that campaign's packets only: in this process
for a few packets, else in worker processes started from a clean server process
(never a fork of the threaded server). The last reports are kept per root and
content, so going back to a campaign after its pair redraws it at once.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import panel as pn
import param

from explorer.campaigns.grid import campaign_id
from explorer.campaigns.model import KEY_FIELDS
from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.catalog.discovery import lookup
from explorer.catalog.index import FILL_JOBS, INLINE_PACKETS, WORKER_START_METHOD
from explorer.export.files import FINDINGS_SUFFIX, ExportPaths
from explorer.export.kinds import CAMPAIGN_SUFFIX
from explorer.export.pages import export_campaign
from explorer.foundations.cache import BoundedCache
from explorer.ui.area import ModeArea, add_problems, choice_buttons, note_and_buttons
from explorer.ui.mode import Context, one_at_a_time
from explorer.ui.runner import error_line
from explorer.ui.shared import echo
from explorer.views.shared.html_summary import written_note
from explorer.views.shared.markup import esc

QUERY_CAMPAIGN, QUERY_CELL = "campaign", "cell"
EXPORT_LABEL, EXPORT_WIDTH = "Export campaign: HTML + PNG + JSON + findings", 330
EXPORT_BUSY = "Exporting the campaign (the PNG takes a few seconds) ..."
MAX_CAMPAIGN_BUTTONS = 12
REPORT_CACHE_ENTRIES = 4  # campaign reports kept per process (a few hundred bytes per cell)
STATUS_STYLE = "padding:0.3em 0;font-size:1.05em"
NO_CAMPAIGNS = "No request is captured in two or more packets under this root."

_reports: BoundedCache[dict[str, Any]] = BoundedCache(REPORT_CACHE_ENTRIES)


def _key(selection: tuple | None) -> tuple | None:
    if selection is None:
        return None
    fields = dict(selection)
    return tuple(fields[name] for name in KEY_FIELDS)


class CampaignMode(param.Parameterized):
    """The campaign list and, while `campaign` is set, its grid (or the pair of its cell `cell`)."""

    campaign = param.String(default="", doc="The open campaign's id, '' when none.")
    cell = param.String(default="", doc="'STEP,LAYER' of the cell whose pair is open, '' when the grid shows.")

    def __init__(self, context: Context, **params):
        super().__init__(**params)
        self.context, self.index, self.export_dir, self.lock = context, context.index, context.export_dir, context.lock
        self._report: dict[str, Any] | None = None
        self._note = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["campaign-note-list"])
        self.buttons: list[pn.widgets.Button] = []
        self.sidebar = pn.Column(self._note, sizing_mode="stretch_width", css_classes=["campaign-list"])
        self.area = ModeArea(
            "campaign",
            export_label=EXPORT_LABEL,
            export_width=EXPORT_WIDTH,
            on_close=self.close,
            on_export=self.export,
        )
        self.panel = self.area.panel
        context.packets.param.watch(lambda _event: self.list_campaigns(), "filled")
        self.list_campaigns()

    @property
    def shown(self) -> bool:
        """The grid is on screen (not a cell's pair)."""
        return bool(self.campaign) and not self.cell

    # ------------------------------------------------------------ the list

    def _groups(self) -> dict[str, tuple[tuple, list[str]]]:
        groups: dict[str, tuple[tuple, list[str]]] = {}
        for entry in self.index.entries:
            summary = self.index.summary(entry.name)
            key = _key(None if summary is None else summary.selection)
            if key is not None:
                groups.setdefault(campaign_id(key), (key, []))[1].append(entry.name)
        return {ident: group for ident, group in groups.items() if len(group[1]) > 1}

    def list_campaigns(self) -> None:
        """One button per campaign (request and model, packet count)."""
        groups = sorted(self._groups().items(), key=lambda item: (str(item[1][0][3]), str(item[1][0][0])))
        buttons = choice_buttons(
            (
                (
                    ident,
                    f"request {key[3]} · {key[0]} ({len(names)})",
                    f"Open the campaign grid of request {key[3]}",
                    ["campaign-button", f"campaign-{ident}"],
                )
                for ident, (key, names) in groups[:MAX_CAMPAIGN_BUTTONS]
            ),
            self._clicked,
        )
        lead = f"Campaigns ({len(groups)}):" if groups else f'<span class="no-campaigns">{NO_CAMPAIGNS}</span>'
        self._note.object = (
            f'<div class="campaign-note-text" data-campaigns="{len(groups)}" '
            f'style="font-size:0.9em"><b>Campaigns</b> under this root<br>{lead}</div>'
        )
        self.buttons = buttons
        self.sidebar.objects = note_and_buttons(self._note, buttons, "campaign-buttons")

    def _say(self, notes: list[str]) -> None:
        add_problems(self._note, notes, "campaign-problem")

    @one_at_a_time
    def _clicked(self, ident: str) -> None:
        self._say(self.open(ident))

    # ------------------------------------------------------------ the grid

    def _signature(self, ident: str, names: list[str]) -> tuple:
        return str(self.index.root), ident, tuple((name, self.index.summary(name)) for name in names)

    def _computed(self, ident: str, names: list[str]) -> dict[str, Any] | None:
        """The campaign's report entry: kept from an earlier session for the same contents, else computed now."""
        signature = self._signature(ident, names)
        held = _reports.get(signature)
        if held is not None:
            return held
        entries = [entry for entry in (lookup(self.index.entries, name) for name in names) if entry is not None]
        inline = len(entries) <= INLINE_PACKETS
        run = run_campaigns(
            self.index.root,
            jobs=1 if inline else FILL_JOBS,
            entries=entries,
            context=None if inline else WORKER_START_METHOD,
        )
        report = build_campaign_report(run)
        found = next((campaign for campaign in report["campaigns"] if campaign["id"] == ident), None)
        if found is not None:
            _reports.put(signature, found)
        return found

    def open(self, ident: str, cell: str | None = None) -> list[str]:
        """Show the grid of campaign `ident` (or, with `cell`, that cell's pair); returns notes.

        A campaign of more than INLINE_PACKETS packets not computed yet is computed by the session's runner (the
        page says so meanwhile) and opened when it is done, unless another campaign was opened since."""
        group = self._groups().get(ident)
        if group is None:
            return [f"Campaign &quot;{echo(ident)}&quot; is not listed under this root; it was ignored."]
        names = group[1]
        known = _reports.peek(self._signature(ident, names)) is not None
        if known or len(names) <= INLINE_PACKETS or self.context.runner.inline:
            return self._open_report(ident, self._computed(ident, names), cell)
        self._report, self.campaign, self.cell = None, ident, ""
        self.area.show(
            f'<div class="campaign-pending" style="{STATUS_STYLE}">Computing the campaign of '
            f"{len(names)} packets in worker processes; the grid follows here.</div>",
            lambda: pn.pane.HTML("", sizing_mode="stretch_width"),
            "campaign view",
        )
        self.context.shown(self)

        def opened(report: dict[str, Any] | None, error: BaseException | None) -> None:
            with self.lock:
                if self.campaign != ident or self._report is not None:
                    return  # something else was opened meanwhile
                if error is not None:
                    failed = esc(error_line("The campaign", error))
                    self.area.status.object = f'<div class="campaign-failed">{failed}</div>'
                    return
                self._say(self._open_report(ident, report, cell))

        self.context.runner.run(lambda: self._computed(ident, names), opened)
        return []

    def _open_report(self, ident: str, report: dict[str, Any] | None, cell: str | None) -> list[str]:
        if report is None:
            return [f"Campaign &quot;{echo(ident)}&quot; could not be formed from its packets; it was ignored."]
        self._report = report
        self.campaign, self.cell = ident, ""
        notes = [] if cell is None else self.open_cell(cell)
        if cell is None or notes:  # a cell with no pair to open: the grid, and why
            self._show()
            self.context.shown(self)
        return notes

    def _show(self) -> None:
        from explorer.views.campaign.view import build

        report = self._report
        key = report["key"]
        self.area.show(
            f'<div class="campaign-status-line" data-campaign="{esc(report["id"])}" '
            f'style="{STATUS_STYLE}">Campaign of request <b>{esc(key["requestID"])}</b>, model '
            f"{esc(key['modelID'])}: {esc(' vs '.join(report['backends']))}</div>",
            lambda: build(report, on_cell=self._cell_clicked),
            "campaign view",
        )

    @one_at_a_time
    def _cell_clicked(self, step: int, layer: int) -> None:
        self._say(self.open_cell(f"{step},{layer}"))

    def open_cell(self, text: str) -> list[str]:
        """Open the pair of the cell 'STEP,LAYER' of the open campaign; returns notes."""
        cell = next(
            (cell for cell in self._report["cells"] if f"{cell['outputIndex']},{cell['modelLayerIndex']}" == text), None
        )
        if cell is None:
            return [f"Cell &quot;{echo(text)}&quot; is not in this campaign; it was ignored."]
        names = [cell["packets"][backend] for backend in self._report["backends"]]
        if any(len(side) != 1 for side in names):
            return [f"Cell {html.escape(text)} is {cell['state']}: it has no pair to open."]
        notes = self.context.open_pair(self, names[0][0], names[1][0])
        if not notes:
            self.cell = text
            self.area.hide()
            self.context.changed()
        return notes

    def from_query(self, query: Mapping[str, str]) -> list[str]:
        """Open what `campaign=` and `cell=` in the URL ask for."""
        ident = query.get(QUERY_CAMPAIGN)
        return [] if ident is None else self.open(ident, query.get(QUERY_CELL))

    def follow(self, packet: str) -> None:
        """The campaigns are listed from the whole root, whichever packet is open."""

    def close(self, notify: bool = True) -> None:
        """The grid (or its cell's pair) is no longer open; `notify`: back to the packet (the Back button)."""
        if self.campaign:
            self.campaign, self.cell = "", ""
            self.area.hide()
        if notify:
            self.context.shown(None)

    def query(self) -> dict[str, str]:
        if not self.campaign:
            return {}
        return {QUERY_CAMPAIGN: self.campaign, **({QUERY_CELL: self.cell} if self.cell else {})}

    # ------------------------------------------------------------ export

    def export(self) -> None:
        """Export the open campaign (through the session's runner, off the event loop), as its Export button does."""
        if self._report is None:
            return
        report = self._report

        def finish(paths: ExportPaths) -> None:
            findings = paths.report.with_name(paths.report.name.replace(CAMPAIGN_SUFFIX, FINDINGS_SUFFIX))
            self.area.downloads.offer(
                (
                    (paths.html, "Download HTML"),
                    (paths.report, "Download campaign JSON"),
                    (findings, "Download findings"),
                )
            )
            self.area.export_note.object = written_note(
                "campaign-export-note",
                (
                    ("export-html", paths.html),
                    ("export-json", paths.report),
                    ("export-findings", findings),
                    *(("export-png", png) for png in paths.pngs),
                ),
            )

        self.context.runner.export(
            self.area.export_button,
            self.area.export_note,
            what="The campaign export",
            busy=EXPORT_BUSY,
            export_dir=self.export_dir,
            work=lambda: export_campaign(report, self.export_dir, png=True),
            finish=finish,
        )
