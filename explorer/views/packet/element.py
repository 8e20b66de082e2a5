"""The element panel: every number the analysis holds about one output element, as an HTML table."""

from __future__ import annotations

from explorer.analysis.result import Analysis
from explorer.foundations.formatting import full_number as number
from explorer.foundations.formatting import location, short_number
from explorer.views.shared.markup import esc, table

PANEL_STYLE = "padding:0.4em 0.8em;border:1px solid #b9c6d6;background:#f7f9fc;margin:0.3em 0"
COLUMN_STYLE = "flex:1 1 380px;min-width:0;overflow-wrap:anywhere"  # two tables side by side, stacked when narrow


def element_html(analysis: Analysis, head: int, channel: int) -> str:
    """The panel of output element [head, channel]; a short explanation when the packet has no element values."""
    try:
        record = analysis.element(head, channel)
    except (ValueError, IndexError) as error:
        return (
            f'<div class="element-panel" style="{PANEL_STYLE}"><b>Element [{esc(head)}, {esc(channel)}]</b>: '
            f"{esc(error)}</div>"
        )
    rows = [
        (
            esc(label),
            f'<span class="element-value">{esc(short_number(value))}</span>',
            f'<code class="element-exact">{esc(number(value))}</code>',
        )
        for label, value in record.fields()
    ]
    title = f"Element: {location(record.head, record.channel)} (flat index {record.flat_index} over [QH, D])"
    half = (len(rows) + 1) // 2
    header = ("quantity", "value", "exact (as in the JSON report)")
    tables = "".join(
        f'<div style="{COLUMN_STYLE}">{table(header, part, css_class="element-table")}</div>'
        for part in (rows[:half], rows[half:])
    )
    return (
        f'<div class="element-panel" data-element="{record.head},{record.channel}" style="{PANEL_STYLE}">'
        f'<b>{esc(title)}</b><div style="display:flex;flex-wrap:wrap;gap:0 1.2em">{tables}</div></div>'
    )
