"""The app's campaign mode: the sidebar's list of campaigns and the Campaign view (`?campaign=ID`).

A cell opens its pair (`&cell=STEP,LAYER`); computes no numbers itself. The campaigns are the capture sets of the
one listing (explorer.campaigns.sets). Opening one computes it through explorer.campaigns.once (one computation
shared by every session asking for it while it runs): in this process for a few packets, else in worker processes
started from a clean process, through the session's runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import panel as pn
import param

from explorer.analysis.emulation.kernels import DEFAULT_SET, DEFAULT_SET_NAME
from explorer.campaigns.once import campaign_report_held, campaign_report_once
from explorer.campaigns.sets import ROOT_DIRECTORY, CaptureSet, Listing, listing_of_summaries
from explorer.catalog.discovery import lookup
from explorer.catalog.index import FILL_JOBS, INLINE_PACKETS, WORKER_START_METHOD
from explorer.export.files import ExportPaths
from explorer.export.pages import export_campaign
from explorer.foundations.bounded import escaped_bytes
from explorer.ui.area import ListedMode, button, export_written, first_shown
from explorer.ui.background import error_line
from explorer.ui.batch import one_message
from explorer.ui.mode import Context, one_at_a_time
from explorer.ui.shared import echo
from explorer.views.shared.markup import esc

QUERY_CAMPAIGN, QUERY_CELL = "campaign", "cell"
EXPORT_LABEL, EXPORT_WIDTH = "Export campaign: HTML + PNG + JSON + findings", 330
EXPORT_BUSY = "Exporting the campaign (the PNG takes a few seconds) ..."
EMULATE_LABEL, EMULATE_WIDTH = "Which emulation reproduces each side of the origin cell?", 400
# The emulations the button asks for: the default set's kernels. Not the set's real-library run (mlx_run): it
# runs in a child process of its own, which the campaign's worker processes (daemons) cannot start.
EMULATE_SET = DEFAULT_SET
BACK_LABEL, BACK_WIDTH = "Back to the campaign grid", 210
MAX_CAMPAIGN_BUTTONS = 12
MAX_SINGLE_BACKEND_LISTED = 6  # single-backend capture sets named in their line; the others counted
STATUS_STYLE = "padding:0.3em 0;font-size:1.05em"
NOTE_STYLE = "font-size:0.9em;padding:0.2em 0"
NO_CAMPAIGNS = "No request is captured on two backends or more under this root."


def _label(found: CaptureSet) -> str:
    """request R · model · its capture set's directory (but the root's), as the label of a button."""
    request, model = found.key[3], found.key[0]
    where = "" if found.directory == ROOT_DIRECTORY else f" · {found.directory}"
    return escaped_bytes(f"request {request} · {model}{where}")  # a label's text (a name's bytes as \\xNN)


def _cell_note(note: str) -> str:  # a click's (or the URL's) note about a cell, just above the grid
    return f'<div class="campaign-cell-problem" style="{NOTE_STYLE}">{note}</div>' if note else ""


def _single_backend_line(sets: tuple[CaptureSet, ...]) -> str:
    if not sets:
        return ""
    named = "; ".join(
        f"{esc(_label(found))} ({esc(found.backends[0])}, {len(found.members)})"
        for found in sets[:MAX_SINGLE_BACKEND_LISTED]
    )
    more = len(sets) - MAX_SINGLE_BACKEND_LISTED
    rest = f"; and {more} more" if more > 0 else ""
    return (
        f'<div class="campaign-single-backend" data-sets="{len(sets)}" style="font-size:0.85em;color:#444444">'
        f"One backend only, no grid ({len(sets)}): {named}{rest}.</div>"
    )


class CampaignMode(ListedMode):
    """The campaign list and, while `campaign` is set, its grid (or the pair of its cell `cell`)."""

    QUERY = QUERY_CAMPAIGN
    campaign = param.String(default="", doc="The open campaign's id, '' when none.")
    cell = param.String(default="", doc="'STEP,LAYER' of the cell whose pair is open, '' when the grid shows.")

    def __init__(self, context: Context, **params):
        classes = ("campaign-note-list", "campaign-list", "campaign-problem")
        super().__init__(context, "campaign", classes, (EXPORT_LABEL, EXPORT_WIDTH), **params)
        self._report: dict[str, Any] | None = None
        self._emulated = ""  # the campaign whose emulations were asked for (its grid shows them)
        self.cell_note: pn.pane.HTML | None = None  # a cell's note above the grid, made with the first grid
        self.emulate_button: pn.widgets.Button | None = None  # made with a grid whose origin cell can be emulated
        self._back: pn.Row | None = None  # the way back to the grid above a cell's pair, made when first needed
        self.panel = pn.Column(self.area.panel, visible=False, sizing_mode="stretch_width", css_classes=["campaign"])
        context.packets.param.watch(lambda _event: self.list_campaigns(), "filled")
        self.list_campaigns()

    @property
    def shown(self) -> bool:
        """The grid is on screen (not a cell's pair)."""
        return bool(self.campaign) and not self.cell

    def listing(self) -> Listing:
        """The one listing of campaigns (explorer.campaigns.sets) among the packets summarized so far."""
        return listing_of_summaries((entry.name, self.index.summary(entry.name)) for entry in self.index.entries)

    def list_campaigns(self) -> None:
        """One button per campaign (request, model and capture set, packet count); the single-backend sets apart."""
        listing = self.listing()
        sets = listing.campaigns
        lead = f"Campaigns ({len(sets)}):" if sets else f'<span class="no-campaigns">{NO_CAMPAIGNS}</span>'
        self._list(
            f'<div class="campaign-note-text" data-campaigns="{len(sets)}" '
            f'style="font-size:0.9em"><b>Campaigns</b> under this root<br>{lead}'
            f"{first_shown(len(sets), MAX_CAMPAIGN_BUTTONS, 'campaign=ID')}</div>"
            f"{_single_backend_line(listing.single_backend)}",
            (
                (
                    found.id,
                    f"{_label(found)} ({len(found.members)})",
                    f"Open the campaign grid of {_label(found)}",
                    ["campaign-button", f"campaign-{found.id}"],
                )
                for found in sets[:MAX_CAMPAIGN_BUTTONS]
            ),
            "campaign-buttons",
        )

    def _found(self, ident: str) -> tuple[CaptureSet | None, tuple[CaptureSet, ...]]:
        """The listed campaign `ident` and every capture set of its request (whose packets form its id)."""
        listing = self.listing()
        found = next((found for found in listing.campaigns if found.id == ident), None)
        if found is None:
            return None, ()
        return found, tuple(other for other in (*listing.campaigns, *listing.single_backend) if other.key == found.key)

    def _contents(self, sets: tuple[CaptureSet, ...]) -> tuple:  # what a kept computation was made of
        return tuple((member.name, self.index.summary(member.name)) for found in sets for member in found.members)

    def _computed(self, ident: str, sets: tuple[CaptureSet, ...], emulate: tuple[str, ...] | None):
        """The report entry of campaign `ident`, computed once for every session asking for it (or kept)."""
        entries = [
            entry
            for entry in (lookup(self.index.entries, member.name) for found in sets for member in found.members)
            if entry is not None
        ]
        inline = len(entries) <= INLINE_PACKETS
        return campaign_report_once(
            self.index.root,
            entries,
            ident,
            contents=self._contents(sets),
            jobs=1 if inline else FILL_JOBS,
            context=None if inline else WORKER_START_METHOD,
            emulate=emulate,
        )

    def open(self, ident: str, cell: str | None = None) -> list[str]:
        """Show the grid of campaign `ident` (or, with `cell`, that cell's pair); returns notes. A large campaign not
        computed yet is computed by the session's runner and opened when done, unless something else was since."""
        found, sets = self._found(ident)
        if found is None:
            return [f"Campaign &quot;{echo(ident)}&quot; is not listed under this root; it was ignored."]
        emulate = EMULATE_SET if ident == self._emulated else None
        held = campaign_report_held(self.index.root, ident, contents=self._contents(sets), emulate=emulate)
        if held is not None or len(found.members) <= INLINE_PACKETS or self.context.runner.inline:
            return self._open_report(ident, held or self._computed(ident, sets, emulate), cell)
        self._report, self.campaign, self.cell = None, ident, ""
        self._reveal(
            f'<div class="campaign-pending" style="{STATUS_STYLE}">Computing the campaign of '
            f"{len(found.members)} packets in worker processes; the grid follows here.</div>",
            lambda: pn.pane.HTML("", sizing_mode="stretch_width"),
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

        self.context.runner.run(lambda: self._computed(ident, sets, emulate), opened)
        return []

    @one_at_a_time
    def emulate(self) -> None:
        """Compute the open campaign again with the default emulation set, as its Emulations button does."""
        ident = self.campaign
        found, sets = self._found(ident)
        if found is None or self.cell or self._report is None:
            return  # no grid on screen (a cell's pair, or the campaign still computed)
        self._emulated = ident
        if self.emulate_button is not None:
            self.emulate_button.loading = True
        self.cell_note.object = '<div class="campaign-emulating">Computing the emulations of the origin cell ...</div>'

        def answered(report: dict[str, Any] | None, error: BaseException | None) -> None:
            with self.lock:
                if self.campaign != ident or self.cell:
                    return  # the grid was left meanwhile: it shows the emulations when opened again
                if error is not None:
                    self._emulated = ""
                    if self.emulate_button is not None:
                        self.emulate_button.loading = False
                    self.cell_note.object = (
                        f'<div class="campaign-failed">{esc(error_line("The emulations", error))}</div>'
                    )
                    return
                self._say(self._open_report(ident, report, None))

        self.context.runner.run(lambda: self._computed(ident, sets, EMULATE_SET), answered)

    def _open_report(self, ident: str, report: dict[str, Any] | None, cell: str | None) -> list[str]:
        if report is None:
            return [f"Campaign &quot;{echo(ident)}&quot; could not be formed from its packets; it was ignored."]
        # one message to the browser: the grid is drawn where it stays (the packet's status line hidden with it)
        with one_message():
            self._report = report
            self.campaign, self.cell = ident, ""
            notes = [] if cell is None else self.open_cell(cell)
            if cell is None or notes:  # a cell with no pair to open: the grid, and why (near it)
                self._show(" ".join(notes))
                self.context.shown(self)
        return notes

    def _reveal(self, status_html: str, build) -> None:
        if self._back is not None:
            self._back.visible = False
        self.area.show(status_html, build, "campaign view")
        self.panel.visible = True

    def _show(self, note: str = "") -> None:
        from explorer.views.campaign.view import build

        report = self._report
        key = report["key"]
        where = "" if report["captureSet"] == ROOT_DIRECTORY else f" ({esc(report['captureSet'])})"
        if self.cell_note is None:
            self.cell_note = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["campaign-cell-note"])
        self.cell_note.object = _cell_note(note)

        def view() -> pn.Column:
            return pn.Column(
                *self._emulation_part(report),
                self.cell_note,
                build(report, on_cell=self.click_cell),
                sizing_mode="stretch_width",
            )

        self._reveal(
            f'<div class="campaign-status-line" data-campaign="{esc(report["id"])}" '
            f'style="{STATUS_STYLE}">Campaign of request <b>{esc(key["requestID"])}</b>, model '
            f"{esc(key['modelID'])}{where}: {esc(' vs '.join(report['backends']))}</div>",
            view,
        )

    def _emulation_part(self, report: dict[str, Any]) -> list:
        """The Emulations button, or the line saying they are computed; nothing when no cell's outputs differ."""
        block = report["firstOutputsDiffer"]
        self.emulate_button = None
        if block is None:
            return []
        if block["emulationSentence"] is not None:
            return [
                pn.pane.HTML(
                    f'<div class="campaign-emulations" style="{NOTE_STYLE}">The emulations of the origin cell '
                    f"(the {DEFAULT_SET_NAME} set's kernels: {esc(', '.join(EMULATE_SET))}) are computed: the "
                    "origin below names which reproduces each side.</div>",
                    sizing_mode="stretch_width",
                )
            ]
        self.emulate_button = button(EMULATE_LABEL, EMULATE_WIDTH, "campaign-emulate", self.emulate)
        return [self.emulate_button]

    @one_at_a_time
    def click_cell(self, step: int, layer: int) -> None:
        """Open the pair of the cell (step, layer), as a click on it in the grid does; a note near the grid else."""
        self.cell_note.object = _cell_note(" ".join(self.open_cell(f"{step},{layer}")))

    def open_cell(self, text: str) -> list[str]:
        """Open the pair of the cell 'STEP,LAYER' of the open campaign; returns notes."""
        cell = next(
            (cell for cell in self._report["cells"] if f"{cell['outputIndex']},{cell['modelLayerIndex']}" == text), None
        )
        if cell is None:
            return [f"Cell &quot;{echo(text)}&quot; is not in this campaign; it was ignored."]
        names = [cell["packets"][backend] for backend in self._report["backends"]]
        if any(len(side) != 1 for side in names):
            return [f"Cell {esc(text)} is {cell['state']}: it has no pair to open."]
        notes = self.context.open_pair(self, names[0][0], names[1][0])
        if not notes:
            self.cell = text
            self.area.hide()
            self.panel.visible = True  # it holds the way back (hidden when Back to this entry closed the campaign)
            self._show_back(text)
            self.context.changed()
        return notes

    def _show_back(self, cell: str) -> None:
        if self._back is None:
            self._back = pn.Row(
                button(BACK_LABEL, BACK_WIDTH, "campaign-back", self.back_to_grid),
                pn.pane.HTML("", sizing_mode="stretch_width"),
                sizing_mode="stretch_width",
                css_classes=["campaign-back-bar"],
            )
            self.panel.insert(0, self._back)
        key = self._report["key"]
        self._back[1].object = (
            f'<div class="campaign-back-line" data-campaign="{esc(self.campaign)}" style="{NOTE_STYLE}">Cell '
            f"{esc(cell)} of the campaign of request {esc(key['requestID'])}, model {esc(key['modelID'])}</div>"
        )
        self._back.visible = True

    @one_at_a_time
    def back_to_grid(self) -> None:
        """From a cell's pair back to its campaign's grid, as the Back to the campaign grid button does."""
        if self.campaign:
            self._say(self.open(self.campaign))

    def from_query(self, query: Mapping[str, str]) -> list[str]:
        """Open what `campaign=` and `cell=` in the URL ask for."""
        ident = query.get(QUERY_CAMPAIGN)
        return [] if ident is None else self.open(ident, query.get(QUERY_CELL))

    def follow(self, packet: str) -> None:
        """The campaigns are listed from the whole root, whichever packet is open."""

    def close(self, notify: bool = True) -> None:
        """The grid (or its cell's pair) is no longer open; `notify`: back to the packet."""
        if self.campaign:
            self.campaign, self.cell = "", ""
            self.area.hide()
            self.panel.visible = False
        if notify:
            self.context.shown(None)

    def query(self) -> dict[str, str]:  # a cell only within an open campaign
        return {name: value for name, value in ((QUERY_CAMPAIGN, self.campaign), (QUERY_CELL, self.cell)) if value}

    def export(self) -> None:
        """Export the open campaign, as its Export button does."""
        if self._report is None:
            return
        report = self._report

        def finish(paths: ExportPaths) -> None:
            self.area.downloads.offer_export(paths, "Download campaign JSON")
            self.area.export_note.object = export_written("campaign-export-note", paths)

        self._export_through_runner(
            "The campaign export", EXPORT_BUSY, lambda: export_campaign(report, self.export_dir, png=True), finish
        )
