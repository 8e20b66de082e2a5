"""Per-head error view: maps of |output - reference|, per-head metric charts with the noise floor.

Each map on its own colour scale or one shared, captioned with what dominates it.
"""

from __future__ import annotations

import holoviews as hv
import panel as pn

from explorer.analysis.result import Analysis, Comparison, Numerics, Ulp
from explorer.foundations.record import Record, record
from explorer.views.shared import html_summary
from explorer.views.shared.charts import per_head_charts
from explorer.views.shared.common import (
    Field,
    Selection,
    collapsed,
    continuous,
    explained,
    grid_map,
    heading,
    hint,
    html_pane,
    note,
    per_cell,
    plot_pane,
    ulp_value,
)
from explorer.views.shared.html_summary import comparison_rows, per_head_rows
from explorer.views.shared.marks import selectable
from explorer.views.shared.markup import Cell, esc, number_cell, table
from explorer.views.shared.scales import LINEAR, LOG, colour_scale

SHARED_OPTIONS = {"a scale per map": False, "one scale for all maps": True}
FULL_HOVER_CELLS = 65_536  # above this many cells per map, the hover carries the error only (keeps the payload small)
MAX_MAP_COLUMNS = 2  # maps per row: each keeps its title, axes and colour bar readable at 1280 px
ULP_BAR_PIXELS = 180  # the longest ULP histogram bar
ULP_BAR_COLOUR = "#4c72b0"
ULP_CHART_WIDTH = 340  # one histogram with its labels and caption
# The bar chart is a borderless table: a bucket right-aligned beside its bar.
BARS_TABLE_STYLE = "border-collapse:collapse;font-size:0.9em;margin-top:0.3em"
BAR_CELL_STYLE = "padding:1px 0;white-space:nowrap;text-align:left"
BUCKET_STYLE = "text-align:right;padding-right:8px"
ULP_TABLE_MIN_WIDTH = 320  # the ULP table beside the histograms wraps below them when narrower


@record
class ErrorMap(Record):
    """One map: a comparison of the output against a reference, and the ULP distance shown beside it."""

    title: str
    comparison: Comparison
    ulp: Ulp
    ulp_label: str
    caption: str
    same_as_primary: bool = False  # the identity rounding of a float32 output: listed, never drawn a second time


def error_maps(numerics: Numerics) -> list[ErrorMap]:
    """The comparisons in display order: primary, rounded to the output dtype, rounded to the kernel dtype,
    narrowed-Q (the tables list each; the maps and the chart skip the one `same_as_primary`)."""
    rounded = numerics.rounded_to_output
    dtype = rounded.dtype
    ulp_label = f"ULP (output vs reference rounded to {dtype})"
    if rounded.identity:
        primary_caption = (
            "Output is float32: |output - primary| is the whole difference; there is no output "
            "rounding to separate from it (the reference rounded to float32 is the reference itself, "
            "so its map would repeat this one and is not drawn)."
        )
        rounded_caption = ""  # same_as_primary: never drawn
    else:
        primary_caption = (
            f"Output is {dtype}: |output - primary| includes the {dtype} rounding of the reference; "
            "the rounded map shows what is left beyond it."
        )
        rounded_caption = (
            f"|output - reference rounded to {dtype}|: what is left beyond the {dtype} rounding "
            f"(0 where the output is the rounded reference)."
        )
    maps = [
        ErrorMap("primary reference", numerics.primary, rounded.ulp, ulp_label, primary_caption),
        ErrorMap(
            f"rounded to {dtype}" + (" (identity)" if rounded.identity else ""),
            rounded.comparison,
            rounded.ulp,
            ulp_label,
            rounded_caption,
            same_as_primary=rounded.identity,
        ),
    ]
    kernel = numerics.rounded_to_kernel
    if kernel is not None:
        maps.append(
            ErrorMap(
                f"rounded to kernel {kernel.dtype}",
                kernel.comparison,
                kernel.ulp,
                f"ULP (in {kernel.dtype} units, output rounded to {kernel.dtype})",
                f"Against the reference rounded to the record's kernel output dtype {kernel.dtype}: "
                f"what is left beyond the {kernel.dtype} rounding.",
            )
        )
    if numerics.narrowed_query is not None:
        nq = numerics.narrowed_query
        maps.append(
            ErrorMap(
                "narrowed-Q counterfactual",
                nq.comparison,
                rounded.ulp,
                ulp_label,
                f"A counterfactual, not the reference: against the reference recomputed from queries "
                f"rounded to {nq.dtype}. Smaller values here than on the primary map mean the output "
                "sits closer to this computation.",
            )
        )
    return maps


def _map(item: ErrorMap, kv_heads: list[int], scale) -> hv.Image:
    c = item.comparison
    fields = [Field("error", "|output - reference|", c.abs_error)]
    if c.abs_error.size <= FULL_HOVER_CELLS:
        fields = [
            Field("kv_head", "KV head", per_cell(kv_heads, c.abs_error.shape)),
            Field("output", "output", c.actual),
            Field("reference", "reference", c.reference),
            *fields,
            Field("ulp", item.ulp_label, item.ulp.distance, ulp_value),
        ]
    return grid_map(c.abs_error, fields, title=item.title, colour_label="|output - reference|", **continuous(scale))


def maps_panel(numerics: Numerics, mode: str, shared: bool = False, selection: Selection | None = None) -> pn.Column:
    """Every error map with its caption, each on its own colour scale or on one `shared` scale (`mode` LINEAR or LOG).

    Every map carries its colour bar, so linked maps keep equal plot areas; a click selects an element (`selection`).
    """
    maps = [m for m in error_maps(numerics) if not m.same_as_primary]
    what = "|output - reference|"
    kv_heads = [a.kv_head for a in numerics.attention]
    one = colour_scale([m.comparison.abs_error for m in maps], mode, what) if shared else None
    scales = [one or colour_scale([m.comparison.abs_error], mode, what) for m in maps]
    cells = []
    for item, scale in zip(maps, scales, strict=True):
        pane = plot_pane(_map(item, kv_heads, scale), linked_axes=True)
        if selection is not None:
            selectable(pane, selection)
        notes = item.caption if shared else f"{item.caption} {scale.note}"
        cells.append(pn.Column(pane, note(esc(notes), "map-caption"), sizing_mode="stretch_width"))
    many = maps[0].comparison.abs_error.size > FULL_HOVER_CELLS
    reduced = [hint(f"Over {FULL_HOVER_CELLS} cells per map the hover shows the error only.")] if many else []
    scale_note = (
        f"One colour scale for every map. {one.note}"
        if shared
        else "Each map has its own colour scale (compare colours within a map, numbers across maps)."
    )
    columns = min(len(cells), MAX_MAP_COLUMNS)
    grid = pn.GridBox(*cells, ncols=columns, css_classes=["error-maps"], sizing_mode="stretch_width")
    return pn.Column(grid, note(esc(scale_note), "colour-scale-note"), *reduced, sizing_mode="stretch_width")


def _ulp_table(numerics: Numerics) -> str:
    rows = [
        (esc(r.label), number_cell(r.ulp.max), number_cell(r.ulp.p99), esc(r.ulp.nonfinite_pairs))
        for r in (numerics.rounded_to_output, numerics.rounded_to_kernel)
        if r is not None
    ]
    return table(("comparison", "max ULP", "p99 ULP", "nonfinite pairs (eligible heads only)"), rows, css_class="ulp")


def _ulp_bars(rounded) -> str:
    """One ULP histogram as HTML bars, linear in the count printed beside each (no figure for a few bars)."""
    histogram = rounded.ulp.histogram
    largest = max(count for _, _, count in histogram) or 1
    rows = []
    for low, high, count in histogram:
        width = 0 if count == 0 else max(1, round(ULP_BAR_PIXELS * count / largest))
        bucket = f"{low}" if low == high else f"{low}\u2013{high}"
        rows.append(
            (
                Cell(bucket, style=BUCKET_STYLE),
                f'<span class="ulp-bar" data-count="{count}" style="display:inline-block;width:{width}px;'
                f'height:0.85em;background:{ULP_BAR_COLOUR};vertical-align:middle"></span> {count}',
            )
        )
    header = (Cell("ULP distance", style=BUCKET_STYLE), "elements")
    return (
        f'<div class="ulp-histogram" style="margin:0.2em 1.5em 0.6em 0;max-width:{ULP_CHART_WIDTH}px">'
        f"<b>{esc(rounded.dtype)} ULP histogram"
        '</b><br><span style="color:#444;font-size:0.9em">elements per ULP distance to the rounded reference '
        "(bar length linear in the count)</span>"
        + table(header, rows, table_style=BARS_TABLE_STYLE, cell_style=BAR_CELL_STYLE)
        + "</div>"
    )


def _ulp_section(numerics: Numerics) -> pn.pane.HTML:
    """The ULP histograms as bar charts with the table beside them (below them when the window is narrow)."""
    charts = "".join(
        _ulp_bars(r)
        for r in (numerics.rounded_to_output, numerics.rounded_to_kernel)
        if r is not None and r.ulp.histogram
    )
    return html_pane(
        '<div style="display:flex;flex-wrap:wrap;align-items:flex-start;column-gap:1.5em">'
        f'<div style="display:flex;flex-wrap:wrap">{charts}</div>'
        f'<div style="flex:1 1 {ULP_TABLE_MIN_WIDTH}px">{_ulp_table(numerics)}</div></div>'
    )


def _body(analysis: Analysis, selection: Selection) -> list:
    numerics = analysis.numerics
    toggle = pn.widgets.RadioButtonGroup(
        label="colour scale", options=[LINEAR, LOG], value=LOG, width=160, css_classes=["colour-scale-toggle"]
    )
    # Two labelled buttons, not a checkbox: Bokeh's checkbox label is not part of its control (a click on the words
    # did nothing), a button is clicked wherever its words are.
    shared = pn.widgets.RadioButtonGroup(
        label="maps", options=SHARED_OPTIONS, value=False, width=300, css_classes=["shared-scale-toggle"]
    )
    floor = (f"FP64 noise floor: {numerics.fp64.reference_error.label}", numerics.fp64.reference_error)
    maps = error_maps(numerics)
    labelled = [(m.comparison.label, m.comparison) for m in maps]  # the tables list every comparison
    charted = [(m.title, m.comparison) for m in maps if not m.same_as_primary]  # the chart, like the maps
    return [
        heading(
            "|output - reference| per query head and channel",
            f"Output dtype {esc(analysis.admission.tensors['output'].dtype)}.",
        ),
        hint("Hover a cell for its exact values; click it for every number behind it."),
        pn.Row(pn.pane.HTML("<b>Colour scale</b>", width=100), toggle, shared),
        pn.panel(pn.bind(maps_panel, numerics, toggle, shared, selection), sizing_mode="stretch_width"),
        heading(
            "Per-head metrics",
            "Each comparison per query head (log y), with the FP64 noise floor of the primary reference "
            "(dashed): the primary reference's own rounding error against the same formula in FP64.",
        ),
        *per_head_charts(charted, floor),
        heading("Global metrics"),
        html_pane(comparison_rows([*labelled, (numerics.fp64.output_error.label, numerics.fp64.output_error), floor])),
        heading("ULP distance"),
        _ulp_section(numerics),
        collapsed(
            "Per-head values of every comparison",
            html_pane(per_head_rows([*labelled, floor], [a.kv_head for a in numerics.attention])),
        ),
    ]


# The per-head error view of one analysis (explains itself when no reference was computed).
build = explained(
    html_summary.NEEDS_NUMERICS, _body, "the |output - reference| maps and the per-head metric charts", "view-errors"
)
