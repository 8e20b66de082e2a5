"""Helpers of the view tests: render a view to Bokeh models, read its text, measure its size.

Helpers of the view tests: render a view to Bokeh models, read its text, measure its serialized size.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

import panel as pn
from bokeh.document import Document
from bokeh.models import ColorMapper, GlyphRenderer, HoverTool, Image, Plot

from explorer.views import VIEWS

BUILDERS = {slug: builder for slug, _, builder in VIEWS}


def render(view) -> Document:
    """The view's Bokeh document, fully serialized once (so every model is JSON-able)."""
    document = Document()
    document.add_root(view.get_root(document))
    document.to_json(deferred=False)
    return document


def models(document: Document, kind) -> list:
    return [model for model in document.models if isinstance(model, kind)]


def plots(document: Document) -> list[Plot]:
    return models(document, Plot)


def images(document: Document) -> list[GlyphRenderer]:
    return [r for r in models(document, GlyphRenderer) if isinstance(r.glyph, Image)]


def images_by_title(document: Document) -> dict[str, GlyphRenderer]:
    """Image renderers keyed by the title of the plot that holds them."""
    found = {}
    for plot in plots(document):
        for renderer in plot.renderers:
            if isinstance(renderer, GlyphRenderer) and isinstance(renderer.glyph, Image):
                found[plot.title.text] = renderer
    return found


def tooltips(document: Document) -> list[str]:
    """Every hover label of the document."""
    labels = []
    for tool in models(document, HoverTool):
        if isinstance(tool.tooltips, list):
            labels += [label for label, _ in tool.tooltips]
    return labels


def colour_mappers(document: Document) -> list[ColorMapper]:
    return [r.glyph.color_mapper for r in images(document)]


def text(view) -> str:
    """All HTML of the view's HTML panes (after rendering, so bound functions have run)."""
    return "\n".join(str(pane.object) for pane in view.select(pn.pane.HTML))


def payload_bytes(document: Document) -> int:
    """Bytes a Bokeh server would send for the document: JSON content plus binary buffers."""
    serialized = document.to_json(deferred=True)
    content = json.dumps(serialized.content, default=lambda buffer: buffer.ref)
    return len(content) + sum(len(buffer.to_bytes()) for buffer in serialized.buffers)


@dataclass(frozen=True)
class DrawnChart:
    """What an SVG per-head chart draws, read back from its markup."""

    title: str
    head_labels: list[str]
    y_labels: list[str]
    y_title: str
    points: dict[str, dict[int, float]]  # series label -> {query head: value}


def head_charts(view) -> list[DrawnChart]:
    """Every per-head SVG chart in the view's HTML panes (after rendering), parsed as XML (so it is well-formed)."""
    charts = []
    for pane in view.select(pn.pane.HTML):
        markup = str(pane.object)
        if not markup.startswith('<div class="head-chart">'):
            continue
        root = ElementTree.fromstring(markup)
        title = "".join(next(e for e in root.iter("div") if e.get("class") == "head-chart-title").itertext())
        axis = next((e for e in root.iter("svg") if e.get("class") == "head-chart-axis"), None)
        plot = next((e for e in root.iter("svg") if e.get("class") == "head-chart-plot"), None)
        points: dict[str, dict[int, float]] = {}
        for point in root.iter("g") if plot is not None else ():
            if point.get("class") == "head-point":
                points.setdefault(point.get("data-series"), {})[int(point.get("data-head"))] = float(
                    point.get("data-value")
                )
        charts.append(
            DrawnChart(
                title,
                [t.text for t in plot.findall("text")][:-1] if plot is not None else [],  # the last is the axis label
                [t.text for t in axis.findall("text")][:-1] if axis is not None else [],
                axis.findall("text")[-1].text if axis is not None else "",
                points,
            )
        )
    return charts
