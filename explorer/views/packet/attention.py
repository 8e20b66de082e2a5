"""Attention view: a query head's softmax weights (log y) and diagnostics, then every head's."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn

from explorer.analysis.result import Analysis, HeadAttention, Numerics
from explorer.views.shared import head_chart, html_summary
from explorer.views.shared.charts import CHART_WIDTH, head_chart_pane, per_head_values
from explorer.views.shared.common import (
    Field,
    Selection,
    continuous,
    exact_number,
    explained,
    grid_map,
    heading,
    hover,
    html_pane,
    note,
    plot_pane,
    state,
)
from explorer.views.shared.markup import esc, number_cell, table
from explorer.views.shared.scales import LOG, colour_scale

MAX_OVERVIEW_CELLS = 250_000  # query head x token weights drawn in one overview map
MAX_CURVE_POINTS = 4_000  # tokens drawn in one head's weight curve; past it, two per bin of consecutive tokens
WEIGHTS_HEIGHT = 320
LAST_TOKEN_COLOUR = "#d62728"
TOP_TOKEN_COLOUR = "#ff7f0e"
WEIGHT_COLOUR = "#1f77b4"
OVERVIEW_METRICS = (
    ("entropy", "entropy (nats)", False),
    ("last_token_weight", "last-token weight", True),
    ("max_logit", "max logit (scaled)", False),
    ("log_sum_exp", "logSumExp", False),
)


def _diagnostics_rows(entries: tuple[HeadAttention, ...]) -> list:
    return [
        (
            str(a.query_head),
            str(a.kv_head),
            number_cell(a.max_logit),
            number_cell(a.log_sum_exp),
            number_cell(a.entropy),
            number_cell(a.last_token_weight),
            esc(a.undefined_reason or ""),
        )
        for a in entries
    ]


DIAGNOSTICS_HEADER = (
    "query head",
    "KV head",
    "max logit",
    "logSumExp",
    "entropy (nats)",
    "last-token weight",
    "undefined reason",
)


def drawn_tokens(weights: np.ndarray, limit: int = MAX_CURVE_POINTS) -> np.ndarray:
    """The tokens a weight curve draws, ascending: every token up to `limit`; past it, in each of limit // 2 bins of
    consecutive tokens, the one of largest weight and the one of smallest positive weight (every peak and every
    trough stays visible on the log axis; the values drawn are the weights themselves, never averages)."""
    size = weights.size
    if size <= limit:
        return np.arange(size)
    bins = limit // 2
    width = -(-size // bins)  # the last bin may be shorter; none is empty
    largest = np.full(bins * width, -np.inf, dtype=weights.dtype)
    largest[:size] = weights
    smallest = np.full(bins * width, np.inf, dtype=weights.dtype)
    smallest[:size] = np.where(weights > 0, weights, np.inf)
    starts = np.arange(bins) * width
    chosen = np.concatenate(
        [starts + largest.reshape(bins, width).argmax(axis=1), starts + smallest.reshape(bins, width).argmin(axis=1)]
    )
    return np.unique(chosen[chosen < size])


def _weights_chart(weights: np.ndarray, entry: HeadAttention, tokens: np.ndarray) -> hv.Overlay:
    drawable = np.where(weights[tokens] > 0, weights[tokens], np.nan)
    on_hover = hover([("token", "@{token}"), ("weight", "@{weight}{custom}")], {"@{weight}": exact_number})
    curve = hv.Curve((tokens, drawable), "token", "weight", label="softmax weight").opts(
        color=WEIGHT_COLOUR, **on_hover
    )
    top = [t for t, _ in entry.top_tokens or ()]
    last = weights.size - 1
    layers = [
        curve,
        hv.Scatter((np.asarray(top), weights[top]), "token", "weight", label="top tokens").opts(
            color=TOP_TOKEN_COLOUR, size=8, marker="circle", **on_hover
        ),
        hv.Scatter(([last], [weights[last]]), "token", "weight", label="incoming token T-1").opts(
            color=LAST_TOKEN_COLOUR, size=10, marker="triangle", **on_hover
        ),
    ]
    drawn = "" if tokens.size == weights.size else f", {tokens.size} of {weights.size} tokens drawn"
    return hv.Overlay(layers).opts(
        title=f"Softmax weights of query head {entry.query_head} (KV head {entry.kv_head}){drawn}",
        logy=True,
        height=WEIGHTS_HEIGHT,
        responsive=True,
        min_width=CHART_WIDTH,
        show_grid=True,
        legend_position="right",
        padding=(0.02, 0.1),
        xlabel="token",
        ylabel="weight (log)",
    )


def head_panel(numerics: Numerics, head: int) -> pn.Column:
    """The selected head's weights and diagnostics (an explanation when the head number or its values are missing)."""
    heads = len(numerics.attention)
    if not 0 <= head < heads:
        missing = f"Query head {head} does not exist in this packet (heads 0..{heads - 1})."
        return pn.Column(state(missing, "head-out-of-range"), sizing_mode="stretch_width")
    entry = numerics.attention[head]
    parts = [html_pane(table(DIAGNOSTICS_HEADER, _diagnostics_rows((entry,)), css_class="head-diagnostics"))]
    if entry.undefined_reason is not None:
        why = (
            f"<code>{esc(entry.undefined_reason)}</code> (ineligible inputs or overflowing logits; the values are null)"
        )
        return pn.Column(
            *parts, state(f"No weights for query head {head}: {why}.", "head-undefined"), sizing_mode="stretch_width"
        )
    weights = numerics.weights[head]
    zeros = int(np.sum(weights == 0))
    top = table(
        ("rank", "token", "weight"),
        (
            (str(rank), str(token), number_cell(weight))
            for rank, (token, weight) in enumerate(entry.top_tokens or (), start=1)
        ),
        css_class="top-tokens",
    )
    tokens = drawn_tokens(weights)
    parts += [
        plot_pane(_weights_chart(weights, entry, tokens)),
        note(
            f"{zeros} of {weights.size} weights are exactly zero and cannot be drawn on the log axis."
            if zeros
            else "Every weight is positive and drawn."
            if tokens.size == weights.size
            else "Every weight is positive."
        ),
        *_thinned_note(tokens.size, weights.size),
        heading("Top tokens", "Largest weights first, ties by lower token."),
        html_pane(top),
    ]
    return pn.Column(*parts, sizing_mode="stretch_width")


def _thinned_note(drawn: int, tokens: int) -> list:
    """The caption of a thinned weight curve: what it draws of the head's tokens (none when it draws them all)."""
    if drawn == tokens:
        return []
    bins = MAX_CURVE_POINTS // 2
    return [
        note(
            f"The curve draws {drawn} of {tokens} tokens: {tokens} exceed {MAX_CURVE_POINTS}, so each of {bins} "
            f"bins of {-(-tokens // bins)} consecutive tokens shows its largest and its smallest positive weight "
            "(exact values, no averages; zooming in shows these same points); the top tokens and the incoming "
            "token are marked at their own positions.",
            "thinned-curve",
        )
    ]


def _diagnostic_chart(numerics: Numerics, attribute: str) -> pn.viewable.Viewable:
    """One attention diagnostic per query head, markers joined by a line (log y for the last-token weight)."""
    label, logy = next((label, logy) for name, label, logy in OVERVIEW_METRICS if name == attribute)
    values = per_head_values(numerics.attention, attribute)
    series = head_chart.Series(label, values, WEIGHT_COLOUR, line="solid")
    chart = head_chart_pane([series], title=f"{label} per query head", ylabel=label, log=logy)
    hidden = np.flatnonzero(~head_chart.drawable(values, logy))
    if not hidden.size:
        return chart
    why = "null, or not positive on the log axis" if logy else "null"
    return pn.Column(
        chart,
        note(
            f"Not drawn ({why}): query heads {', '.join(map(str, hidden))}; the table lists every value.",
            "hidden-values",
        ),
        sizing_mode="stretch_width",
    )


def _diagnostic_charts(numerics: Numerics) -> list:
    """A selector of the diagnostic and its chart across query heads (one figure; the table lists them all)."""
    choice = pn.widgets.RadioButtonGroup(
        options={label: name for name, label, _ in OVERVIEW_METRICS},
        value=OVERVIEW_METRICS[0][0],
        css_classes=["diagnostic-choice"],
    )
    return [choice, pn.panel(pn.bind(_diagnostic_chart, numerics, choice), sizing_mode="stretch_width")]


def _overview_map(numerics: Numerics) -> list:
    weights = numerics.weights
    if weights.size > MAX_OVERVIEW_CELLS:
        too_many = f"{weights.size} weights exceed {MAX_OVERVIEW_CELLS}; choose a head above to see its weights"
        return [note(f"The query head x token map is not drawn: {too_many}.")]
    scale = colour_scale([weights], LOG, "weight")
    image = grid_map(
        weights,
        [Field("weight", "weight", weights)],
        title="Softmax weights, query head x token",
        colour_label="weight",
        xlabel="token",
        **continuous(scale),
    )
    return [plot_pane(image), note(esc(scale.note), "colour-scale-note")]


def _head_selector(numerics: Numerics, selection: Selection) -> pn.widgets.Select:
    options = {f"query head {a.query_head} (KV head {a.kv_head})": a.query_head for a in numerics.attention}
    return pn.widgets.Select.from_param(
        selection.param.head, options=options, label="Query head", width=260, css_classes=["head-selector"]
    )


def _body(analysis: Analysis, selection: Selection) -> list:
    numerics = analysis.numerics
    heads = len(numerics.attention)
    fallback = []
    if selection.head >= heads:
        missing = f"Query head {selection.head} does not exist in this packet (heads 0..{heads - 1})"
        fallback = [state(f"{missing}; showing query head 0.", "head-out-of-range")]
        selection.head = 0
    return [
        heading("Selected query head", "Softmax weights of the primary computation (scaled logits)."),
        *fallback,
        _head_selector(numerics, selection),
        pn.panel(pn.bind(head_panel, numerics, selection.param.head), sizing_mode="stretch_width"),
        heading("Across query heads", "The chart shows one diagnostic per head; the table below lists all of them."),
        *_diagnostic_charts(numerics),
        *_overview_map(numerics),
        html_pane(table(DIAGNOSTICS_HEADER, _diagnostics_rows(numerics.attention), css_class="all-diagnostics")),
    ]


# The attention view, following `selection.head` (a head the packet lacks becomes 0, and it says so).
build = explained(
    html_summary.NEEDS_NUMERICS, _body, "the softmax weights and attention diagnostics per query head", "view-attention"
)
