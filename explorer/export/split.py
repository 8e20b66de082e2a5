"""Splits a tall PNG of one view into numbered parts, each carrying its titles; Pillow only, no I/O.

Every part is at most MAX_PNG_HEIGHT tall; a later part starts with a copy of the view's title band and of the heading
it continues (docs/triage-and-app.md, "The app's Export"). A part ends just above a heading in the lower half of its
room, else at the lowest blank pixel row there, never within KEEP_WITH_HEADING rows under a heading; a chart is cut only
when no such place exists.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from PIL import Image

MAX_PNG_HEIGHT = 2000  # pixels of one exported PNG at most; a taller view is split into numbered parts
CUT_WINDOW = 0.5  # a cut is looked for in the lower half of the room a part has
KEEP_WITH_HEADING = 120  # rows under a heading that stay in its part: never a heading alone at a part's end
STARTS_WITH_HEADING = 12  # a part whose first heading is this close to its top needs no copy of the one before
MAX_TITLE_SHARE = 0.5  # the copied title rows take at most this share of a part


def _blank_rows(pixels: np.ndarray) -> np.ndarray:
    """Per pixel row: True when every pixel of the row has the row's first colour."""
    return np.all(pixels == pixels[:, :1, :], axis=(1, 2))


def _cut_places(blank: np.ndarray, headings: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(preferred, allowed) row masks of where a part may end; preferred rows sit just above a heading."""
    height = len(blank)
    allowed, preferred = blank.copy(), np.zeros(height, dtype=bool)
    for top, bottom in headings:
        allowed[max(top, 0) : min(bottom + KEEP_WITH_HEADING, height)] = False
        if 0 < top <= height:
            preferred[top - 1] = allowed[top - 1] = True
    return preferred, allowed


def cut_rows(blank: np.ndarray, start: int, room: int, headings: Sequence[tuple[int, int]] = ()) -> list[int]:
    """Row indices where parts end: from `start`, each part at most `room` rows, ending as the module docstring says
    (`headings`: (top, bottom) rows)."""
    preferred, allowed = _cut_places(blank, headings)
    cuts, height = [], len(blank)
    while height - start > room:
        low, high = start + int(room * (1 - CUT_WINDOW)), start + room
        candidates = np.flatnonzero(preferred[low:high])
        if not candidates.size:
            candidates = np.flatnonzero(allowed[low:high])
        end = low + int(candidates[-1]) + 1 if candidates.size else high
        cuts.append(end)
        start = end
    return cuts


def continued_heading(headings: Sequence[tuple[int, int]], start: int) -> tuple[int, int] | None:
    """The heading a part starting at row `start` continues: the last one above, unless the part begins with one."""
    if any(start <= top < start + STARTS_WITH_HEADING for top, _ in headings):
        return None
    above = [(top, bottom) for top, bottom in headings if bottom <= start]
    return max(above) if above else None


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def split_png(
    png: bytes, caption_height: int, max_height: int = MAX_PNG_HEIGHT, headings: Sequence[tuple[int, int]] = ()
) -> list[bytes]:
    """`png` itself when at most `max_height` tall, else its parts: every later one under a copy of the title band
    (`caption_height` rows) and of the heading it continues (`headings`: (top, bottom) rows)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    if height <= max_height:
        return [png]
    caption_height = min(max(caption_height, 0), int(max_height * MAX_TITLE_SHARE) // 2)
    headings = sorted(
        (int(top), int(bottom))
        for top, bottom in headings
        if caption_height <= top < bottom <= height and bottom - top <= int(max_height * MAX_TITLE_SHARE) // 2
    )
    tallest = max((bottom - top for top, bottom in headings), default=0)
    blank = _blank_rows(np.asarray(image))
    first = cut_rows(blank, 0, max_height, headings)[:1]
    ends = first + cut_rows(blank, first[0], max_height - caption_height - tallest, headings)
    caption = image.crop((0, 0, width, caption_height))
    parts = [_png(image.crop((0, 0, width, ends[0])))]
    for top, bottom in zip(ends, [*ends[1:], height], strict=True):
        pieces = [caption, image.crop((0, top, width, bottom))]
        heading = continued_heading(headings, top)
        if heading is not None:
            pieces.insert(1, image.crop((0, heading[0], width, heading[1])))
        part = Image.new("RGB", (width, sum(piece.height for piece in pieces)), "white")
        row = 0
        for piece in pieces:
            part.paste(piece, (0, row))
            row += piece.height
        parts.append(_png(part))
    return parts
