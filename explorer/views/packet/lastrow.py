"""Last-row view: stored row T-1 vs the incoming row of keys and values: XOR maps, histograms."""

from __future__ import annotations

import holoviews as hv
import numpy as np

from explorer.analysis.result import Analysis, LastRow
from explorer.packet.dtypes import FIELD_BITS
from explorer.views.shared import html_summary, marks
from explorer.views.shared.common import (
    Field,
    Selection,
    cell_index,
    exact_number,
    explained,
    grid_map,
    heading,
    hex_pattern,
    hover,
    html_pane,
    integer_y_axis,
    named,
    note,
    plot_pane,
    state,
)
from explorer.views.shared.markup import esc, swatches, table

# field_mask codes: bit 1 = sign differs, 2 = exponent differs, 4 = mantissa differs.
FIELD_NAMES = (
    "equal",
    "sign",
    "exponent",
    "sign + exponent",
    "mantissa",
    "sign + mantissa",
    "exponent + mantissa",
    "sign + exponent + mantissa",
)
FIELD_COLOURS = ("#f4f4f4", "#d62728", "#1f77b4", "#9467bd", "#2ca02c", "#ff7f0e", "#17becf", "#3b3b3b")
PART_COLOURS = {"sign": FIELD_COLOURS[1], "exponent": FIELD_COLOURS[2], "mantissa": FIELD_COLOURS[4]}
FIELDS_LABEL = "fields that differ"
SHOWN_POSITIONS = 32  # first mismatched positions listed in the table (the report holds up to 4,096)
ROW_PIXELS = 28
MAP_BASE_HEIGHT = 110
MAX_MAP_HEIGHT = 420
TOOLBAR_PLACE = "above"  # a map a few rows high has no room for a toolbar standing beside it
HISTOGRAM_HEIGHT = 260


def legend_html() -> str:
    return (
        f'<div class="field-legend">Fields that differ: {swatches(zip(FIELD_NAMES, FIELD_COLOURS, strict=True))}</div>'
    )


def _xor_map(row: LastRow, title: str) -> hv.Image:
    bits = sum(FIELD_BITS[row.dtype])
    fields = [
        Field("fields", FIELDS_LABEL, row.field_mask, lambda: named(FIELD_NAMES)),
        Field("stored_bits", "stored (token T-1)", row.stored_bits, lambda: hex_pattern(bits)),
        Field("incoming_bits", "incoming", row.incoming_bits, lambda: hex_pattern(bits)),
        Field("xor", "XOR", row.xor, lambda: hex_pattern(bits)),
        Field("stored_value", "stored value", row.stored_values, exact_number),
        Field("incoming_value", "incoming value", row.incoming_values, exact_number),
    ]
    height = min(MAP_BASE_HEIGHT + ROW_PIXELS * row.field_mask.shape[0], MAX_MAP_HEIGHT)
    return field_map(row.field_mask, fields, title, height).opts(toolbar=TOOLBAR_PLACE)


def field_map(mask: np.ndarray, fields: list[Field], title: str, height: int) -> hv.Image:
    """A KV head x channel map coloured by the bit fields that differ (FIELD_COLOURS, no colour bar)."""
    clim, cmap = (-0.5, len(FIELD_NAMES) - 0.5), list(FIELD_COLOURS)
    return grid_map(
        mask,
        fields,
        title=title,
        colour_label=FIELDS_LABEL,
        ylabel="KV head",
        clim=clim,
        cmap=cmap,
        colorbar=False,
        height=height,
    )


def _histogram(row: LastRow, title: str) -> hv.Overlay:
    """Differing-bit counts per bit position, coloured by field, sign on the left, field boundaries marked."""
    sign, exponent, mantissa = FIELD_BITS[row.dtype]
    parts = (
        ("mantissa", 0, mantissa),
        ("exponent", mantissa, mantissa + exponent),
        ("sign", mantissa + exponent, mantissa + exponent + sign),
    )
    layers = []
    for part, low, high in parts:
        edges = np.arange(low, high + 1) - 0.5
        layers.append(
            hv.Histogram(
                (edges, row.bit_position_counts[low:high]), kdims=["bit position"], vdims=["elements"], label=part
            ).opts(
                color=PART_COLOURS[part],
                **hover(
                    [("field", part), ("bit position", "$x{index}"), ("elements differing", "@{elements}")],
                    {"$x": cell_index},
                ),
            )
        )
    boundaries = [hv.VLine(low - 0.5).opts(color="#555555", line_dash="dotted") for _, low, _ in parts[1:]]
    return hv.Overlay(layers + boundaries).opts(
        title=title,
        invert_xaxis=True,
        height=HISTOGRAM_HEIGHT,
        responsive=True,
        min_width=320,
        legend_position="right",
        ylabel="elements differing",
        show_grid=True,
        hooks=[integer_y_axis],
    )


def _facts_table(row: LastRow) -> str:
    positions = ", ".join(f"[{kv}, {ch}]" for kv, ch in row.positions[:SHOWN_POSITIONS])
    if len(row.positions) > SHOWN_POSITIONS:
        positions += f" (first {SHOWN_POSITIONS} of {len(row.positions)} listed in the report)"
    flips = ", ".join(f"{esc(k)} {esc(v)}" for k, v in row.bit_flips.items())
    return table(
        ("field", "value"),
        (
            ("dtype", esc(row.dtype)),
            ("elements compared", esc(row.compared)),
            ("elements differing", esc(row.mismatched)),
            ("differing per KV head", esc(list(row.per_kv_head))),
            ("differing bits by field", flips),
            ("first differing [KV head, channel]", positions or "none"),
        ),
        css_class="last-row-facts",
    )


def _one(row: LastRow, name: str, noun: str) -> list:
    """Facts, then the all-bits-equal state, or the XOR map (lone elements ringed) and the bit histogram."""
    title = f"{name}: stored row T-1 vs incoming row"
    parts = [heading(title), html_pane(_facts_table(row))]
    if row.mismatched == 0:
        equal = (
            f"the {row.compared} {esc(noun)} elements of the stored last row are bitwise identical to the incoming row"
        )
        return [*parts, state(f"<b>All bits equal</b>: {equal}; there is nothing to draw.", "all-bits-equal")]
    image = _xor_map(row, f"{name}: XOR of stored and incoming, by differing field")
    image, ringed = marks.ring_isolated(image, row.field_mask > 0, "differing")
    parts += [html_pane(legend_html()), plot_pane(image), *([note(ringed, "last-row-ringed")] if ringed else [])]
    return [*parts, plot_pane(_histogram(row, f"{name}: differing bits per bit position"))]


def _body(analysis: Analysis, _selection: Selection) -> list:
    facts = analysis.facts
    return [*_one(facts.last_row_keys, "Keys", "key"), *_one(facts.last_row_values, "Values", "value")]


# The last-row bit view of one analysis (explains itself when no tensor facts exist).
build = explained(
    html_summary.NEEDS_FACTS, _body, "the stored-vs-incoming last-row bit comparison of keys and values", "view-lastrow"
)
