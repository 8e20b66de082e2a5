"""The one number formatter of the app, the command line, triage and the exports; never computes.

4 significant digits for people, the full value for hovers; the JSON reports carry every float in full.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np

from explorer.foundations.bounded import terminal_text

SIGNIFICANT_DIGITS = 4  # digits of a float on screen; hovers, tooltips and JSON carry the full value
MISSING = "-"  # a value that does not exist (null in the JSON); its reason is said beside it
# A whole number up to this size (every integer a float64 holds exactly) is shown as an integer, never 1.000e+00.
LARGEST_WHOLE_NUMBER = 2**53


def _is_float(value: object) -> bool:
    return isinstance(value, (float, np.floating))


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def full_number(value: object) -> str:
    """A value in full: floats as their shortest round-trip repr, null as MISSING, booleans as true/false, lists
    and mappings as JSON, anything else as str()."""
    if value is None:
        return MISSING
    if _is_bool(value):
        return "true" if value else "false"
    if _is_float(value):
        return repr(float(value))
    if isinstance(value, np.integer):
        return str(int(value))
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, default=_plain)
    return str(value)


def short_number(value: object) -> str:
    """A value for people: a float to SIGNIFICANT_DIGITS significant digits (`0.0002437`, `3100`, `5.753e+05`,
    `nan`, `inf`), everything else as `full_number` prints it."""
    if _is_float(value) and not _is_bool(value):
        return f"{float(value):.{SIGNIFICANT_DIGITS}g}"
    return full_number(value)


def scientific_number(value: float) -> str:
    """A number for a column: a whole number as an integer (never `1.000e+00`), any other in scientific notation
    (`5.753e+05`), so a column's fractions read alike."""
    value = float(value)
    if value.is_integer() and abs(value) <= LARGEST_WHOLE_NUMBER:
        return f"{value:.0f}"
    return f"{value:.{SIGNIFICANT_DIGITS - 1}e}"


def _plain(value: object) -> object:
    return dict(value) if isinstance(value, Mapping) else str(value)


def location(head: int, channel: int) -> str:
    """Where an output element sits, as every view, line and sentence says it: "query head 5, channel 17"."""
    return f"query head {head}, channel {channel}"


def at_text(at: Mapping[str, int] | None) -> str:
    """The one text of a report's location block ({"queryHead", "channel"}): " at query head 5, channel 17", or ""
    when nowhere."""
    return "" if at is None else f" at {location(at['queryHead'], at['channel'])}"


TABLE_INDENT = "  "  # before every line of a plain-text table
TABLE_GAP = "  "  # between its columns


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: bool = False) -> list[str]:
    """A plain-text table as lines, each column as wide as its widest cell as a terminal shows it, right-aligned
    (numbers) or left-aligned with `left` (names)."""
    shown = [[terminal_text(cell) for cell in line] for line in (header, *rows)]
    widths = [max(len(cell) for cell in column) for column in zip(*shown, strict=True)]
    align = str.ljust if left else str.rjust
    joined = (TABLE_GAP.join(align(cell, width) for cell, width in zip(line, widths, strict=True)) for line in shown)
    return [TABLE_INDENT + text.rstrip() for text in joined]
