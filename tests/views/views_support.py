"""Helpers of the view tests: render a view to Bokeh models, read its text, measure its serialized size."""

from __future__ import annotations

import json

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
