"""Splits a tall PNG of one view into numbered parts at most MAX_PNG_HEIGHT pixels tall.

Each under the view's caption band, cutting where a row is blank; Pillow only, never reads or writes a file.

A part ends at the lowest blank pixel row (one colour across the whole width: the
gap between two plots or paragraphs) in the lower half of the room it has, so a
chart is cut only when no gap exists there.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

MAX_PNG_HEIGHT = 2000  # pixels of one exported PNG at most; a taller view is split into numbered parts
CUT_WINDOW = 0.5  # a cut is looked for in the lower half of the room a part has


def _blank_rows(pixels: np.ndarray) -> np.ndarray:
    """Per pixel row: True when every pixel of the row has the row's first colour."""
    return np.all(pixels == pixels[:, :1, :], axis=(1, 2))


def cut_rows(blank: np.ndarray, start: int, room: int) -> list[int]:
    """Row indices where parts end: from `start`, each part at most `room` rows, ending after the lowest blank row
    of its lower half (else exactly at `room`)."""
    cuts, height = [], len(blank)
    while height - start > room:
        low, high = start + int(room * (1 - CUT_WINDOW)), start + room
        candidates = np.flatnonzero(blank[low:high])
        end = low + int(candidates[-1]) + 1 if candidates.size else high
        cuts.append(end)
        start = end
    return cuts


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def split_png(png: bytes, caption_height: int, max_height: int = MAX_PNG_HEIGHT) -> list[bytes]:
    """`png` itself when it is at most `max_height` tall; else parts, the first as it starts (with its caption band
    of `caption_height` rows), every later one under a copy of that band, each at most `max_height` tall."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    if height <= max_height:
        return [png]
    caption_height = min(max(caption_height, 0), max_height // 2)
    blank = _blank_rows(np.asarray(image))
    first = cut_rows(blank, 0, max_height)[:1]
    ends = first + cut_rows(blank, first[0], max_height - caption_height)
    caption = image.crop((0, 0, width, caption_height))
    parts, top = [], 0
    for index, bottom in enumerate([*ends, height]):
        body = image.crop((0, top, width, bottom))
        if index == 0:
            parts.append(_png(body))
        else:
            part = Image.new("RGB", (width, caption_height + body.height), "white")
            part.paste(caption, (0, 0))
            part.paste(body, (0, caption_height))
            parts.append(_png(part))
        top = bottom
    return parts
