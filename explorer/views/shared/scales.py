"""Display scales of the maps and charts; numpy only.

Colour-bar ticks whose labels never repeat, legible index ticks, and the discrete ULP scale in which 0 has its own
colour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from explorer.foundations.formatting import short_number
from explorer.foundations.record import Record, record

LINEAR, LOG = "linear", "log"  # the colour scales a map offers
MAX_COLOUR_BAR_TICKS = 6  # tick labels on one colour bar at most
PLAIN_DIGITS = 6  # a rounded label prints without an exponent up to this many digits (100000, then 1e+06)
MAX_LABEL_DIGITS = 17  # significant digits that tell any two distinct doubles apart
NICE_STEPS = (1.0, 2.0, 5.0)  # a tick step is one of these times a power of ten
INDEX_LABEL_PIXELS = 14  # vertical room one index label (a head number) needs to stay apart from the next
ZERO_COLOUR = "#ffffff"  # exact zeros on a map (equal elements, no error): never a colour of the scale
# Cells whose value is undefined (not compared, NaN): a mid grey, told apart at a glance from the white of 0 ULP and
# from every colour of the ULP and viridis scales (a light grey beside white read as 0).
NOT_COMPARED_COLOUR = "#8c8c8c"
# Isolated nonzero elements on a wide map (two 1-ULP elements among 4,096, each cell a pixel wide) are ringed so the
# map does not read as empty; a ring marks where an element is, its colour stays the scale's.
MAX_RINGED = 64  # at most this many nonzero elements get a ring
MAX_RINGED_SHARE = 0.01  # and only when they are at most this share of the cells (else the colours show them)
# Buckets of a ULP-distance map: (lowest, highest) distance, None: no upper end. 0 comes first, in ZERO_COLOUR.
ULP_BUCKETS = ((0, 0), (1, 1), (2, 3), (4, 7), (8, 15), (16, 255), (256, 65535), (65536, None))
ULP_BUCKET_COLOURS = (ZERO_COLOUR, "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02", "#993404", "#4d1a02")
MIN_ULP_BUCKETS = 2  # a map always shows 0 and 1 on its colour bar, even when every element is equal


def unique_labels(values: Sequence[float]) -> tuple[str, ...]:
    """Labels of tick values with the fewest significant digits (1 to MAX_LABEL_DIGITS) at which no two repeat."""
    for digits in range(1, MAX_LABEL_DIGITS + 1):
        # rounded to `digits` first, then printed plainly: 10 and 20, not 1e+01 and 2e+01
        labels = tuple(f"{float(f'{value:.{digits}g}'):.{max(digits, PLAIN_DIGITS)}g}" for value in values)
        if len(set(labels)) == len(labels):
            return labels
    return tuple(repr(float(value)) for value in values)


def nice_at_least(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least `value` (> 0)."""
    power = 10.0 ** math.floor(math.log10(value))
    return next(step for step in (s * power for s in (*NICE_STEPS, 10.0)) if step >= value * (1 - 1e-12))


def linear_ticks(low: float, high: float, *, integer: bool = False, most: int = MAX_COLOUR_BAR_TICKS) -> list[float]:
    """Round tick values within [low, high]: at most `most`, whole numbers when `integer` (counts)."""
    step = nice_at_least((high - low) / max(most - 1, 1)) if high > low else 1.0  # at most `most - 1` steps
    step = max(step, 1.0) if integer else step
    first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    return [k * step + 0.0 for k in range(first, last + 1)]


def colour_bar_ticks(
    low: float, high: float, *, log: bool = False, integer: bool = False
) -> tuple[tuple[float, str], ...]:
    """(value, label) ticks of a colour bar, no two labels alike: whole decades on a log bar of a decade or more."""
    if log and low > 0 and math.log10(high) - math.log10(low) >= 1:
        first, last = math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9)
        stride = max(1, math.ceil((last - first + 1) / MAX_COLOUR_BAR_TICKS))
        return tuple((10.0**e, f"1e{e:+03d}") for e in range(first, last + 1, stride))
    values = linear_ticks(low, high, integer=integer)
    return tuple(zip(values, unique_labels(values), strict=True))


def index_ticks(count: int, pixels: float, label_pixels: float = INDEX_LABEL_PIXELS) -> list[int]:
    """Ticks 0, k, 2k, ... of `count` rows (heads) drawn over `pixels`: every row while each has `label_pixels`, else
    the smallest round stride (1, 2, 5, 10, ...) whose labels stay apart."""
    if count <= 0:
        return []
    needed = count * label_pixels / max(pixels, 1.0)
    stride = 1 if needed <= 1 else int(nice_at_least(needed))
    return list(range(0, count, stride))


def ulp_bucket_codes(distance: np.ndarray) -> np.ndarray:
    """The ULP_BUCKETS index of each ULP distance (0 for equal, 1 for 1 ULP, ...); NaN where it is undefined (< 0)."""
    lows = np.array([low for low, _ in ULP_BUCKETS[1:]], dtype=np.float64)
    codes = np.searchsorted(lows, np.asarray(distance, dtype=np.float64), side="right").astype(np.float64)
    return np.where(np.asarray(distance) < 0, np.nan, codes)


def ulp_bucket_label(index: int) -> str:
    low, high = ULP_BUCKETS[index]
    if high is None:
        return f">= {low}"
    return str(low) if low == high else f"{low}-{high}"


def ulp_buckets_shown(codes: np.ndarray) -> int:
    """How many buckets a map's colour bar shows: up to the largest present, at least MIN_ULP_BUCKETS."""
    present = codes[np.isfinite(codes)]
    return max(MIN_ULP_BUCKETS, int(present.max()) + 1 if present.size else 0)


def isolated_cells(nonzero: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, columns) of a map's nonzero cells when few enough to ring (MAX_RINGED, MAX_RINGED_SHARE), else None."""
    rows, columns = np.nonzero(np.asarray(nonzero, dtype=bool))
    if rows.size == 0 or rows.size > MAX_RINGED or rows.size > MAX_RINGED_SHARE * np.asarray(nonzero).size:
        return None
    return rows, columns


@record
class ColourScale(Record):
    """Display limits of one shared colour scale, and the sentence saying how it was chosen."""

    clim: tuple[float, float]
    logz: bool
    note: str


def colour_scale(arrays: Sequence[np.ndarray], mode: str, what: str) -> ColourScale:
    """One colour range over every finite value of `arrays`; a log one starts at the smallest positive value."""
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
