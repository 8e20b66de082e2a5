"""The views' common panes: the head Selection, text panes, status boxes, grid maps with hover.

Charts are in views/shared/charts.py, marks on a map in views/shared/marks.py, colour scales in views/shared/scales.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import holoviews as hv
import holoviews.plotting.bokeh
import numpy as np
import panel as pn
import param
from bokeh.models import BasicTicker, CustomJSHover, FixedTicker, HoverTool

from explorer.analysis.result import Analysis
from explorer.foundations.record import Record, record
from explorer.views.shared import html_summary, markup, scales

hv.Store.set_current_backend("bokeh")

MAP_HEIGHT = 260
MAP_MIN_WIDTH = 260
CONTINUOUS_CMAP = "viridis"
NAN_COLOUR = scales.NOT_COMPARED_COLOUR  # cells whose value is undefined (NaN, not compared)
MAP_FRAME_PIXELS = 75  # of a map's height, what its title and channel axis take (the rest holds the rows)
COLOUR_BAR_OUTLINE = "#999999"
# A browser without a GPU emulates WebGL: each figure compiles shaders and copies every frame to a canvas.
OUTPUT_BACKEND = "canvas"
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


# ---------------------------------------------------------------- text panes


def served() -> bool:
    """True inside a `panel serve` session (its document has a session context): where a thread or a button helps."""
    document = pn.state.curdoc
    return document is not None and document.session_context is not None


def plot_pane(obj, *, linked_axes: bool = False, **params) -> pn.pane.HoloViews:
    """A HoloViews object as a Panel pane drawn on a canvas (OUTPUT_BACKEND); axes linked only with `linked_axes`."""
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


def section(css_class: str, *parts) -> pn.Column:
    """A view's part as one full-width column (`css_class` names it for tests and exports)."""
    return pn.Column(*parts, sizing_mode="stretch_width", css_classes=[css_class])


def progress_line() -> tuple[pn.indicators.Progress, pn.pane.HTML]:
    """The progress bar of emulations computed off the page (hidden until they are) and the note beside it."""
    bar = pn.indicators.Progress(active=True, visible=False, width=240, css_classes=["emulation-progress"])
    return bar, note("", "emulation-progress-note")


def show_progress(bar: pn.indicators.Progress, beside: pn.pane.HTML, done: int, total: int) -> None:
    """`done` of `total` emulations computed, on a `progress_line`."""
    bar.param.update(active=False, max=total, value=done)
    beside.object = f"Computing emulations on the CPU: {done} of {total} done ..."


def explained(needs: str | None, body: Callable[[Analysis, Selection], list], what: str, css_class: str) -> Callable:
    """A view's builder(analysis, selection): the status box (when not analyzed, or when `what` it draws is
    missing), then `body(analysis, selection)` when it can."""

    def build(analysis: Analysis, selection: Selection) -> pn.Column:
        box = html_summary.explanation_html(analysis, needs, what)
        drawn = needs is None or html_summary.missing_text(analysis, needs) is None
        return section(css_class, *([html_pane(box)] if box else []), *(body(analysis, selection) if drawn else []))

    return build


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
    """Plot options for a hover tool showing `tooltips`, its formatters made afresh per render (per document)."""

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
    xlabel: str = "channel",
    ylabel: str = "query head",
    clim: tuple[float, float],
    cmap,
    logz: bool = False,
    colorbar: bool = True,
    height: int = MAP_HEIGHT,
    counts: bool = False,
    categories: Sequence[str] | None = None,
) -> hv.Image:
    """A rows x columns hv.Image coloured by `colour`; hover gives the cell's row, column and every field exactly.

    Row 0 on top; responsive (fixed-size figures inside the app's tabs never finish drawing). On a log scale zeros
    are ZERO_COLOUR, NaN is NAN_COLOUR. `counts`: whole-number colour-bar labels; `categories`: one per colour.
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
        min_width=MAP_MIN_WIDTH,
        responsive=True,
        height=height,
        yticks=scales.index_ticks(rows, height - MAP_FRAME_PIXELS),
    )


def continuous(scale: scales.ColourScale) -> dict:
    """grid_map's colour options for a continuous colour `scale`."""
    return {"clim": scale.clim, "logz": scale.logz, "cmap": CONTINUOUS_CMAP}


def integer_y_axis(plot, element) -> None:
    """A render hook: a count axis ticks whole numbers only (never 0.2, 0.4, ...); a fresh ticker per render."""
    for axis in plot.state.yaxis:
        axis.ticker = BasicTicker(min_interval=1)


def _colour_bar_ticks(ticks: Sequence[tuple[float, str]]):
    """A render hook putting `ticks` (value, label) on a map's colour bar (fresh models per render)."""

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


def collapsed(title: str, *objects) -> pn.Card:
    return pn.Card(*objects, title=title, collapsed=True, sizing_mode="stretch_width")


def per_cell(values: Sequence[int], shape: tuple[int, int]) -> np.ndarray:
    """A per-row integer label broadcast over the columns of a map (e.g. each query head's KV head)."""
    return np.broadcast_to(np.asarray(values, dtype=np.int32)[:, None], shape)
