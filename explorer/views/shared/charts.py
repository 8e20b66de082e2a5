"""Per-query-head charts: a marker per comparison, the noise floor dashed, one metric at a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import panel as pn

from explorer.analysis.result import Comparison
from explorer.views.shared import head_chart, markup
from explorer.views.shared.common import COMPACT_FONT, html_pane, note

CHART_HEIGHT = 280
CHART_WIDTH = 230  # a narrow chart still holds its axes and 8 upright head labels
# up to this many heads the axis labels of a half-width chart stand upright; more stand vertical
UPRIGHT_HEAD_LABELS = 8
FLOOR_COLOUR = "#7f7f7f"
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
SERIES_MARKERS = ("circle", "square", "triangle", "diamond", "inverted_triangle", "hex")
MARKER_SYMBOLS = {
    "circle": "\u25cf",
    "square": "\u25a0",
    "triangle": "\u25b2",
    "diamond": "\u25c6",
    "inverted_triangle": "\u25bc",
    "hex": "\u2b22",
}
METRICS = (("linf", "linf"), ("rmse", "rmse"), ("relative_l2", "relativeL2"))
MAX_INDEX_TICKS = 32  # a per-head chart labels every head up to this many, every k-th above


def head_ticks(heads: int, upright: int) -> tuple[list[int], bool]:
    """(ticks, vertical) of a per-head x axis: integer ticks only. Up to `upright` heads (what the chart's width holds
    side by side) every head upright; above, the labels stand vertical, which takes half the room: every head up to
    twice `upright` (and MAX_INDEX_TICKS), every k-th beyond, so neighbouring labels never touch."""
    room = min(2 * upright, MAX_INDEX_TICKS)
    step = -(-heads // room) if heads > upright else 1
    return list(range(0, heads, step)), heads > upright


def head_chart_pane(
    series: Sequence[head_chart.Series],
    *,
    title: str,
    ylabel: str,
    log: bool,
    upright: int = MAX_INDEX_TICKS,
    height: int = CHART_HEIGHT,
) -> pn.pane.HTML:
    """A per-query-head chart (inline SVG, no Bokeh figure) of `series`, one value per head each."""
    heads = len(series[0].values) if series else 0
    ticks, vertical = head_ticks(heads, upright)
    return html_pane(
        head_chart.head_chart(
            series,
            title=title,
            ylabel=ylabel,
            log=log,
            heads=heads,
            xticks=ticks,
            vertical_labels=vertical,
            height=height,
        )
    )


def per_head_values(per_head: Sequence, attribute: str) -> np.ndarray:
    """`attribute` of each head's entry (metrics, attention diagnostics) as float64, NaN for null."""
    return np.array([np.nan if (v := getattr(m, attribute)) is None else v for m in per_head], dtype=np.float64)


def metric_choice(metrics: Sequence[tuple[str, str]] = METRICS) -> pn.widgets.RadioButtonGroup:
    """The metric a per-head chart draws (one chart at a time: every figure costs the page a fraction of a second)."""
    return pn.widgets.RadioButtonGroup(
        options={metric: attribute for attribute, metric in metrics},
        value=metrics[0][0],
        css_classes=["metric-choice"],
        width=110 * len(metrics),
    )


def _per_head_chart(
    series: Sequence[tuple[str, Comparison]],
    floor: tuple[str, Comparison] | None,
    attribute: str,
    height: int,
    upright: int,
    colours: Mapping[str, str],
    markers: Mapping[str, str],
    compact: bool,
) -> list:
    """[log-y chart of one metric, the floor dashed; note naming what a log axis cannot draw (zero, null)]."""
    metric = dict(METRICS).get(attribute, attribute)
    drawn = [
        head_chart.Series(label, per_head_values(comparison.per_head, attribute), colours[label], markers[label])
        for label, comparison in series
    ]
    if floor is not None:
        values = per_head_values(floor[1].per_head, attribute)
        drawn.append(head_chart.Series(floor[0], values, FLOOR_COLOUR, marker=None, line="dashed"))
    # what a log axis cannot draw: exact zeros and nulls
    counts = [(s.label, int(np.sum(s.values == 0)), int(np.sum(np.isnan(s.values)))) for s in drawn]
    hidden = [f"{markup.esc(label)}: {zeros} zero, {nulls} null" for label, zeros, nulls in counts if zeros or nulls]
    hidden_note = (
        f"Not drawn on the log axis ({metric}; the tables list every value): " + "; ".join(hidden) + "."
        if hidden
        else f"Every {metric} value is positive and drawn."
    )
    chart = head_chart_pane(
        drawn, title=f"{metric} per query head", ylabel=metric, log=True, upright=upright, height=height
    )
    if compact and not hidden:  # the overview's cells: a note only when some value is not drawn, in smaller type
        return [chart]
    shown = f'<span style="font-size:{COMPACT_FONT}">{hidden_note}</span>' if compact else hidden_note
    return [chart, note(shown, "hidden-values")]


def per_head_charts(
    series: Sequence[tuple[str, Comparison]],
    floor: tuple[str, Comparison] | None = None,
    *,
    metrics: Sequence[tuple[str, str]] = METRICS,
    height: int = CHART_HEIGHT,
    upright: int = MAX_INDEX_TICKS,
    choice: pn.widgets.RadioButtonGroup | None = None,
    compact: bool = False,
) -> list:
    """A per-head chart of every comparison in `series`, the noise floor dashed: [legend, chart with its note].

    With several `metrics` it draws the one picked in `choice` (its own selector unless the caller shares one).
    Head labels stand upright up to `upright` heads. `compact`: a smaller legend, no note when all are drawn.
    """
    labels = [label for label, _ in series]
    colours = {label: SERIES_COLOURS[i % len(SERIES_COLOURS)] for i, label in enumerate(labels)}
    markers = {label: SERIES_MARKERS[i % len(SERIES_MARKERS)] for i, label in enumerate(labels)}
    entries = [
        f'<span style="color:{colours[label]}">{MARKER_SYMBOLS[markers[label]]}</span> {markup.esc(label)}'
        for label in labels
    ]
    if floor is not None:
        entries.append(f'<span style="color:{FLOOR_COLOUR}">- - -</span> {markup.esc(floor[0])}')
    size = f"font-size:{COMPACT_FONT};line-height:1.3" if compact else ""
    legend = html_pane(
        f'<div class="chart-legend" style="{size}">'
        + "".join(f'<span style="display:inline-block;margin-right:1.2em">{entry}</span>' for entry in entries)
        + "</div>",
        margin=(0, 5) if compact else (5, 10),
    )

    def draw(attribute: str) -> pn.Column:
        return pn.Column(
            *_per_head_chart(series, floor, attribute, height, upright, colours, markers, compact),
            sizing_mode="stretch_width",
        )

    if len(metrics) == 1:
        return [legend, draw(metrics[0][0])]
    own = choice is None
    choice = choice or metric_choice(metrics)
    chart = pn.panel(pn.bind(draw, choice), sizing_mode="stretch_width")
    return [pn.Row(choice, legend, sizing_mode="stretch_width") if own else legend, chart]
