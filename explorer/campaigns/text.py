"""The campaign report as `explorer campaign ROOT` prints it; reads the JSON report only, no UI.

Each campaign under its own header with a folded grid (`~` where captured indexes jump), the single-backend
capture sets in one line, one count.
"""

from __future__ import annotations

from typing import Any

from explorer.campaigns.axis import GAP_MARK, Slot, folded
from explorer.campaigns.grid import counted, listed
from explorer.campaigns.model import STATE_CODES
from explorer.campaigns.sets import ROOT_DIRECTORY, compared

LAYER_LABEL_WIDTH = 10  # the grid's first column: "layer\step" and the layer numbers
SINGLE_BACKEND_IN_LINE = 20  # single-backend capture sets named in their line before "and N more"


def _label(slot: Slot) -> str:
    return GAP_MARK if slot.gap else str(slot.value)


def _jumps(name: str, slots: tuple[Slot, ...]) -> str:
    return f"{name} {', '.join(slot.text() for slot in slots if slot.gap)}" if any(s.gap for s in slots) else ""


def grid_lines(campaign: dict[str, Any]) -> list[str]:
    """A campaign's grid as text: layers as rows, steps as columns, one character per state, jumps named below."""
    cells = {(cell["outputIndex"], cell["modelLayerIndex"]): cell["state"] for cell in campaign["cells"]}
    columns, rows = folded(campaign["coverage"]["steps"]), folded(campaign["coverage"]["layers"])
    if not columns:
        return []
    width = max(len(_label(slot)) for slot in columns)
    lines = ["layer\\step".rjust(LAYER_LABEL_WIDTH) + " " + " ".join(_label(slot).rjust(width) for slot in columns)]
    for row in rows:
        marks = (
            " " if row.gap or column.gap else STATE_CODES.get(cells.get((column.value, row.value)), " ")
            for column in columns
        )
        lines.append(_label(row).rjust(LAYER_LABEL_WIDTH) + " " + " ".join(mark.rjust(width) for mark in marks))
    lines.append("  " + "  ".join(f"{code} {state}" for state, code in STATE_CODES.items()))
    jumps = [text for text in (_jumps("steps", columns), _jumps("layers", rows)) if text]
    if jumps:
        lines.append(f"  {GAP_MARK} not captured: " + "; ".join(jumps))
    return lines


def _capture_set(campaign: dict[str, Any]) -> str:
    directory = campaign["captureSet"]
    return "the root" if directory == ROOT_DIRECTORY else directory


def _header(campaign: dict[str, Any]) -> str:
    key = campaign["key"]
    return (
        f"Campaign {campaign['id']}: model {key['modelID']}, request {key['requestID']}, capture set "
        f"{_capture_set(campaign)}, backends {' vs '.join(campaign['backends'])}"
    )


def _single(campaign: dict[str, Any]) -> str:
    key, packets = campaign["key"], sum(campaign["coverage"]["packetsPerBackend"].values())
    return (
        f"{campaign['id']} (request {key['requestID']} of {key['modelID']} on {', '.join(campaign['backends']) or '-'}"
        f", {counted(packets, 'packet')} in {_capture_set(campaign)})"
    )


def campaign_text(report: dict[str, Any]) -> list[str]:
    """The command line's text: per campaign its header, origin sentence, notes and grid; then the rest."""
    listed_campaigns = [campaign for campaign in report["campaigns"] if compared(campaign["backends"])]
    single = [campaign for campaign in report["campaigns"] if not compared(campaign["backends"])]
    lines = []
    for campaign in listed_campaigns:
        lines += [_header(campaign), campaign["originSentence"]]
        lines += [f"Note: {note}" for note in campaign["notes"]]
        lines += [*grid_lines(campaign), ""]
    if single:
        lines += [
            f"One backend only, no grid ({len(single)}): "
            + listed([_single(campaign) for campaign in single], "; ", SINGLE_BACKEND_IN_LINE),
            "",
        ]
    apart = f"; {counted(len(single), 'single-backend capture set')} listed apart" if single else ""
    lines.append(
        f"{counted(len(listed_campaigns), 'campaign')} among {counted(report['packets'], 'packet')} under "
        f"{report['root']}{apart}"
    )
    lines += [f"Note: {note}" for note in report["notes"]]
    return lines
