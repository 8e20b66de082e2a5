"""The views' one HTML toolkit: escaper, status badge, plain table and number cell; strings only.

Every view, export and the app's sidebar build their HTML from these, so a name, a status, a table or a number looks
the same wherever it is shown.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from explorer.catalog.summary import ERROR
from explorer.foundations.bounded import escaped_bytes
from explorer.foundations.formatting import full_number as number
from explorer.foundations.formatting import short_number
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import FIELD_BITS
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED

# Neutral colours (background, text): a status is a category, never a verdict.
STATUS_COLOURS = {
    ANALYZED: ("#dde5ef", "#1f3550"),
    INCONCLUSIVE: ("#e7e1ee", "#3d2f52"),
    REFUSED: ("#e4e4e4", "#333333"),
    ERROR: ("#f1e6d8", "#4a3a22"),  # the packet list only: a summary that could not be made
}
TABLE_STYLE = "border-collapse:collapse;font-size:0.9em;margin:0.3em 0 0.8em 0"
CELL_STYLE = "border:1px solid #d0d0d0;padding:2px 8px;text-align:left;vertical-align:top"
WRAP_STYLE = "overflow-wrap:anywhere"  # long values (hashes, paths) wrap inside their cell instead of widening it
BADGE_STYLE = "display:inline-block;padding:0 0.6em;border-radius:0.6em;font-weight:600"
BOX_STYLE = "padding:0.5em 0.9em;border-left:4px solid #8a8a8a;background:#f5f5f5;margin-bottom:0.6em"
NEGATIVE_INFINITY_HEADER = '<span style="white-space:nowrap">-inf</span>'  # never broken after its minus sign


def esc(value: object) -> str:
    """HTML-escaped text of any value (a byte of a file name that is not UTF-8 as \\xNN: see bounded.escaped_bytes)."""
    return html.escape(escaped_bytes(str(value)))


def number_cell(value: object, *, bare: bool = False) -> str:
    """HTML of a value for a table or label: 4 significant digits (never broken at its exponent's minus sign), the
    full value in the tooltip when they differ. `bare` (the pair and replay tables): a float in a plain span whose
    tooltip always holds the full value, any other value as text."""
    shown, full = short_number(value), number(value)
    if bare:
        return f'<span title="{esc(full)}">{esc(shown)}</span>' if isinstance(value, float) else esc(full)
    title = "" if shown == full else f' title="{esc(full)}"'
    # A number is never broken; any other value (a hash, a path) wraps inside its cell.
    numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    return f'<span class="number" style="{"white-space:nowrap" if numeric else WRAP_STYLE}"{title}>{esc(shown)}</span>'


def bit_pattern(dtype: str, bits: object) -> str:
    """A value's bit pattern in hex, as wide as its dtype."""
    return f"<code>0x{int(bits):0{sum(FIELD_BITS[dtype]) // 4}x}</code>"


def value_row(label: str, value: object, dtype: str, bits: object = None) -> tuple[str, str, str, str]:
    """A row of an element's table: label, value (4 digits, the full one on hover), bit pattern and dtype."""
    pattern = "" if bits is None else bit_pattern(dtype, bits)
    return esc(label), number_cell(float(value), bare=True), pattern, esc(dtype)


def swatches(named_colours: Iterable[tuple[str, str]]) -> str:
    """A legend's entries: a box of each colour before its name."""
    return "".join(
        f'<span style="display:inline-block;margin-right:1em"><span style="display:inline-block;'
        f'width:0.9em;height:0.9em;background:{colour};border:1px solid #999;vertical-align:middle">'
        f"</span> {esc(name)}</span>"
        for name, colour in named_colours
    )


@record
class Cell(Record):
    """A table cell of its own: `html` (already escaped) with `style` after the table's cell style, `attributes`
    (already-escaped HTML attributes: class, data-*, title) and `header` for a row's label (a <th>)."""

    html: str
    style: str = ""
    attributes: str = ""
    header: bool = False


def _cell(cell: str | Cell, tag: str, cell_style: str) -> str:
    if isinstance(cell, str):
        return f'<{tag} style="{cell_style}">{cell}</{tag}>'
    tag = "th" if cell.header else tag
    attributes = f" {cell.attributes}" if cell.attributes else ""
    return f'<{tag}{attributes} style="{cell_style};{cell.style}">{cell.html}</{tag}>'


def table(
    header: Sequence[str | Cell],
    rows: Iterable[Sequence[str | Cell]],
    *,
    css_class: str = "",
    table_style: str = TABLE_STYLE,
    cell_style: str = CELL_STYLE,
) -> str:
    """An HTML table; cells are already-escaped HTML, or a Cell with its own style and attributes."""
    head = "".join(_cell(cell, "th", cell_style) for cell in header)
    body = ["<tr>" + "".join(_cell(cell, "td", cell_style) for cell in row) + "</tr>" for row in rows]
    return (
        f'<table class="{esc(css_class)}" style="{table_style}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def mapping_table(mapping: dict | None, *, css_class: str = "") -> str:
    """A two-column key / value table of a report dict (None: an explicit 'not established')."""
    if mapping is None:
        return "<p><i>Not established for this packet.</i></p>"
    return table(
        ("field", "value"),
        ((f"<code>{esc(k)}</code>", f'<span style="{WRAP_STYLE}">{number_cell(v)}</span>') for k, v in mapping.items()),
        css_class=css_class,
    )


def status_badge(
    status: str,
    *,
    css_class: str = "analysis-status",
    text: str = "",
    title: str = "",
    style: str = "",
    colours: Mapping[str, tuple[str, str]] = STATUS_COLOURS,
) -> str:
    """A neutral status chip (`data-status` for scripts): the status, then `text` (HTML, e.g. the score); `colours`
    (background, text) by status for a result of another kind (a pair's `compared`)."""
    background, colour = colours[status]
    tooltip = f' title="{esc(title)}"' if title else ""
    return (
        f'<span class="{esc(css_class)}" data-status="{esc(status)}"{tooltip} style="{BADGE_STYLE};{style}'
        f'background:{background};color:{colour}">{esc(status)}{text}</span>'
    )


def written_note(css_class: str, files) -> str:
    """The note after an export: one written path per line (`files`: (css class, path) pairs), wrapping anywhere."""
    lines = "".join(
        f'<div style="{WRAP_STYLE}"><code class="{css}">{esc(str(path))}</code></div>' for css, path in files
    )
    return f'<div class="{css_class}">Written:{lines}</div>'
