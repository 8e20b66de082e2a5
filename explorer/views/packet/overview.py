"""Overview view: status, reasons and identity above four compact views, each linked to its tab."""

from __future__ import annotations

import numpy as np
import panel as pn

from explorer.analysis.findings import largest_error_finding, ulp_finding
from explorer.analysis.ranking import ranked_heads, worst_ulp_per_head
from explorer.analysis.result import Analysis, LastRow, Numerics
from explorer.foundations.formatting import MISSING, at_text, short_number
from explorer.packet.dtypes import FIELD_BITS
from explorer.packet.model import REFUSED, TENSOR_NAMES
from explorer.views.packet import lastrow, nonfinite
from explorer.views.packet.narrowed import not_applicable
from explorer.views.shared import html_summary, marks, markup
from explorer.views.shared.charts import UPRIGHT_HEAD_LABELS, per_head_charts
from explorer.views.shared.common import (
    COMPACT_FONT,
    MAP_FRAME_PIXELS,
    Field,
    Selection,
    continuous,
    grid_map,
    hex_pattern,
    hint,
    html_pane,
    named,
    note_markup,
    per_cell,
    plot_pane,
    section,
    ulp_map,
    ulp_value,
)
from explorer.views.shared.marks import selectable
from explorer.views.shared.markup import esc
from explorer.views.shared.scales import LOG, colour_scale, index_ticks

# Compact cells: the four fit the first screen at 1280 x 800; each cell's link opens its full view.
MAP_HEIGHT = 160
MAX_MAP_HEIGHT = 260  # a map labels every head up to the heads this holds (16 at HEAD_LABEL_PIXELS), every k-th above
HEAD_LABEL_PIXELS = 10  # rows per head label at TICK_FONT: every head of an 8-head map is labelled in MAP_HEIGHT
TICK_FONT = "7.5pt"
ROW_PIXELS = 12  # last-row map pixels per row (a KV head of the keys or of the values)
LAST_ROW_MIN_ROWS_PIXELS = 48  # the map's rows take at least this much: the axis title "KV head" fits beside them
LAST_ROW_MAX_HEIGHT = 180
NONFINITE_MAP_HEIGHT = 120  # at least: taller when its heads need room to be labelled each (map_height)
NONFINITE_MAP_MIN_WIDTH = 150  # two maps side by side in a cell of a 1280 px window
TITLE_FONT = "10pt"
NONFINITE_COLUMNS = 2  # nonfinite maps side by side in the cell's width
CHART_HEIGHT = 112
MAP_HINT = "Click a cell for every number behind it."
LINK_WIDTH, LINK_HEIGHT = 150, 26
CELL_MARGIN = (3, 3)
COMPACT_STYLE = f"font-size:{COMPACT_FONT};line-height:1.25"
SHA_DIGITS = 12  # packetSHA256 hex digits in the identity line of a refused packet
# The link sits in the cell's top right corner, over the title's line (a row for the two cost every session more).
CELL_STYLE = {"border": "1px solid #d0d7e0", "border-radius": "4px", "padding": "2px 8px", "position": "relative"}
LINK_STYLE = {"position": "absolute", "top": "2px", "right": "6px", "z-index": "1"}
# The title's box ends left of the link (a box under the link would overlap it, even where no letter does).
TITLE_STYLE = (
    f"margin:0.25em {LINK_WIDTH + 12}px 0.25em 0;font-size:1.05em;min-height:{LINK_HEIGHT}px;"
    f"line-height:{LINK_HEIGHT}px"
)
# (slug, cell title, tab title) of the four cells, in grid order.
CELLS = (
    ("errors", "Per-head error", "Per-head errors"),
    ("lastrow", "Last-row bits", "Last-row bits"),
    ("nonfinite", "Nonfinite", "Nonfinite"),
    ("narrowed", "Narrowed-Q counterfactual", "Narrowed-Q"),
)


def identity_line(analysis: Analysis) -> str:
    """One line naming the packet: model, backend, request / output index / layer, phase, geometry, dtypes."""
    admission = analysis.admission
    if analysis.status == REFUSED:
        sha = admission.packet_sha256
        return (
            f"<code>{esc(admission.path)}</code> &middot; packetSHA256 "
            f"<code>{esc(sha[:SHA_DIGITS]) if sha else MISSING}</code> &middot; "
            "refused: identity not interpreted"
        )
    parts = []
    identity, selection, geometry = admission.identity, admission.selection, admission.geometry
    if identity is not None:
        parts += [f"model <b>{esc(identity.get('modelID'))}</b>", f"backend {esc(identity.get('backend'))}"]
    if selection is not None:
        parts += [
            f"request {esc(selection.get('requestID'))}",
            f"output index {esc(selection.get('outputIndex'))}",
            f"layer {esc(selection.get('modelLayerIndex'))} (storage {esc(selection.get('storageLayerIndex'))})",
            esc(selection.get("phase")),
        ]
    if geometry is not None:
        parts.append("QH {queryHeads}, KVH {kvHeads}, D {headDim}, T {tokens}".format(**geometry))
    if admission.tensors is not None:
        parts.append(f"output {esc(admission.tensors['output'].dtype)}")
    return " &middot; ".join(parts) or f"<code>{esc(admission.path)}</code>"


def _status(analysis: Analysis) -> str:
    """The status line, then one compact line per refusal or reason (a table pushed cells below the fold)."""
    lines = [
        f'<p style="margin:0.2em 0">Status: {markup.status_badge(analysis.status)} &nbsp; '
        f"{esc(html_summary.STATUS_MEANING[analysis.status])}</p>"
    ]
    lines += [
        f'<div style="{COMPACT_STYLE}"><code class="refusal-code">{esc(p.code)}</code> '
        f"{'' if p.field is None else f'<code>{esc(p.field)}</code> '}{esc(p.message)}</div>"
        for p in analysis.admission.refusals
    ]
    lines += [
        f'<div style="{COMPACT_STYLE}"><code class="reason-code">{esc(r.code)}</code> {esc(r.message)}</div>'
        for r in analysis.reasons
    ]
    return "".join(lines)


def _header(analysis: Analysis) -> pn.pane.HTML:
    return html_pane(
        f'<div class="overview-identity" style="margin:0.2em 0">{identity_line(analysis)}</div>'
        f'<div class="overview-status">{_status(analysis)}</div>'
    )


def _unavailable(analysis: Analysis, needs: str, what: str) -> str:
    return (
        f'<p class="overview-unavailable"><b>Not available: {esc(what)}.</b> '
        f"{esc(html_summary.missing_text(analysis, needs))}</p>"
    )


# ---------------------------------------------------------------- the four cells


def _error_map(analysis: Analysis, numerics: Numerics, selection: Selection) -> list:
    """ULP to the rounded reference for a narrow output, else |output - primary| (log colours, zeros white)."""
    rounded = numerics.rounded_to_output
    dtype = rounded.dtype
    if rounded.identity:
        comparison = numerics.primary
        colour = comparison.abs_error
        what = "|output - primary|"
        scale = colour_scale([colour], LOG, what)
        fields = [Field("error", "|error|", colour), Field("ulp", "ULP (float32)", rounded.ulp.distance, ulp_value)]
        image = grid_map(colour, fields, title=what, colour_label="|error|", **continuous(scale), height=MAP_HEIGHT)
        finite = colour[np.isfinite(colour)]
        spread = finite.size and finite.min() < finite.max()
        colours = (
            f"{'log' if scale.logz else 'linear'} colours {short_number(scale.clim[0])} to "
            f"{short_number(scale.clim[1])}{', white: 0' if scale.logz else ''}"
            if spread
            else scale.note.split(".")[0]
        )
        caption = f"Output float32: |output - primary reference|, {colours}; grey: undefined."
    else:
        what = f"ULP distance in {dtype}"
        fields = [
            Field("ulp", what, rounded.ulp.distance, ulp_value),
            Field("error", f"|output - reference rounded to {dtype}|", rounded.comparison.abs_error),
        ]
        image = ulp_map(rounded.ulp.distance, fields, title=what, what="ULP bucket", height=MAP_HEIGHT)
        caption = (
            f"Output {dtype}: ULP distance to the primary reference rounded (RNE) to {dtype}; white: 0 (the "
            f"same {dtype} value), grey: undefined."
        )
        colour = rounded.ulp.distance
    rows = colour.shape[0]
    height = map_height(rows)
    image = image.opts(
        height=height,
        fontsize={"yticks": TICK_FONT},
        yticks=index_ticks(rows, height - MAP_FRAME_PIXELS, HEAD_LABEL_PIXELS),
    )
    image, ringed = marks.ring_isolated(image, np.nan_to_num(colour, nan=0.0) > 0, "nonzero")
    if ringed:
        caption += " " + ringed
    # No toolbar and no tools but hover (and the click): a compact cell, its full view one click away.
    pane = selectable(
        plot_pane(image.opts(toolbar=None, default_tools=[]), css_classes=["overview-error-map"]), selection
    )
    return [
        _worst_head(numerics),
        pane,
        note_markup(f'<span style="{COMPACT_STYLE}">{esc(caption)}</span>', "overview-caption"),
    ]


def map_height(rows: int, least: int = MAP_HEIGHT) -> int:
    """A compact map's height: `least`, taller (up to MAX_MAP_HEIGHT) when its rows need room to label each."""
    return min(max(least, MAP_FRAME_PIXELS + rows * HEAD_LABEL_PIXELS), MAX_MAP_HEIGHT)


def _worst_head(numerics: Numerics) -> str:
    """One line naming the head with the largest score, so the first screen says it in words, not only in colour."""
    heads = ranked_heads(numerics)
    score = numerics.score.per_head[heads[0]] if heads else None
    if score is None:
        none = "No query head has a score (none compared)."
        return note_markup(f'<span style="{COMPACT_STYLE}">{none}</span>', "overview-worst-head")
    ulp = worst_ulp_per_head(numerics)[heads[0]]
    ulp_text = "" if ulp is None else f", worst ULP {esc(short_number(ulp))}"
    return note_markup(
        f'<span style="{COMPACT_STYLE}" data-head="{heads[0]}">Largest score: <b>query head '
        f"{heads[0]}</b> (score {esc(short_number(score))}{ulp_text}).</span>",
        "overview-worst-head",
    )


def _last_row_line(row: LastRow, name: str) -> str:
    return f"<b>{esc(name)}</b>: {row.mismatched} of {row.compared} elements differ" + (
        "" if row.mismatched else " (all bits equal)"
    )


def _last_rows(analysis: Analysis) -> list:
    """A line of counts each for keys and values, then, when any differ, one map: K0, K1, ... above V0, V1, ...."""
    keys, values = analysis.facts.last_row_keys, analysis.facts.last_row_values
    text = f'<div class="overview-last-row">{_last_row_line(keys, "Keys")}<br>{_last_row_line(values, "Values")}</div>'
    if not (keys.mismatched or values.mismatched):
        return [text]
    labels = [f"K{h}" for h in range(keys.field_mask.shape[0])] + [f"V{h}" for h in range(values.field_mask.shape[0])]
    mask = np.concatenate([keys.field_mask, values.field_mask])
    xor = np.concatenate([keys.xor, values.xor])
    bits = max(sum(FIELD_BITS[keys.dtype]), sum(FIELD_BITS[values.dtype]))
    fields = [
        Field("row", "tensor, KV head", per_cell(range(len(labels)), mask.shape), lambda: named(labels)),
        Field("fields", lastrow.FIELDS_LABEL, mask, lambda: named(lastrow.FIELD_NAMES)),
        Field("xor", "XOR", xor, lambda: hex_pattern(bits)),
    ]
    height = min(MAP_FRAME_PIXELS + max(LAST_ROW_MIN_ROWS_PIXELS, ROW_PIXELS * len(labels)), LAST_ROW_MAX_HEIGHT)
    image = lastrow.field_map(mask, fields, "", height)
    image = image.opts(yticks=list(enumerate(labels)), fontsize={"yticks": TICK_FONT}, toolbar=None, default_tools=[])
    return [text, plot_pane(image, css_classes=["overview-last-row-map"]), lastrow.legend_html()]


def _nonfinite(analysis: Analysis) -> list:
    """One line of counts; when a tensor holds NaN or infinity, the maps of where, side by side (one per tensor)."""
    maps = analysis.facts.nonfinite
    held = [name for name in TENSOR_NAMES if maps[name].total]
    if not held:
        return [note_markup("No NaN and no infinity in any element of the six tensors.", "overview-finite")]

    def counts(name: str) -> str:
        m = maps[name]
        kinds = [(m.nan, "NaN"), (m.positive_infinity, "+inf"), (m.negative_infinity, "-inf")]
        said = ", ".join(f"{count} {kind}" for count, kind in kinds if count)
        signaling = f" ({m.signaling_nan} signaling)" if m.signaling_nan else ""
        return f"<code>{name}</code> {esc(said)}{esc(signaling)}"

    finite = [name for name in TENSOR_NAMES if name not in held]
    line = "; ".join(counts(name) for name in held) + "."
    if finite:
        line += f" No NaN and no infinity in {nonfinite.codes(finite)} (only these)."
    panes = [plot_pane(_compact_nonfinite_map(analysis, name)) for name in held]
    grid = pn.GridBox(
        *panes,
        ncols=min(len(panes), NONFINITE_COLUMNS),
        sizing_mode="stretch_width",
        css_classes=["overview-nonfinite-maps"],
    )
    return [
        f'<div class="overview-nonfinite" style="{COMPACT_STYLE}">{line}</div>',
        grid,
        f'<div style="{COMPACT_STYLE}">{nonfinite.legend_html()}</div>',
    ]


def _compact_nonfinite_map(analysis: Analysis, name: str):
    """A tensor's nonfinite map to sit beside another: titled by the tensor, no colour bar (the hover tells)."""
    rows = analysis.facts.nonfinite[name].kinds.shape[0]
    height = map_height(rows, NONFINITE_MAP_HEIGHT)
    image = nonfinite.tensor_map(analysis, name, height)
    return image.opts(
        title=name,
        toolbar=None,
        default_tools=[],
        colorbar=False,
        min_width=NONFINITE_MAP_MIN_WIDTH,
        fontsize={"yticks": TICK_FONT, "title": TITLE_FONT},
        yticks=index_ticks(rows, height - MAP_FRAME_PIXELS, HEAD_LABEL_PIXELS),
    )


def _narrowed(analysis: Analysis, numerics: Numerics) -> list:
    nq = numerics.narrowed_query
    if nq is None:
        return [not_applicable(analysis)]
    floor = ("FP64 noise floor", numerics.fp64.reference_error)
    legend, chart = per_head_charts(
        [("vs primary reference", numerics.primary), ("vs narrowed-Q counterfactual", nq.comparison)],
        floor,
        metrics=(("linf", "linf"),),
        height=CHART_HEIGHT,
        upright=UPRIGHT_HEAD_LABELS,
        compact=True,
    )
    caption = (
        f"Output linf per head against each reference (counterfactual: queries rounded to {esc(nq.dtype)}; "
        "never the reference)."
    )
    # The legend's markup joins the title's pane (one pane fewer per session).
    return [legend.object, chart, note_markup(f'<span style="{COMPACT_STYLE}">{caption}</span>', "overview-caption")]


def _cell(slug: str, title: str, tab_title: str, selection: Selection, body: list) -> pn.Column:
    """The cell's link, title and `body` (markup and panes), each run of markup one pane (panes cost time)."""
    link = pn.widgets.Button(
        label=f"{tab_title} \u2192",
        color="light",
        width=LINK_WIDTH,
        height=LINK_HEIGHT,
        css_classes=["overview-link"],
        margin=0,
        styles=LINK_STYLE,
    )
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
    return pn.Column(
        *parts,
        sizing_mode="stretch_width",
        styles=CELL_STYLE,
        margin=CELL_MARGIN,
        css_classes=["overview-cell", f"overview-{slug}"],
    )


def _where_caption(numerics: Numerics) -> str:
    """The error map's last caption: the largest ULP distance and |output - reference|, each where it is."""
    ulp, largest = ulp_finding(numerics), largest_error_finding(numerics)
    parts = [] if ulp is None else [f"ULP max {ulp.numbers['max']}{at_text(ulp.numbers['maxAt'])}"]
    if largest is not None:
        parts.append(
            f"largest |output - primary reference| {short_number(largest.numbers['linf'])}"
            f"{at_text(largest.numbers['linfAt'])}"
        )
    if not parts:
        return ""
    markup = f'<span style="{COMPACT_STYLE}">{esc("; ".join(parts))}.</span>'
    return note_markup(markup, "overview-caption overview-where")


def _cells(analysis: Analysis, selection: Selection) -> list:
    numerics, needs_numerics, needs_facts = analysis.numerics, html_summary.NEEDS_NUMERICS, html_summary.NEEDS_FACTS
    bodies = {  # slug: (what the cell needs, what it draws, its body); the live app's hint (left out of exports) last
        "errors": (
            needs_numerics,
            "the per-head error map",
            lambda: [*_error_map(analysis, numerics, selection), _where_caption(numerics), hint(MAP_HINT)],
        ),
        "lastrow": (needs_facts, "the last-row bit comparison", lambda: _last_rows(analysis)),
        "nonfinite": (needs_facts, "the nonfinite counts", lambda: _nonfinite(analysis)),
        "narrowed": (needs_numerics, "the narrowed-Q counterfactual", lambda: _narrowed(analysis, numerics)),
    }
    cells = []
    for slug, title, tab in CELLS:
        needs, what, body = bodies[slug]
        drawn = body() if html_summary.missing_text(analysis, needs) is None else [_unavailable(analysis, needs, what)]
        cells.append(_cell(slug, title, tab, selection, drawn))
    return cells


def build(analysis: Analysis, selection: Selection) -> pn.Column:
    """The overview of one analysis (every status): header, then the four compact views two by two."""
    grid = pn.GridBox(*_cells(analysis, selection), ncols=2, sizing_mode="stretch_width", css_classes=["overview-grid"])
    return section("view-overview", _header(analysis), grid)
