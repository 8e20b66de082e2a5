"""Per-head error view: query head x channel maps of |output - reference| on one shared colour scale, and per-head metric charts with the FP64 noise floor; draws only numbers held by the analysis."""

from __future__ import annotations

from dataclasses import dataclass

import holoviews as hv
import panel as pn

from explorer.analysis.result import Analysis, Comparison, Numerics, Ulp
from explorer.views import html_summary
from explorer.views.common import (
    CONTINUOUS_CMAP,
    LINEAR,
    LOG,
    Field,
    Selection,
    collapsed,
    colour_scale,
    comparison_rows,
    explained,
    grid_map,
    heading,
    html_pane,
    note,
    per_cell,
    per_head_charts,
    per_head_rows,
    plot_pane,
    ulp_value,
)
from explorer.views.html_summary import esc, number, table

FULL_HOVER_CELLS = 65_536  # above this many cells per map, the hover carries the error only (keeps the payload small)
MAX_MAP_COLUMNS = 3  # maps per row; four maps are drawn two by two


@dataclass(frozen=True)
class ErrorMap:
    """One map: a comparison of the output against a reference, and the ULP distance shown beside it."""

    title: str
    comparison: Comparison
    ulp: Ulp
    ulp_label: str


def error_maps(numerics: Numerics) -> list[ErrorMap]:
    """The maps in display order: primary, rounded to the output dtype, rounded to the kernel dtype, narrowed-Q."""
    rounded = numerics.rounded_to_output
    ulp_label = f"ULP (output vs reference rounded to {rounded.dtype})"
    maps = [ErrorMap("primary reference", numerics.primary, rounded.ulp, ulp_label),
            ErrorMap(f"rounded to {rounded.dtype}" + (" (identity)" if rounded.identity else ""),
                     rounded.comparison, rounded.ulp, ulp_label)]
    kernel = numerics.rounded_to_kernel
    if kernel is not None:
        maps.append(ErrorMap(f"rounded to kernel {kernel.dtype}", kernel.comparison, kernel.ulp,
                             f"ULP (in {kernel.dtype} units, output rounded to {kernel.dtype})"))
    if numerics.narrowed_query is not None:
        maps.append(ErrorMap("narrowed-Q counterfactual", numerics.narrowed_query.comparison,
                             rounded.ulp, ulp_label))
    return maps


def _map(item: ErrorMap, kv_heads: list[int], scale, *, colorbar: bool) -> hv.Image:
    c = item.comparison
    fields = [Field("error", "|output - reference|", c.abs_error)]
    if c.abs_error.size <= FULL_HOVER_CELLS:
        fields = [Field("kv_head", "KV head", per_cell(kv_heads, c.abs_error.shape)),
                  Field("output", "output", c.actual), Field("reference", "reference", c.reference),
                  *fields, Field("ulp", item.ulp_label, item.ulp.distance, ulp_value)]
    return grid_map(c.abs_error, fields, title=item.title, colour_label="|output - reference|", xlabel="channel",
                    ylabel="query head", clim=scale.clim, logz=scale.logz, cmap=CONTINUOUS_CMAP, colorbar=colorbar)


def maps_panel(numerics: Numerics, mode: str) -> pn.Column:
    """Every error map side by side on one colour scale (`mode` LINEAR or LOG), zoom and pan linked."""
    maps = error_maps(numerics)
    scale = colour_scale([m.comparison.abs_error for m in maps], mode, "|output - reference|")
    kv_heads = [a.kv_head for a in numerics.attention]
    images = [_map(m, kv_heads, scale, colorbar=i == len(maps) - 1) for i, m in enumerate(maps)]
    reduced = ("" if maps[0].comparison.abs_error.size <= FULL_HOVER_CELLS else
               f" Over {FULL_HOVER_CELLS} cells per map the hover shows the error only.")
    columns = len(images) if len(images) <= MAX_MAP_COLUMNS else (len(images) + 1) // 2
    grid = pn.GridBox(*(plot_pane(image, linked_axes=True) for image in images), ncols=columns,
                      css_classes=["error-maps"], sizing_mode="stretch_width")
    return pn.Column(grid,
                     note(esc(scale.note + reduced), "colour-scale-note"), sizing_mode="stretch_width")


def _ulp_table(numerics: Numerics) -> str:
    rows = []
    for rounded in (numerics.rounded_to_output, numerics.rounded_to_kernel):
        if rounded is None:
            continue
        histogram = ", ".join(f"[{low}, {high}]: {count}" for low, high, count in rounded.ulp.histogram)
        rows.append((esc(rounded.label), esc(number(rounded.ulp.max)), esc(number(rounded.ulp.p99)),
                     esc(rounded.ulp.nonfinite_pairs), esc(histogram)))
    return table(("comparison", "max ULP", "p99 ULP", "nonfinite pairs", "histogram [low, high]: count"), rows,
                 css_class="ulp")


def _series(numerics: Numerics) -> list[tuple[str, Comparison]]:
    return [(m.title, m.comparison) for m in error_maps(numerics)]


def _body(analysis: Analysis) -> list:
    numerics = analysis.numerics
    toggle = pn.widgets.RadioButtonGroup(label="colour scale", options=[LINEAR, LOG], value=LOG, width=160,
                                         css_classes=["colour-scale-toggle"])
    floor = (f"FP64 noise floor: {numerics.fp64.reference_error.label}", numerics.fp64.reference_error)
    series = _series(numerics)
    labelled = [(c.label, c) for _, c in series]
    return [
        heading("|output - reference| per query head and channel",
                f"Output dtype {esc(analysis.admission.tensors['output'].dtype)}. One colour scale for all "
                "maps; hover a cell for its exact values."),
        pn.Row(pn.pane.HTML("<b>Colour scale</b>", width=100), toggle),
        pn.panel(pn.bind(maps_panel, numerics, toggle), sizing_mode="stretch_width"),
        heading("Per-head metrics",
                "Each comparison per query head (log y), with the FP64 noise floor of the primary reference "
                "(dashed): the primary reference's own rounding error against the same formula in FP64."),
        *per_head_charts(series, floor),
        heading("Global metrics"),
        html_pane(comparison_rows([*labelled, (numerics.fp64.output_error.label, numerics.fp64.output_error),
                                   (floor[0], floor[1])])),
        heading("ULP distance"), html_pane(_ulp_table(numerics)),
        collapsed("Per-head values of every comparison",
                  html_pane(per_head_rows([*labelled, floor], [a.kv_head for a in numerics.attention]))),
    ]


def build(analysis: Analysis, selection: Selection) -> pn.Column:
    """The per-head error view of one analysis (explains itself when no reference was computed)."""
    column = explained(analysis, html_summary.NEEDS_NUMERICS, lambda: _body(analysis),
                      "the |output - reference| maps and the per-head metric charts")
    column.css_classes = ["view-errors"]
    return column
