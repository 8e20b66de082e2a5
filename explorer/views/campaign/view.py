"""The Campaign view: a campaign's cells as a steps x layers heatmap in state colours; draws only.

It draws one campaign of the report (docs/campaigns.md): the states, counts and origin sentence are the report's.
The axes are folded (campaigns/axis.py); a grid wider than the main area opens at the origin's step and scrolls
sideways. `on_cell(step, layer)` hears a click on a cell; without it the grid is a picture (notebooks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import holoviews as hv
import pandas as pd
import panel as pn

from explorer.campaigns.axis import CELL_SPAN, GAP_MARK, Slot, extent, folded
from explorer.campaigns.model import STATES
from explorer.foundations.formatting import short_number
from explorer.views.shared.common import hint, html_pane, plot_pane, section
from explorer.views.shared.markup import esc

# One colour per state (categorical, never a scale): differences warm, agreement grey, gaps pale.
STATE_COLOURS = {
    "duplicate": "#bcbd22",
    "missing": "#ffffff",
    "refused": "#595959",
    "tokens_differ": "#8c6bb1",
    "inputs_differ": "#fdae6b",
    "outputs_differ": "#d62728",
    "identical": "#e3e3e3",
}
CELL_EDGE = "#c8c8c8"  # every cell outlined, so a missing (white) cell shows as a gap in the grid
LABEL_COLOURS = {"refused": "#ffffff", "outputs_differ": "#ffffff", "tokens_differ": "#ffffff"}
CELL_WIDTH_PX = 52
CELL_HEIGHT_PX = 13  # 32 layers fit the first screen of a 1280 x 800 window under the origin sentence
MIN_CELL_WIDTH_PX = 28
MAX_GRID_WIDTH_PX = 800  # the main area beside the 430 px sidebar of a 1280 px window, less its padding
AXIS_MARGIN_PX = (70, 50)  # room for the axes' labels and ticks (x, y)
MIN_GRID_WIDTH_PX = 220  # a grid of one or two steps still shows its axis title ("step (outputIndex)") whole
MIN_GRID_HEIGHT_PX = 150  # a grid of a few layers still shows its axis label whole
# Steps shown at once when the grid is wider than the main area; the rest scroll sideways.
VISIBLE_STEPS = (MAX_GRID_WIDTH_PX - AXIS_MARGIN_PX[0]) // MIN_CELL_WIDTH_PX
STEPS_BEFORE_ORIGIN = 1  # steps left of the origin's when a wide grid opens there
LABEL_FONT = "7pt"
GRID_CLASS = "campaign-grid"


def grid_size(steps: float, layers: float) -> tuple[int, int]:
    """The grid's (width, height) in pixels: its cells and axes, never wider than the main area (it scrolls)."""
    width = max(MIN_CELL_WIDTH_PX, min(CELL_WIDTH_PX, (MAX_GRID_WIDTH_PX - AXIS_MARGIN_PX[0]) // max(steps, 1)))
    return (
        max(MIN_GRID_WIDTH_PX, min(MAX_GRID_WIDTH_PX, round(steps * width) + AXIS_MARGIN_PX[0])),
        max(MIN_GRID_HEIGHT_PX, round(layers * CELL_HEIGHT_PX) + AXIS_MARGIN_PX[1]),
    )


def _span(slots: tuple[Slot, ...]) -> float:
    low, high = extent(slots)
    return high - low


def _opening_window(campaign: dict[str, Any], columns: tuple[Slot, ...]) -> tuple[float, float]:
    """The x range shown first: every column, or VISIBLE_STEPS from just before the origin's step."""
    low, high = extent(columns)
    if high - low <= VISIBLE_STEPS:
        return low, high
    blocks = (campaign["firstOutputsDiffer"], campaign["firstInputsDiffer"], campaign["firstTokensDiffer"])
    first = next((block["outputIndex"] for block in blocks if block is not None), None)
    at = next((index for index, slot in enumerate(columns) if slot.value == first), 0)
    start = columns[max(0, at - STEPS_BEFORE_ORIGIN)].centre - CELL_SPAN / 2
    start = min(start, high - VISIBLE_STEPS)
    return start, start + VISIBLE_STEPS


def _ticks(slots: tuple[Slot, ...]) -> list[tuple[float, str]]:
    return [(slot.centre, GAP_MARK if slot.gap else str(slot.value)) for slot in slots]


def jumps_text(campaign: dict[str, Any]) -> str:
    """The uncaptured runs the folded axes jump over, as a sentence ('' when none)."""
    columns, rows = folded(campaign["coverage"]["steps"]), folded(campaign["coverage"]["layers"])
    parts = [
        f"{name} {', '.join(slot.text() for slot in slots if slot.gap)}"
        for name, slots in (("steps", columns), ("layers", rows))
        if any(slot.gap for slot in slots)
    ]
    return f"{GAP_MARK} on an axis: not captured ({'; '.join(parts)})." if parts else ""


def legend_html() -> str:
    """The states in precedence order, each with its colour."""
    swatches = "".join(
        f'<span style="display:inline-block;margin-right:0.9em"><span style="display:inline-block;'
        f"width:0.9em;height:0.9em;border:1px solid #999;background:{STATE_COLOURS[state]};"
        f'vertical-align:middle"></span> {state.replace("_", " ")}</span>'
        for state in STATES
    )
    return f'<div class="campaign-legend" style="font-size:0.85em">{swatches}</div>'


def grid(campaign: dict[str, Any]) -> hv.Overlay:
    """The heatmap: one rectangle per cell (x: step, y: layer, layer 0 on top), the differing-element count on it."""
    columns, rows = folded(campaign["coverage"]["steps"]), folded(campaign["coverage"]["layers"])
    column = {slot.value: slot.centre for slot in columns if not slot.gap}
    row = {slot.value: slot.centre for slot in rows if not slot.gap}
    records = []
    for cell in campaign["cells"]:
        x, y = column[cell["outputIndex"]], row[cell["modelLayerIndex"]]
        differing = ", ".join(
            f"{name} {short_number(count)}" for name, count in (cell["inputsDiffering"] or {}).items()
        )
        records.append(
            (
                x - 0.48,
                y - 0.46,
                x + 0.48,
                y + 0.46,
                STATE_COLOURS[cell["state"]],
                cell["state"],
                cell["outputIndex"],
                cell["modelLayerIndex"],
                short_number(cell["outputsDiffering"]),
                short_number(cell["maxUlp"]),
                differing or "-",
                " ".join(cell["codes"]) or "-",
                "" if cell["outputsDiffering"] in (None, 0) else short_number(cell["outputsDiffering"]),
                LABEL_COLOURS.get(cell["state"], "#222222"),
                x,
                y,
            )
        )
    vdims = ["colour", "state", "step", "layer", "outputs", "ulp", "inputs", "codes", "label", "ink", "cx", "cy"]
    width, height = grid_size(_span(columns), _span(rows))
    rectangles = hv.Rectangles(records, kdims=["x0", "y0", "x1", "y1"], vdims=vdims).opts(
        color="colour",
        line_color=CELL_EDGE,
        line_width=1,
        width=width,
        height=height,
        xlim=_opening_window(campaign, columns),
        ylim=extent(rows),
        invert_yaxis=True,
        xticks=_ticks(columns),
        yticks=_ticks(rows),
        xlabel="step (outputIndex)",
        ylabel="layer",
        tools=["hover", "tap", "xpan"],
        active_tools=["xpan"],
        hover_tooltips=[
            ("step", "@step"),
            ("layer", "@layer"),
            ("state", "@state"),
            ("output elements differing", "@outputs"),
            ("max ULP", "@ulp"),
            ("inputs differing", "@inputs"),
            ("codes", "@codes"),
        ],
        toolbar=None,
        nonselection_alpha=1.0,
        selection_alpha=1.0,
        show_grid=False,
        default_tools=[],
    )
    labels = hv.Labels(
        [(r[14], r[15], r[12], r[13]) for r in records], kdims=["cx", "cy"], vdims=["label", "ink"]
    ).opts(text_font_size=LABEL_FONT, text_color="ink")
    return rectangles * labels


def _slot_at(slots: tuple[Slot, ...], position: float) -> int | None:
    """The captured index whose slot holds `position` (None on a gap or outside)."""
    return next((slot.value for slot in slots if not slot.gap and abs(position - slot.centre) <= CELL_SPAN / 2), None)


def build(campaign: dict[str, Any], on_cell: Callable[[int, int], None] | None = None) -> pn.Column:
    """The view of one campaign: origin sentence, legend, the grid (clickable with `on_cell`), its notes."""
    parts = [
        html_pane(
            f'<div class="campaign-origin" data-campaign="{esc(campaign["id"])}" '
            f'style="font-size:1.0em;margin:0.2em 0">{esc(campaign["originSentence"])}</div>'
        ),
        html_pane(legend_html()),
    ]
    if campaign["cells"]:
        pane = plot_pane(grid(campaign), css_classes=[GRID_CLASS], sizing_mode="fixed")
        columns, rows = folded(campaign["coverage"]["steps"]), folded(campaign["coverage"]["layers"])
        if on_cell is not None:

            def clicked(x, y) -> None:
                if x is None or y is None:
                    return
                step, layer = _slot_at(columns, x), _slot_at(rows, y)
                if step is not None and layer is not None:
                    on_cell(step, layer)

            hv.streams.Tap(source=pane.object.get(0)).add_subscriber(clicked)
            sides = f"side a: {esc(campaign['backends'][0])}, side b: {esc(campaign['backends'][1])}"
            parts.append(hint(f"Click a cell to open its pair ({sides})."))
        parts.append(pane)
        if _span(columns) > VISIBLE_STEPS:
            opens = "the grid opens at the first step where something differs; drag it sideways for the others"
            parts.append(hint(f"{len(campaign['coverage']['steps'])} steps: {opens}."))
        jumps = jumps_text(campaign)
        if jumps:
            parts.append(html_pane(f'<div class="campaign-jumps" style="font-size:0.85em">{esc(jumps)}</div>'))
    notes = "".join(f'<div class="campaign-note" style="font-size:0.85em">{esc(n)}</div>' for n in campaign["notes"])
    if notes:
        parts.append(html_pane(notes))
    return section("campaign-view", *parts)


def campaign_of(frame, campaign: str | None = None) -> dict[str, Any]:
    """One campaign of an `explorer.campaign(root)` DataFrame as the report entry `build` draws: its attributes
    (`frame.attrs["campaigns"]`, the first or the one with id `campaign`) and its rows as the cells."""
    chosen = next(entry for entry in frame.attrs["campaigns"] if campaign is None or entry["id"] == campaign)
    rows = frame[frame["campaign"] == chosen["id"]]
    cells = [
        {
            "outputIndex": int(row.outputIndex),
            "modelLayerIndex": int(row.modelLayerIndex),
            "state": row.state,
            "packets": row.packets,
            "inputsDiffering": row.inputsDiffering,
            "outputsDiffering": None if row.outputsDiffering is pd.NA else int(row.outputsDiffering),
            "maxUlp": None if row.maxUlp is pd.NA else int(row.maxUlp),
            "codes": list(row.codes),
        }
        for row in rows.itertuples(index=False)
    ]
    return {**chosen, "cells": cells}
