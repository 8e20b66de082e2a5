"""Overview view: status, reasons and identity above four compact views, each linked to its tab.

Overview view: status, reasons and identity above the four views side by side (error map, last-row bits,
nonfinite counts, narrowed-Q), each compact and linked to its tab; draws only numbers held by the analysis.
"""

from __future__ import annotations

import numpy as np
import panel as pn

from explorer.analysis.result import Analysis, LastRow, Numerics
from explorer.packet.dtypes import FIELD_BITS
from explorer.packet.model import REFUSED, TENSOR_NAMES
from explorer.views import html_summary, lastrow
from explorer.views.common import (
    COMPACT_FONT,
    CONTINUOUS_CMAP,
    LOG,
    UPRIGHT_HEAD_LABELS,
    Field,
    Selection,
    colour_scale,
    grid_map,
    hex_pattern,
    hint,
    html_pane,
    named,
    note_markup,
    per_head_charts,
    plot_pane,
    selectable,
    state_markup,
    ulp_map,
    ulp_value,
)
from explorer.views.html_summary import esc, short_number, table
from explorer.views.narrowed import reason_words

# Compact cells: the four fit the first screen at 1280 x 800; each cell's link opens its full view.
MAP_HEIGHT = 160
ROW_PIXELS = 12  # last-row map pixels per KV head
LAST_ROW_BASE_HEIGHT = 50
LAST_ROW_MAX_HEIGHT = 100
CHART_HEIGHT = 125
LINK_WIDTH, LINK_HEIGHT = 150, 26
CELL_MARGIN = (3, 3)
COMPACT_STYLE = f"font-size:{COMPACT_FONT};line-height:1.25"
SHA_DIGITS = 12  # packetSHA256 hex digits in the identity line of a refused packet
# The link sits in the cell's top right corner, over the title's line (a row for the two cost every session more).
CELL_STYLE = {"border": "1px solid #d0d7e0", "border-radius": "4px", "padding": "2px 8px", "position": "relative"}
LINK_STYLE = {"position": "absolute", "top": "2px", "right": "6px", "z-index": "1"}
# The title's box ends left of the link (a box under the link would overlap it, even where no letter does).
TITLE_STYLE = (f"margin:0.25em {LINK_WIDTH + 12}px 0.25em 0;font-size:1.05em;min-height:{LINK_HEIGHT}px;"
               f"line-height:{LINK_HEIGHT}px")
# (slug, cell title, tab title) of the four cells, in grid order.
CELLS = (("errors", "Per-head error", "Per-head errors"), ("lastrow", "Last-row bits", "Last-row bits"),
         ("nonfinite", "Nonfinite", "Nonfinite"), ("narrowed", "Narrowed-Q counterfactual", "Narrowed-Q"))


def identity_line(analysis: Analysis) -> str:
    """One line naming the packet: model, backend, request / output index / layer, phase, geometry, dtypes."""
    admission = analysis.admission
    if analysis.status == REFUSED:
        sha = admission.packet_sha256
        return (f"<code>{esc(admission.path)}</code> &middot; packetSHA256 "
                f"<code>{esc(sha[:SHA_DIGITS]) if sha else html_summary.NOT_A_NUMBER}</code> &middot; "
                "refused: identity not interpreted")
    parts = []
    identity, selection, geometry = admission.identity, admission.selection, admission.geometry
    if identity is not None:
        parts += [f"model <b>{esc(identity.get('modelID'))}</b>", f"backend {esc(identity.get('backend'))}"]
    if selection is not None:
        parts += [f"request {esc(selection.get('requestID'))}", f"output index {esc(selection.get('outputIndex'))}",
                  f"layer {esc(selection.get('modelLayerIndex'))} (storage {esc(selection.get('storageLayerIndex'))})",
                  esc(selection.get("phase"))]
    if geometry is not None:
        parts.append("QH {queryHeads}, KVH {kvHeads}, D {headDim}, T {tokens}".format(**geometry))
    if admission.tensors is not None:
        parts.append(f"output {esc(admission.tensors['output'].dtype)}")
    return " &middot; ".join(parts) or f"<code>{esc(admission.path)}</code>"


def _header(analysis: Analysis) -> pn.pane.HTML:
    return html_pane(f'<div class="overview-identity" style="margin:0.2em 0">{identity_line(analysis)}</div>'
                     f'<div class="overview-status">{html_summary.status_html(analysis)}</div>')


def _unavailable(analysis: Analysis, needs: str, what: str) -> str:
    return (f'<p class="overview-unavailable"><b>Not available: {esc(what)}.</b> '
            f"{esc(html_summary.missing_text(analysis, needs))}</p>")


# ---------------------------------------------------------------- the four cells


def _error_map(analysis: Analysis, numerics: Numerics, selection: Selection) -> list:
    """The map carrying the information: ULP to the rounded reference for a narrow output (a discrete scale, 0 in
    its own colour), else |output - primary| (log colours, zeros white)."""
    rounded = numerics.rounded_to_output
    dtype = rounded.dtype
    if rounded.identity:
        comparison = numerics.primary
        colour = comparison.abs_error
        what = "|output - primary|"
        scale = colour_scale([colour], LOG, what)
        fields = [Field("error", "|error|", colour), Field("ulp", "ULP (float32)", rounded.ulp.distance, ulp_value)]
        image = grid_map(colour, fields, title=what, colour_label="|error|", xlabel="channel", ylabel="query head",
                         clim=scale.clim, logz=scale.logz, cmap=CONTINUOUS_CMAP, height=MAP_HEIGHT)
        finite = colour[np.isfinite(colour)]
        spread = finite.size and finite.min() < finite.max()
        colours = (f"{'log' if scale.logz else 'linear'} colours {short_number(scale.clim[0])} to "
                   f"{short_number(scale.clim[1])}{', white: 0' if scale.logz else ''}" if spread
                   else scale.note.split(".")[0])
        caption = f"Output float32: |output - primary reference|, {colours}; grey: undefined."
    else:
        what = f"ULP distance in {dtype}"
        fields = [Field("ulp", what, rounded.ulp.distance, ulp_value),
                  Field("error", f"|output - reference rounded to {dtype}|", rounded.comparison.abs_error)]
        image = ulp_map(rounded.ulp.distance, fields, title=what, what="ULP bucket", height=MAP_HEIGHT)
        caption = (f"Output {dtype}: ULP distance to the primary reference rounded (RNE) to {dtype}; white: 0 (the "
                   f"same {dtype} value), grey: undefined.")
    # No toolbar and no tools but hover (and the click): a compact cell, its full view one click away.
    pane = selectable(plot_pane(image.opts(toolbar=None, default_tools=[]), css_classes=["overview-error-map"]),
                      selection)
    return [pane, note_markup(f'<span style="{COMPACT_STYLE}">{esc(caption)}</span>', "overview-caption"),
            hint("Click a cell for every number behind it.")]


def _last_row_map(row: LastRow, name: str) -> list:
    """One line of counts, and the KV head x channel map of differing fields when any element differs."""
    line = (f"<b>{esc(name)}</b>: {row.mismatched} of {row.compared} elements differ"
            + ("" if row.mismatched else " (all bits equal)"))
    bits = sum(FIELD_BITS[row.dtype])
    fields = [Field("fields", "fields that differ", row.field_mask, lambda: named(lastrow.FIELD_NAMES)),
              Field("xor", "XOR", row.xor, lambda: hex_pattern(bits))]
    height = min(LAST_ROW_BASE_HEIGHT + ROW_PIXELS * row.field_mask.shape[0], LAST_ROW_MAX_HEIGHT)
    image = grid_map(row.field_mask, fields, title="", colour_label="fields that differ",
                     xlabel="channel", ylabel="KV head", clim=(-0.5, len(lastrow.FIELD_NAMES) - 0.5),
                     cmap=list(lastrow.FIELD_COLOURS), colorbar=False, height=height)
    text = f'<div class="overview-last-row">{line}</div>'
    return [text, plot_pane(image.opts(toolbar=None, default_tools=[]))] if row.mismatched else [text]


def _last_rows(analysis: Analysis) -> list:
    facts = analysis.facts
    rows = (facts.last_row_keys, facts.last_row_values)
    legend = [lastrow.legend_html()] if any(row.mismatched for row in rows) else []
    return [*_last_row_map(rows[0], "Keys"), *_last_row_map(rows[1], "Values"), *legend]


def _nonfinite(analysis: Analysis) -> list:
    rows, finite = [], []
    for name in TENSOR_NAMES:
        m = analysis.facts.nonfinite[name]
        if m.total == 0:
            finite.append(name)
        rows.append((f"<code>{name}</code>", esc(m.dtype), esc(m.nan), esc(m.signaling_nan),
                     esc(m.positive_infinity), esc(m.negative_infinity)))
    counts = table(("tensor", "dtype", "NaN", "of which signaling", "+inf", html_summary.NEGATIVE_INFINITY_HEADER),
                   rows, css_class="overview-nonfinite")
    parts = [f'<div style="{COMPACT_STYLE}">{counts}</div>']
    if len(finite) == len(TENSOR_NAMES):
        parts.append(note_markup("No NaN and no infinity in any element of the six tensors.", "overview-finite"))
    elif finite:
        parts.append(note_markup("No NaN and no infinity in " + ", ".join(f"<code>{n}</code>" for n in finite)
                                 + " (only these).", "overview-finite"))
    return parts


def _narrowed(analysis: Analysis, numerics: Numerics) -> list:
    nq = numerics.narrowed_query
    if nq is None:
        reason = numerics.narrowed_query_reason
        return [state_markup(f'<b>Not applicable</b> (<code class="narrowed-reason">{esc(reason)}</code>): '
                             f"{esc(reason_words(analysis, reason))}", "narrowed-not-applicable")]
    floor = ("FP64 noise floor", numerics.fp64.reference_error)
    legend, chart = per_head_charts(
        [("vs primary reference", numerics.primary), ("vs narrowed-Q counterfactual", nq.comparison)],
        floor, metrics=(("linf", "linf"),), height=CHART_HEIGHT, upright=UPRIGHT_HEAD_LABELS, compact=True)
    caption = (f"Output linf per head against each reference (counterfactual: queries rounded to {esc(nq.dtype)}; "
               "never the reference).")
    # The legend's markup joins the title's pane (one pane fewer per session).
    return [legend.object, chart, note_markup(f'<span style="{COMPACT_STYLE}">{caption}</span>', "overview-caption")]


def _cell(slug: str, title: str, tab_title: str, selection: Selection, body: list) -> pn.Column:
    """The cell's link, then its title and `body`: HTML markup (str) and panes, each run of markup one pane (every
    pane costs each session's page a few milliseconds of server time)."""
    link = pn.widgets.Button(label=f"{tab_title} \u2192", color="light", width=LINK_WIDTH, height=LINK_HEIGHT,
                             css_classes=["overview-link"], margin=0, styles=LINK_STYLE)
    link.on_click(lambda _event: selection.param.update(tab=slug))
    parts: list = [link]
    markup = f'<h4 style="{TITLE_STYLE}">{esc(title)}</h4>'
    for part in [*body, None]:  # None: the end, which closes the last run of markup
        if isinstance(part, str):
            markup += part
            continue
        if markup:
            parts.append(html_pane(markup, margin=(0, 0)))
            markup = ""
        if part is not None:
            parts.append(part)
    return pn.Column(*parts, sizing_mode="stretch_width", styles=CELL_STYLE, margin=CELL_MARGIN,
                     css_classes=["overview-cell", f"overview-{slug}"])


def _cells(analysis: Analysis, selection: Selection) -> list:
    numerics, facts = analysis.numerics, analysis.facts
    needs_numerics, needs_facts = html_summary.NEEDS_NUMERICS, html_summary.NEEDS_FACTS
    bodies = {
        "errors": (_error_map(analysis, numerics, selection) if numerics is not None else
                   [_unavailable(analysis, needs_numerics, "the per-head error map")]),
        "lastrow": (_last_rows(analysis) if facts is not None else
                    [_unavailable(analysis, needs_facts, "the last-row bit comparison")]),
        "nonfinite": (_nonfinite(analysis) if facts is not None else
                      [_unavailable(analysis, needs_facts, "the nonfinite counts")]),
        "narrowed": (_narrowed(analysis, numerics) if numerics is not None else
                     [_unavailable(analysis, needs_numerics, "the narrowed-Q counterfactual")]),
    }
    return [_cell(slug, title, tab, selection, bodies[slug]) for slug, title, tab in CELLS]


def build(analysis: Analysis, selection: Selection) -> pn.Column:
    """The overview of one analysis (every status): header, then the four compact views two by two."""
    grid = pn.GridBox(*_cells(analysis, selection), ncols=2, sizing_mode="stretch_width",
                      css_classes=["overview-grid"])
    return pn.Column(_header(analysis), grid, sizing_mode="stretch_width", css_classes=["view-overview"])
