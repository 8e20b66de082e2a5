"""Marks drawn on a map's own figure (never an overlay): the clicked cell's outline, rings."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from explorer.views.shared.common import Selection
from explorer.views.shared.scales import isolated_cells

SELECTED_COLOUR, SELECTED_LINE_WIDTH = "#e8175d", 3  # the outline of the clicked map cell
RING_SIZE = 9  # screen pixels of the ring around an isolated nonzero element (its cell may be a pixel wide)
RING_COLOUR = "#d6004c"
RING_LINE_WIDTH = 1.5


def selectable(pane: pn.pane.HoloViews, selection: Selection) -> pn.pane.HoloViews:
    """A click on a cell of this query head x channel map sets `selection.element`; the cell is outlined."""
    image = pane.object
    rows, columns = image.dimension_values(2, flat=False).shape
    sources: list[ColumnDataSource] = []  # the outline's data in each document the map is drawn into

    def cells(element) -> dict[str, list[float]]:
        if element is None or not (0 <= element[0] < rows and 0 <= element[1] < columns):
            return {"left": [], "right": [], "top": [], "bottom": []}
        head, channel = element
        return {"left": [channel - 0.5], "right": [channel + 0.5], "top": [head - 0.5], "bottom": [head + 0.5]}

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


class ElementExplorer(pn.viewable.Viewer):
    """A query head x channel map whose clicked cell becomes (`head`, `channel`), clamped to the map."""

    head = param.Integer(default=0, bounds=(0, None), doc="Query head of the element shown.")
    channel = param.Integer(default=0, bounds=(0, None), doc="Channel of the element shown.")

    def __init__(self, first: tuple[int, int], **params):
        """`first`: the (head, channel) shown unless `params` name one (the map's first difference)."""
        super().__init__(**{"head": int(first[0]), "channel": int(first[1]), **params})

    def _listen(self, plot: pn.pane.HoloViews, shape: tuple[int, int]) -> None:
        """Hear clicks on `plot`, a map of `shape` cells (`self.tap`)."""
        self._shape = shape
        self.tap = hv.streams.Tap(source=plot.object, x=float(self.channel), y=float(self.head))
        self.tap.add_subscriber(self._on_tap)

    def _on_tap(self, x: float | None = None, y: float | None = None, **_) -> None:
        if x is None or y is None:
            return
        heads, channels = self._shape
        self.head = min(max(round(y), 0), heads - 1)
        self.channel = min(max(round(x), 0), channels - 1)


def set_data(source: ColumnDataSource, data: dict) -> None:
    """New data for a figure's source: at once, or on its session's next tick (callbacks lack the lock)."""
    document = source.document
    if document is None or document.session_context is None:
        source.data = data
    else:
        document.add_next_tick_callback(lambda: setattr(source, "data", data))


def ring_isolated(image: hv.Image, nonzero: np.ndarray, what: str) -> tuple[hv.Image, str]:
    """`image` with its `nonzero` cells ringed when too few to see by colour alone (scales.isolated_cells), and the
    caption naming them `what` elements ('' when none is ringed)."""
    isolated = isolated_cells(nonzero)
    if isolated is None:
        return image, ""
    rows, columns = isolated
    count = len(rows)
    caption = f"Ringed: the {count} {what} element{'s' if count != 1 else ''}, too few to see by colour alone."
    return image.opts(hooks=[*image.opts.get().kwargs.get("hooks", []), _rings(rows, columns)]), caption


def _rings(rows: np.ndarray, columns: np.ndarray):
    """A render hook ringing cells (row, column) on a map's own figure (fresh models per render)."""
    data = {"x": columns.astype(float).tolist(), "y": rows.astype(float).tolist()}

    def hook(plot, element) -> None:
        plot.state.scatter(
            x="x",
            y="y",
            source=ColumnDataSource(data),
            size=RING_SIZE,
            marker="circle",
            fill_alpha=0,
            line_color=RING_COLOUR,
            line_width=RING_LINE_WIDTH,
        )

    return hook
