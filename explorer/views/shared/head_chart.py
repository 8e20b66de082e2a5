"""Per-query-head charts as inline SVG markup (markers and lines, log or linear y); no UI library.

A chart of a few dozen points needs no Bokeh figure (each costs the page about 0.2 s): the SVG is drawn with the
page's text, the same in the app and in exports, the full value in each marker's tooltip. x positions are
percentages, y positions pixels, so text and markers never stretch with the width.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from explorer.foundations.formatting import full_number as number
from explorer.foundations.formatting import short_number
from explorer.foundations.record import Record, record
from explorer.views.shared.markup import esc

PLOT_TOP = 8  # px above the plot frame (room for a marker at the top value)
X_AXIS_HEIGHT = 38  # px below the frame: upright head labels and the axis label
X_AXIS_HEIGHT_VERTICAL = 48  # the same with head labels standing vertical (two-digit heads)
RIGHT_MARGIN = 10  # px right of the frame: its border and a marker at the last head stay whole (drawn overflowing)
Y_AXIS_WIDTH = 78  # px left of the frame: tick labels such as -1.235e+04 and the rotated axis label
VALUE_PADDING = 0.06  # fraction of the frame's height kept free above the largest and below the smallest value
MAX_Y_TICKS = 6  # y tick labels at most (every k-th decade on a wide log axis)
NICE_STEPS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)  # linear tick steps in powers of ten: the first that fits is used
FIXED_NOTATION_STEP, FIXED_NOTATION_LIMIT = 1e-4, 1e6  # linear ticks print as 12.5 within these, else as 1.25e+07
FONT = 'font-family="sans-serif" font-size="11" fill="#333"'
FRAME_COLOUR = "#9a9a9a"
GRID_COLOUR = "#e8e8e8"
DASH_PATTERN = "6 4"
# Marker outlines centred on (0, 0), about 9 px across; "dot" is a value a line-only series cannot join.
MARKER_PATHS = {
    "circle": "M-4.5,0a4.5,4.5 0 1,0 9,0a4.5,4.5 0 1,0 -9,0z",
    "square": "M-4,-4h8v8h-8z",
    "triangle": "M0,-5.2L4.6,3.4H-4.6z",
    "diamond": "M0,-5.5L5,0L0,5.5L-5,0z",
    "inverted_triangle": "M0,5.2L4.6,-3.4H-4.6z",
    "hex": "M-4.6,0L-2.3,-4H2.3L4.6,0L2.3,4H-2.3z",
    "dot": "M-2.5,0a2.5,2.5 0 1,0 5,0a2.5,2.5 0 1,0 -5,0z",
}
SLOT_SHARE = 0.9  # of a head's slot, the width over which its markers stand side by side
MARKER_GROWTH = 0.15  # each later series' markers are this much larger than the one before
OUTLINE_WIDTH = 1.0  # px of white outline around a marker: it stays apart from a marker beneath
HOVER_STYLE = "<style>.head-point:hover path{stroke:#000;stroke-width:1.5}.head-point{cursor:default}</style>"


@record
class Series(Record):
    """One series of a chart: a value per query head (NaN for null), drawn as markers, a line, or both."""

    label: str
    values: np.ndarray
    colour: str
    marker: str | None = "circle"  # a MARKER_PATHS key; None: the line only (a dot where a value has no neighbour)
    line: str | None = None  # None, "solid" or "dashed"


@record
class Axis(Record):
    """A y axis: maps a value to a fraction of the frame's height and names its ticks."""

    low: float  # positions (log10 of the value on a log axis) at the bottom and top of the range
    high: float
    log: bool
    ticks: tuple[tuple[float, str], ...]  # (position: log10 of the value on a log axis, label)

    def fraction(self, value: float) -> float:
        """Where a value sits, 0 at the bottom of the frame and 1 at the top."""
        return self.position_fraction(math.log10(value) if self.log else value)

    def position_fraction(self, position: float) -> float:
        # the ratio first: multiplying a subnormal difference by the padding rounded it (a marker left the frame)
        return VALUE_PADDING + (1 - 2 * VALUE_PADDING) * ((position - self.low) / (self.high - self.low))


def drawable(values: np.ndarray, log: bool) -> np.ndarray:
    """Which values an axis can draw: finite ones, and on a log axis only positive ones."""
    finite = np.isfinite(values)
    return finite & (values > 0) if log else finite


def log_axis(values: np.ndarray) -> Axis:
    """Whole decades around the values, a tick at every decade (every k-th when there are many)."""
    exponents = np.log10(values)
    low, high = math.floor(float(exponents.min())), math.ceil(float(exponents.max()))
    if high == low:
        high += 1
    step = max(1, math.ceil((high - low) / (MAX_Y_TICKS - 1)))
    low = high - step * math.ceil((high - low) / step)  # both ends of the axis carry a label
    ticks = tuple((float(e), f"1e{e:+03d}") for e in range(low, high + 1, step))  # 1e-05 (no underflow at 1e-324)
    return Axis(float(low), float(high), True, ticks)


SMALLEST_STEP = math.ulp(0.0)  # 5e-324: a tick step below it is 0.0


def linear_axis(values: np.ndarray) -> Axis:
    """Round ticks (1, 2 or 5 times a power of ten apart), at most MAX_Y_TICKS of them, spanning the values."""
    low, high = float(values.min()), float(values.max())
    if low == high:
        spread = abs(low) * 0.1 or 1.0
        low, high = low - spread, high + spread
    span = (high - low) / (MAX_Y_TICKS - 1)  # 0.0 when the values are subnormals a few apart (the division underflows)
    power = max(10.0 ** math.floor(math.log10(span)), SMALLEST_STEP) if span > 0 else SMALLEST_STEP
    for step in (s * power for s in NICE_STEPS):
        first, last = math.floor(low / step), math.ceil(high / step)
        if last - first < MAX_Y_TICKS:
            break
    ticks = tuple((k * step + 0.0, _tick_label(k * step + 0.0, step)) for k in range(first, last + 1))
    return Axis(first * step, last * step, False, ticks)


def _tick_label(value: float, step: float) -> str:
    """A linear tick in the step's own decimals (2.0, 2.5), or 4 significant digits when very large or fine."""
    if step >= FIXED_NOTATION_STEP and abs(value) < FIXED_NOTATION_LIMIT:
        return f"{value:.{max(0, -math.floor(math.log10(step)))}f}"
    return short_number(value)


def head_chart(
    series: Sequence[Series],
    *,
    title: str,
    ylabel: str,
    log: bool,
    heads: int,
    xticks: Sequence[int],
    vertical_labels: bool,
    height: int,
) -> str:
    """The chart as HTML: the title, then a fixed-width y axis beside a plot that fills the rest of the row.

    Undrawable values (null, infinite, and zero or negative on a log axis) are left out; the caller says which.
    Every marker carries `data-series`, `data-head` and `data-value` (the full value) and a tooltip.
    """
    shown = [v[drawable(v, log)] for v in (s.values for s in series)]
    caption = (
        f'<div class="head-chart-title" style="font-weight:bold;margin:0.2em 0 0.1em {Y_AXIS_WIDTH}px">'
        f"{esc(title)}</div>"
    )
    if heads == 0 or not any(v.size for v in shown):
        return (
            f'<div class="head-chart">{caption}<p class="head-chart-empty" style="color:#444">'
            f"No value of {esc(ylabel)} can be drawn{' on a log axis' if log else ''}.</p></div>"
        )
    axis = (log_axis if log else linear_axis)(np.concatenate(shown))
    below = X_AXIS_HEIGHT_VERTICAL if vertical_labels else X_AXIS_HEIGHT
    frame = height - PLOT_TOP - below

    def y(value: float) -> str:
        return f"{PLOT_TOP + frame * (1 - axis.fraction(value)):.1f}"

    def tick_y(position: float) -> str:
        return f"{PLOT_TOP + frame * (1 - axis.position_fraction(position)):.1f}"

    def x(head: int, offset: float = 0.0) -> str:
        return f"{100 * (head + 0.5) / heads + offset:.4f}%"

    y_axis = [
        f'<text x="{Y_AXIS_WIDTH - 6}" y="{tick_y(value)}" dy="0.35em" text-anchor="end" {FONT}>{esc(label)}</text>'
        for value, label in axis.ticks
    ]
    y_axis.append(
        f'<text transform="rotate(-90)" x="{-(PLOT_TOP + frame / 2):.1f}" y="12" text-anchor="middle" '
        f"{FONT}>{esc(ylabel)}{' (log)' if log else ''}</text>"
    )
    plot = [HOVER_STYLE]
    plot += [
        f'<line x1="0" x2="100%" y1="{tick_y(value)}" y2="{tick_y(value)}" stroke="{GRID_COLOUR}"/>'
        for value, _ in axis.ticks
    ]
    plot += [
        f'<line x1="{x(h)}" x2="{x(h)}" y1="{PLOT_TOP}" y2="{PLOT_TOP + frame}" stroke="{GRID_COLOUR}"/>'
        for h in xticks
    ]
    plot.append(f'<rect x="0" y="{PLOT_TOP}" width="100%" height="{frame}" fill="none" stroke="{FRAME_COLOUR}"/>')
    offsets = marker_offsets(series, heads)
    for index in reversed(range(len(series))):  # the first series (the primary) is drawn last: on top
        plot += _series_marks(series[index], index, offsets[index], x, y, log)
    label_y = PLOT_TOP + frame + 6
    plot += [
        (
            f'<text x="{x(h)}" y="{label_y}" style="writing-mode:vertical-rl" {FONT}>{h}</text>'
            if vertical_labels
            else f'<text x="{x(h)}" y="{label_y + 10}" text-anchor="middle" {FONT}>{h}</text>'
        )
        for h in xticks
    ]
    plot.append(f'<text x="50%" y="{height - 4}" text-anchor="middle" {FONT}>query head</text>')
    return (
        f'<div class="head-chart">{caption}<div style="display:flex;align-items:flex-start">'
        f'<svg class="head-chart-axis" width="{Y_AXIS_WIDTH}" height="{height}" style="flex:none">'
        f"{''.join(y_axis)}</svg>"
        f'<svg class="head-chart-plot" role="img" aria-label="{esc(title)}" width="100%" height="{height}" '
        f'style="flex:1 1 auto;min-width:0;overflow:visible;margin-right:{RIGHT_MARGIN}px">{"".join(plot)}</svg>'
        "</div></div>"
    )


def _joined(ok: np.ndarray) -> np.ndarray:
    """Which drawable heads a line reaches (a drawable neighbour on either side)."""
    left = np.concatenate([[False], ok[:-1]])
    right = np.concatenate([ok[1:], [False]])
    return ok & (left | right)


def marker_offsets(series: Sequence[Series], heads: int) -> list[float]:
    """Each series' offset from its head's centre (% of the width): markers side by side, equal values apart."""
    marked = [index for index, s in enumerate(series) if s.marker is not None]
    step = SLOT_SHARE * 100 / max(heads, 1) / max(len(marked), 1)
    offsets = [0.0] * len(series)
    for rank, index in enumerate(marked):
        offsets[index] = (rank - (len(marked) - 1) / 2) * step
    return offsets


def _series_marks(s: Series, index: int, offset: float, x, y, log: bool) -> list[str]:
    """Lines between drawable neighbours, then a marker per drawable head (later series larger: both show)."""
    ok = drawable(s.values, log)
    scale = 1 + MARKER_GROWTH * index
    marks = []
    if s.line is not None:
        dash = f' stroke-dasharray="{DASH_PATTERN}"' if s.line == "dashed" else ""
        marks += [
            f'<line x1="{x(h, offset)}" y1="{y(s.values[h])}" x2="{x(h + 1, offset)}" y2="{y(s.values[h + 1])}" '
            f'stroke="{s.colour}" stroke-width="2"{dash}/>'
            for h in range(len(s.values) - 1)
            if ok[h] and ok[h + 1]
        ]
    path = MARKER_PATHS[s.marker or "dot"]
    shown = ok if s.marker is not None or s.line is None else ok & ~_joined(ok)
    for h in np.flatnonzero(shown):
        value = float(s.values[h])
        marks.append(
            f'<g class="head-point" data-series="{esc(s.label)}" data-head="{h}" '
            f'data-value="{esc(number(value))}"><title>{esc(s.label)}, query head {h}: '
            f'{esc(number(value))}</title><svg x="{x(h, offset)}" y="{y(value)}" '
            f'overflow="visible"><path d="{path}" transform="scale({scale:g})" fill="{s.colour}" '
            f'fill-opacity="0.9" stroke="#ffffff" stroke-width="{OUTLINE_WIDTH / scale:.2f}"/></svg></g>'
        )
    return marks
