"""Shared drawing pieces of the views; never computes a reported number.

Shared drawing pieces of the views: the head Selection, status boxes, grid maps with exact hover and per-head
log charts; never computes a reported number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import holoviews as hv
import holoviews.plotting.bokeh
import numpy as np
import panel as pn
import param
from bokeh.models import BasicTicker, ColumnDataSource, CustomJSHover, FixedTicker, HoverTool

from explorer.analysis.result import Analysis, Comparison, Metrics
from explorer.foundations.formatting import short_number
from explorer.foundations.record import Record, record
from explorer.views.shared import head_chart, html_summary, markup, scales

hv.Store.set_current_backend("bokeh")

MAP_HEIGHT = 260
MAP_MIN_WIDTH = 260
CHART_HEIGHT = 280
CHART_WIDTH = 230  # a narrow chart still holds its axes and 8 upright head labels
# up to this many heads the axis labels of a half-width chart stand upright; more stand vertical
UPRIGHT_HEAD_LABELS = 8
CONTINUOUS_CMAP = "viridis"
NAN_COLOUR = scales.NOT_COMPARED_COLOUR  # cells whose value is undefined (NaN, not compared)
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
LINEAR, LOG = "linear", "log"
MAX_INDEX_TICKS = 32  # a per-head chart labels every head up to this many, every k-th above
MAP_FRAME_PIXELS = 75  # of a map's height, what its title and channel axis take (the rest holds the rows)
COLOUR_BAR_OUTLINE = "#999999"
# A browser without a GPU emulates WebGL: each figure compiles shaders and copies every frame to a canvas.
OUTPUT_BACKEND = "canvas"
SELECTED_COLOUR, SELECTED_LINE_WIDTH = "#e8175d", 3  # the outline of the clicked map cell
COMPACT_FONT = "0.85em"  # legends, hints and captions of compact cells
HINT_CLASS = "view-hint"  # instructions for the live app: an export leaves them out
IMAGE_COLUMN = "image"  # the data-source column HoloViews gives an image's colour values


class Selection(param.Parameterized):
    """What the user picked that more than one view follows; the shell mirrors it in the URL."""

    head = param.Integer(default=0, bounds=(0, None), doc="Query head shown by the per-head views.")
    element = param.Tuple(
        default=None,
        length=2,
        allow_None=True,
        doc="(query head, channel) of the output element clicked in a map, or None.",
    )
    tab = param.String(default="", doc="Slug of a view a link asked to open (the shell switches to it).")
    emulation = param.Dict(
        default={},
        doc="Emulation parameters set away from their defaults, by their URL names "
        "(blocks, partitionTokens, partialDType).",
    )


def selectable(pane: pn.pane.HoloViews, selection: Selection) -> pn.pane.HoloViews:
    """Clicking a cell of this query head x channel map pane sets `selection.element` to (head, channel); the
    selected cell is outlined on the map (a glyph of the map's own figure whose data follows the selection: the map
    does not move, and no overlay is built; an hv overlay cost each session 0.15 s of server time)."""
    image = pane.object
    rows, columns = image.dimension_values(2, flat=False).shape
    sources: list[ColumnDataSource] = []  # the outline's data in each document the map is drawn into

    def cells(element) -> dict[str, list[float]]:
        inside = element is not None and 0 <= element[0] < rows and 0 <= element[1] < columns
        return {
            "left": [element[1] - 0.5] if inside else [],
            "right": [element[1] + 0.5] if inside else [],
            "top": [element[0] - 0.5] if inside else [],
            "bottom": [element[0] + 0.5] if inside else [],
        }

    def clicked(x, y) -> None:
        if x is None or y is None:
            return
        head, channel = round(y), round(x)
        if 0 <= head < rows and 0 <= channel < columns:
            selection.element = (head, channel)

    def add_outline(plot, element) -> None:
        source = ColumnDataSource(cells(selection.element))
        plot.state.quad(
            left="left",
            right="right",
            top="top",
            bottom="bottom",
            source=source,
            fill_alpha=0,
            line_color=SELECTED_COLOUR,
            line_width=SELECTED_LINE_WIDTH,
        )
        sources.append(source)

    def redraw(event: param.parameterized.Event) -> None:
        for source in sources:
            set_data(source, cells(event.new))

    hv.streams.Tap(source=image).add_subscriber(clicked)
    selection.param.watch(redraw, "element")
    pane.object = image.opts(hooks=[*image.opts.get().kwargs.get("hooks", []), add_outline])
    return pane


def set_data(source: ColumnDataSource, data: dict) -> None:
    """Give a figure's data source new data: at once, or on the next tick of its server session's loop when it has
    one (a session's callbacks run on threads that do not hold the document's lock; Bokeh allows only
    add_next_tick_callback from them)."""
    document = source.document
    if document is None or document.session_context is None:
        source.data = data
    else:
        document.add_next_tick_callback(lambda: setattr(source, "data", data))


# ---------------------------------------------------------------- text panes


def served() -> bool:
    """True inside a `panel serve` session (its document has a session context): where a thread or a button helps."""
    document = pn.state.curdoc
    return document is not None and document.session_context is not None


def plot_pane(obj, *, linked_axes: bool = False, **params) -> pn.pane.HoloViews:
    """A HoloViews object as a Panel pane.

    Axes are linked only between panes created with `linked_axes=True` that share a
    dimension name (Panel links such panes across a layout); other plots keep their own ranges.
    Plots draw on a 2D canvas (OUTPUT_BACKEND), not HoloViews' default WebGL.
    """
    params.setdefault("sizing_mode", "stretch_width")  # a plot of fixed pixel size passes "fixed"
    return pn.pane.HoloViews(
        obj.opts(backend_opts={"plot.output_backend": OUTPUT_BACKEND}, clone=True), linked_axes=linked_axes, **params
    )


def html_pane(markup: str, **params) -> pn.pane.HTML:
    return pn.pane.HTML(markup, sizing_mode="stretch_width", **params)


def heading(text: str, note: str = "") -> pn.pane.HTML:
    tail = f'<p style="margin:0.1em 0 0.3em 0;color:#444">{note}</p>' if note else ""
    return html_pane(f'<h3 style="margin:0.6em 0 0.1em 0">{markup.esc(text)}</h3>{tail}')


def note_markup(markup: str, css_class: str = "view-note") -> str:
    return f'<p class="{css_class}" style="color:#444;margin:0.2em 0">{markup}</p>'


def note(markup: str, css_class: str = "view-note") -> pn.pane.HTML:
    return html_pane(note_markup(markup, css_class))


def hint(markup: str) -> pn.pane.HTML:
    """An instruction about the live app (click, hover, choose): exports leave it out (HINT_CLASS)."""
    return html_pane(
        f'<p style="color:#555;margin:0;font-size:{COMPACT_FONT}">{markup}</p>',
        css_classes=[HINT_CLASS],
        margin=(0, 10),
    )


def state_markup(markup: str, css_class: str) -> str:
    """An explicit, prominent state line such as 'all bits equal' (never an empty area)."""
    return (
        f'<div class="{css_class}" style="padding:0.6em 0.9em;border:1px solid #b9c6d6;'
        f'background:#eef3f8;font-size:1.05em;margin:0.3em 0">{markup}</div>'
    )


def state(markup: str, css_class: str) -> pn.pane.HTML:
    return html_pane(state_markup(markup, css_class))


def explained(analysis: Analysis, needs: str | None, body: Callable[[], list], what: str = "") -> pn.Column:
    """A view: the status box (when not analyzed, or when `what` it draws is missing), then `body()` when it can."""
    parts: list = []
    box = html_summary.explanation_html(analysis, needs, what)
    if box:
        parts.append(html_pane(box))
    if needs is None or html_summary.missing_text(analysis, needs) is None:
        parts.extend(body())
    return pn.Column(*parts, sizing_mode="stretch_width")


# ---------------------------------------------------------------- hover formatting (in the browser)


def exact_number() -> CustomJSHover:
    """A float as JavaScript prints it: shortest round-trip digits, like the report's JSON."""
    return CustomJSHover(code="return Number.isNaN(value) ? 'NaN' : String(value)")


def cell_index() -> CustomJSHover:
    """An image coordinate ($x / $y) as the integer index of the cell under the cursor."""
    return CustomJSHover(code="return String(Math.round(value))")


def hex_pattern(bits: int) -> CustomJSHover:
    return CustomJSHover(code=f"return '0x' + (value >>> 0).toString(16).padStart({bits // 4}, '0')")


def named(names: Sequence[str]) -> CustomJSHover:
    """An integer code shown by its name."""
    return CustomJSHover(code=f"const names = {list(names)!r}; return names[value] ?? String(value)")


def ulp_value() -> CustomJSHover:
    return CustomJSHover(code="return value < 0 ? 'undefined (nonfinite pair or ineligible head)' : String(value)")


def hover(tooltips: Sequence[tuple[str, str]], formatters: Mapping[str, Callable[[], CustomJSHover]]) -> dict:
    """Plot options for a hover tool showing `tooltips`.

    The formatters are made afresh at every render by a hook (a Bokeh model belongs
    to one document only, and a view may be rendered into several: app, export).
    """

    def add_formatters(plot, element) -> None:
        own = plot.handles.get("hover")
        tools = [own] if isinstance(own, HoverTool) else [t for t in plot.state.tools if isinstance(t, HoverTool)]
        for tool in tools:
            tool.formatters = {field: make() for field, make in formatters.items()}

    return {"tools": ["hover"], "hover_tooltips": list(tooltips), "hooks": [add_formatters]}


@record
class Field(Record):
    """One hover line of a grid map: a per-cell array, its label and its formatter factory."""

    name: str
    label: str
    values: np.ndarray
    formatter: Callable[[], CustomJSHover] = exact_number


def grid_map(
    colour: np.ndarray,
    fields: Sequence[Field],
    *,
    title: str,
    colour_label: str,
    xlabel: str,
    ylabel: str,
    clim: tuple[float, float],
    cmap,
    logz: bool = False,
    colorbar: bool = True,
    height: int = MAP_HEIGHT,
    counts: bool = False,
    categories: Sequence[str] | None = None,
) -> hv.Image:
    """A rows x columns hv.Image coloured by `colour`; hover gives the cell's row, column and every field exactly.

    Row 0 is at the top; the map stretches to the available width (responsive: fixed-size
    figures inside the app's tabs never finish drawing). `colour` is drawn only; the numbers
    shown are the fields'. On a log scale exact zeros are drawn in ZERO_COLOUR and NaN in NAN_COLOUR, both apart
    from the lowest colour. The colour bar's labels never repeat (`counts`: whole numbers only); with
    `categories`, `colour` holds category indices, `cmap` one colour each, and the bar names them.
    """
    rows, columns = colour.shape
    # A field showing the colour array itself is sent once, as the drawn image column (not twice).
    shared = next((f for f in fields if f.values is colour and f.label == colour_label), None)
    others = [f for f in fields if f is not shared]
    vdims = [hv.Dimension(shared.name if shared is not None else "colour", label=colour_label)] + [
        hv.Dimension(f.name, label=f.label) for f in others
    ]
    image = hv.Image(
        (np.arange(columns), np.arange(rows), colour, *(f.values for f in others)),
        kdims=[xlabel, ylabel],
        vdims=vdims,
        bounds=(-0.5, -0.5, columns - 0.5, rows - 0.5),
    )
    columns_of = {f.name: IMAGE_COLUMN if f is shared else f.name for f in fields}
    tooltips = [(ylabel, "$y{index}"), (xlabel, "$x{index}")] + [
        (f.label, f"@{{{columns_of[f.name]}}}{{custom}}") for f in fields
    ]
    formatters = {"$x": cell_index, "$y": cell_index, **{f"@{{{columns_of[f.name]}}}": f.formatter for f in fields}}
    size = {
        "min_width": MAP_MIN_WIDTH,
        "responsive": True,
        "height": height,
        "yticks": scales.index_ticks(rows, height - MAP_FRAME_PIXELS),
    }
    hovered = hover(tooltips, formatters)
    if colorbar:
        ticks = (
            tuple(enumerate(categories))
            if categories is not None
            else scales.colour_bar_ticks(*clim, log=logz, integer=counts)
        )
        hovered["hooks"] = [*hovered["hooks"], _colour_bar_ticks(ticks)]
    clipping = {"NaN": NAN_COLOUR, **({"min": scales.ZERO_COLOUR} if logz else {})}
    return image.opts(
        title=title,
        cmap=cmap,
        clim=clim,
        logz=logz,
        colorbar=colorbar,
        invert_yaxis=True,
        clipping_colors=clipping,
        **hovered,
        default_tools=["pan", "wheel_zoom", "box_zoom", "reset", "save"],
        **size,
    )


def integer_y_axis(plot, element) -> None:
    """A render hook: a count axis ticks whole numbers only (never 0.2, 0.4, ...); a fresh ticker per render."""
    for axis in plot.state.yaxis:
        axis.ticker = BasicTicker(min_interval=1)


def _colour_bar_ticks(ticks: Sequence[tuple[float, str]]):
    """A render hook putting `ticks` (value, label) on a map's colour bar (fresh models per render: a Bokeh model
    belongs to one document)."""

    def hook(plot, element) -> None:
        bar = plot.handles.get("colorbar")
        if bar is not None:
            bar.ticker = FixedTicker(ticks=[value for value, _ in ticks])
            bar.major_label_overrides = dict(ticks)
            bar.bar_line_color = COLOUR_BAR_OUTLINE  # a white category or zero stays visible on the bar

    return hook


def ulp_map(
    distance: np.ndarray,
    fields: Sequence[Field],
    *,
    title: str,
    what: str,
    xlabel: str = "channel",
    ylabel: str = "query head",
    height: int = MAP_HEIGHT,
) -> hv.Image:
    """A map of ULP distances on the discrete scale of `scales.ULP_BUCKETS`: 0 in its own colour, each bucket
    named on the colour bar, undefined distances (< 0) in NAN_COLOUR; `what` names the distance."""
    codes = scales.ulp_bucket_codes(distance)
    shown = scales.ulp_buckets_shown(codes)
    labels = [scales.ulp_bucket_label(index) for index in range(shown)]
    return grid_map(
        codes,
        [Field("ulp_bucket", what, codes, lambda: named(labels)), *fields],
        title=title,
        colour_label=what,
        xlabel=xlabel,
        ylabel=ylabel,
        clim=(-0.5, shown - 0.5),
        cmap=list(scales.ULP_BUCKET_COLOURS[:shown]),
        height=height,
        categories=labels,
    )


# ---------------------------------------------------------------- continuous colour scales


@record
class ColourScale(Record):
    """Display limits of one shared colour scale, and the sentence saying how it was chosen."""

    clim: tuple[float, float]
    logz: bool
    note: str


def colour_scale(arrays: Sequence[np.ndarray], mode: str, what: str) -> ColourScale:
    """One colour range over every finite value of `arrays` (presentation only).

    Log mode starts at the smallest positive value; exact zeros are drawn white, apart from every colour of the
    scale (grid_map).
    """
    finite = np.concatenate([a[np.isfinite(a)].ravel() for a in arrays]) if arrays else np.empty(0)
    undefined = f" Grey cells: {what} undefined (NaN)."
    if finite.size == 0:
        return ColourScale((0.0, 1.0), False, f"No finite {what} to colour.{undefined}")
    high = float(finite.max())
    positive = finite[finite > 0]
    if mode == LOG and positive.size and positive.min() < high:
        low = float(positive.min())
        return ColourScale(
            (low, high),
            True,
            f"Log colour scale from the smallest positive {what} ({short_number(low)}) to the largest "
            f"({short_number(high)}); exact zeros are white.{undefined}",
        )
    low = float(finite.min())
    if low == high:
        return ColourScale(
            (low, low + 1.0), False, f"Every finite {what} equals {short_number(low)} (lowest colour).{undefined}"
        )
    fallback = f"A log scale needs two distinct positive values of {what}; drawn linear. " if mode == LOG else ""
    return ColourScale(
        (low, high),
        False,
        f"{fallback}Linear colour scale from {short_number(low)} to {short_number(high)}.{undefined}",
    )


# ---------------------------------------------------------------- per-head charts


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


def _metric_values(per_head: Sequence[Metrics], attribute: str) -> np.ndarray:
    return np.array(
        [np.nan if getattr(m, attribute) is None else getattr(m, attribute) for m in per_head], dtype=np.float64
    )


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
    """[log-y chart of one metric: every comparison's per-head values as markers, the floor dashed; note naming
    the values a log axis cannot draw (zero or null; `compact`: only when there are some)]."""
    metric = dict(METRICS).get(attribute, attribute)
    drawn = [
        head_chart.Series(label, _metric_values(comparison.per_head, attribute), colours[label], markers[label])
        for label, comparison in series
    ]
    if floor is not None:
        drawn.append(
            head_chart.Series(
                floor[0], _metric_values(floor[1].per_head, attribute), FLOOR_COLOUR, marker=None, line="dashed"
            )
        )
    undrawn = {s.label: _undrawn(s.values) for s in drawn}
    hidden = [
        f"{markup.esc(label)}: {zeros} zero, {nulls} null"
        for label, (zeros, nulls) in undrawn.items()
        if zeros or nulls
    ]
    hidden_note = (
        f"Not drawn on the log axis ({metric}; the tables list every value): " + "; ".join(hidden) + "."
        if hidden
        else f"Every {metric} value is positive and drawn."
    )
    chart = head_chart_pane(
        drawn, title=f"{metric} per query head", ylabel=metric, log=True, upright=upright, height=height
    )
    if compact:  # the overview's cells: only when some value is not drawn, in the cells' smaller type
        return (
            [chart, note(f'<span style="font-size:{COMPACT_FONT}">{hidden_note}</span>', "hidden-values")]
            if hidden
            else [chart]
        )
    return [chart, note(hidden_note, "hidden-values")]


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
    """A per-head chart of every comparison in `series`, with the noise floor dashed: [legend (beside its own
    selector), chart with its note].

    With several `metrics` the chart draws the one picked in `choice` (a fresh selector above the chart unless
    the caller shares one between charts); the tables beside the charts list every metric. Head labels stand
    upright up to `upright` heads (a full-width chart holds every head of common models), vertical above.
    `compact`: a smaller legend, and no note when every value is drawn (the overview's cells).
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


def _undrawn(values: np.ndarray) -> tuple[int, int]:
    """(exact zeros, nulls) among per-head values: what a log axis cannot draw."""
    return int(np.sum(values == 0)), int(np.sum(np.isnan(values)))


def comparison_rows(series: Sequence[tuple[str, Comparison]]) -> str:
    """Global metric table of several comparisons, each labelled as the result labels it."""
    rows = []
    for label, comparison in series:
        rows.append([markup.esc(label), "all heads", *html_summary.metric_cells(comparison.global_metrics)])
        if comparison.eligible_global is not None:
            rows.append(
                [markup.esc(label), "eligible heads only", *html_summary.metric_cells(comparison.eligible_global)]
            )
    return markup.table(("comparison", "heads", *html_summary.METRIC_HEADER), rows, css_class="global-metrics")


def per_head_rows(series: Sequence[tuple[str, Comparison]], kv_heads: Sequence[int]) -> str:
    """Per-head metric table of several comparisons (one row per head and comparison)."""
    rows = []
    for h, kv in enumerate(kv_heads):
        for label, comparison in series:
            rows.append([str(h), str(kv), markup.esc(label), *html_summary.metric_cells(comparison.per_head[h])])
    return markup.table(
        ("query head", "KV head", "comparison", *html_summary.METRIC_HEADER), rows, css_class="per-head-metrics"
    )


def collapsed(title: str, *objects) -> pn.Card:
    return pn.Card(*objects, title=title, collapsed=True, sizing_mode="stretch_width")


def per_cell(values: Sequence[int], shape: tuple[int, int]) -> np.ndarray:
    """A per-row integer label broadcast over the columns of a map (e.g. each query head's KV head)."""
    return np.broadcast_to(np.asarray(values, dtype=np.int32)[:, None], shape)
