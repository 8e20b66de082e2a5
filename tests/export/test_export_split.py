"""Splitting a tall view's PNG (explorer.export.split).

Parts at most MAX_PNG_HEIGHT tall, cut at blank rows, each later part under the caption band; and the static
page's controls written as text.
"""

from __future__ import annotations

import io

import numpy as np
import panel as pn
from PIL import Image

from explorer.export.split import KEEP_WITH_HEADING, MAX_PNG_HEIGHT, cut_rows, split_png
from explorer.export.static_page import SETTING_CLASS, static_view
from explorer.views.shared.common import hint

CAPTION = 40


def _png(height: int, width: int = 300, gaps: tuple[int, ...] = ()) -> bytes:
    """A tall PNG: a red caption band, then grey 'content' rows with white blank rows at `gaps`."""
    pixels = np.full((height, width, 3), 128, dtype=np.uint8)
    pixels[::7, ::3] = 30  # texture: content rows are never one colour
    pixels[:CAPTION] = (200, 0, 0)
    for gap in gaps:
        pixels[gap : gap + 4] = 255
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _image(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_a_short_view_is_one_png_unchanged():
    png = _png(MAX_PNG_HEIGHT)
    assert split_png(png, CAPTION) == [png]


def test_a_tall_view_is_split_into_parts_at_most_max_height_each_under_the_caption():
    height = 5960  # the tallest view the issue measured
    parts = [_image(part) for part in split_png(_png(height, gaps=(1500, 3300, 4900)), CAPTION)]
    assert len(parts) >= 3 and all(part.shape[0] <= MAX_PNG_HEIGHT for part in parts)
    assert all((part[:CAPTION] == (200, 0, 0)).all() for part in parts)  # every part says what it shows
    content = parts[0].shape[0] + sum(part.shape[0] - CAPTION for part in parts[1:])
    assert content == height  # no row lost or repeated


def test_cuts_fall_on_blank_rows_when_there_are_some():
    blank = np.zeros(5000, dtype=bool)
    blank[[1200, 1700, 3100]] = True
    assert cut_rows(blank, 0, 2000) == [1701, 3101]  # after the lowest gap in the lower half of each part's room
    assert cut_rows(np.zeros(5000, dtype=bool), 0, 2000) == [2000, 4000]  # no gap: cut at the room's end


def _with_headings(height: int, headings: tuple[tuple[int, int], ...], gaps: tuple[int, ...]) -> bytes:
    """`_png` whose heading rows are each a colour of their own (blue, with the heading's index in green)."""
    pixels = np.array(_image(_png(height, gaps=gaps)))
    for index, (top, bottom) in enumerate(headings):
        pixels[top:bottom] = (0, 10 * index, 220)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _is_heading(rows: np.ndarray, index: int) -> bool:
    return bool((rows == (0, 10 * index, 220)).all())


def test_every_part_carries_the_title_band_and_the_heading_it_continues():
    headings = ((300, 340), (2500, 2540))  # a table's heading, then a map's heading far below it
    gaps = (1500, 1900, 3300, 4200)
    parts = [_image(part) for part in split_png(_with_headings(5000, headings, gaps), CAPTION, headings=headings)]
    assert len(parts) >= 3 and all(part.shape[0] <= MAX_PNG_HEIGHT for part in parts)
    for part in parts[1:]:
        assert (part[:CAPTION] == (200, 0, 0)).all()  # the caption band and the view title, copied
        below = part[CAPTION : CAPTION + 40]
        assert _is_heading(below, 0) or _is_heading(below, 1), "a later part opens with the heading it continues"


def test_a_part_never_ends_on_a_heading_without_what_it_titles():
    blank = np.zeros(5000, dtype=bool)
    blank[[1800, 1950]] = True  # gaps right under a heading at 1790..1799: the heading would end part 1
    cuts = cut_rows(blank, 0, 2000, headings=((1790, 1799),))
    assert cuts[0] == 1790  # cut just above the heading, which opens the next part
    assert all(not 1790 < cut < 1799 + KEEP_WITH_HEADING for cut in cuts)


def test_static_view_writes_settings_as_text_and_drops_buttons_cards_and_hints():
    choice = pn.widgets.RadioButtonGroup(label="colour scale", options=["linear", "log"], value="log")
    view = pn.Column(
        choice,
        pn.widgets.Button(label="Per-head errors"),
        hint("Click a cell."),
        pn.Card(pn.pane.HTML("inside"), title="Per-head values", collapsed=True),
        pn.panel(pn.bind(lambda scale: pn.pane.HTML(f"drawn {scale}"), choice)),
    )
    frozen = static_view(view)
    assert not frozen.select(pn.widgets.Widget) and not frozen.select(pn.Card)
    shown = " ".join(str(p.object) for p in frozen.select(pn.pane.HTML))
    assert SETTING_CLASS in shown and "colour scale:</b> log" in shown
    assert "Click a cell" not in shown and "inside" in shown and "Per-head values" in shown and "drawn log" in shown
