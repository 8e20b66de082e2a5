"""Narrowed-Q view: the counterfactual beside the primary reference, or why it does not apply."""

from __future__ import annotations

from explorer.analysis.result import Analysis, Comparison, NarrowedQuery, Numerics
from explorer.views.shared import html_summary
from explorer.views.shared.charts import metric_choice, per_head_charts
from explorer.views.shared.common import (
    Field,
    Selection,
    continuous,
    explained,
    grid_map,
    heading,
    html_pane,
    note,
    plot_pane,
    state_markup,
)
from explorer.views.shared.html_summary import comparison_rows
from explorer.views.shared.marks import selectable
from explorer.views.shared.markup import esc
from explorer.views.shared.scales import LOG, colour_scale

DIFFERENCE_LABEL = "|difference|"  # colour-bar label: the map's title names the two sides
REASON_WORDS = {
    "queries_not_float32": (
        "The queries are {queries}, not float32. The counterfactual asks what the output would be had float32 "
        "queries been rounded to the K/V storage dtype before the dot products; queries that are already narrow "
        "have nothing to round, so there is no counterfactual to compare."
    ),
    "storage_not_narrow": (
        "The stored keys and values are {storage}, not float16 or bfloat16, so there is no narrower storage "
        "dtype to round the queries to, and no counterfactual to compare."
    ),
}


def reason_words(analysis: Analysis, code: str | None) -> str:
    tensors = analysis.admission.tensors
    template = REASON_WORDS.get(code or "", "The counterfactual was not computed (reason code {code}).")
    return template.format(queries=tensors["queries"].dtype, storage=tensors["storedKeys"].dtype, code=code)


def not_applicable(analysis: Analysis) -> str:
    """The state line saying why the counterfactual does not apply (this view and the overview)."""
    reason = analysis.numerics.narrowed_query_reason
    why = f'<code class="narrowed-reason">{esc(reason)}</code>): {esc(reason_words(analysis, reason))}'
    return state_markup(f"<b>Not applicable</b> ({why}", "narrowed-not-applicable")


def _difference_map(
    comparison: Comparison, title: str, actual: str, reference: str, what: str, selection: Selection
) -> list:
    """The map titled with the difference `what`, its colour bar DIFFERENCE_LABEL (it fits); a click selects."""
    scale = colour_scale([comparison.abs_error], LOG, what)
    fields = [
        Field("actual", actual, comparison.actual),
        Field("reference", reference, comparison.reference),
        Field("difference", DIFFERENCE_LABEL, comparison.abs_error),
    ]
    image = grid_map(comparison.abs_error, fields, title=title, colour_label=DIFFERENCE_LABEL, **continuous(scale))
    return [selectable(plot_pane(image), selection), note(esc(scale.note), "colour-scale-note")]


def _applicable(numerics: Numerics, nq: NarrowedQuery, selection: Selection) -> list:
    floor = (f"FP64 noise floor: {numerics.fp64.reference_error.label}", numerics.fp64.reference_error)
    errors = [("output vs primary reference", numerics.primary), ("output vs narrowed-Q counterfactual", nq.comparison)]
    difference = nq.difference_from_primary
    rounding = nq.query_rounding_difference
    choice = metric_choice()  # one metric for the three per-head charts
    return [
        heading(
            nq.label,
            f"q' = round(q, {esc(nq.dtype)}) (round to nearest even), the reference recomputed from "
            "q' exactly like the primary. A counterfactual beside the primary reference, never the reference.",
        ),
        html_pane(comparison_rows([(c.label, c) for c in (numerics.primary, nq.comparison, difference, rounding)])),
        heading(
            "Output error against each reference",
            "Per query head, log y; FP64 noise floor dashed. The "
            "metric chosen here is drawn by the three per-head charts of this tab.",
        ),
        choice,
        *per_head_charts(errors, floor, choice=choice),
        heading("Difference between the two references", esc(difference.label)),
        *per_head_charts([("counterfactual vs primary reference", difference)], choice=choice),
        *_difference_map(
            difference,
            "|narrowed-Q reference - primary reference|",
            "narrowed-Q reference",
            "primary reference",
            "|narrowed-Q reference - primary reference|",
            selection,
        ),
        heading("Query rounding difference", esc(rounding.label)),
        *per_head_charts([("q' vs q", rounding)], choice=choice),
        *_difference_map(
            rounding, "|q' - q| per query head and channel", "q' (narrowed)", "q (original)", "|q' - q|", selection
        ),
    ]


def _body(analysis: Analysis, selection: Selection) -> list:
    numerics = analysis.numerics
    if numerics.narrowed_query is None:
        return [
            heading("Narrowed-Q counterfactual"),
            html_pane(not_applicable(analysis)),
            note("The primary reference and the rounded comparisons are in the Per-head errors tab."),
        ]
    return _applicable(numerics, numerics.narrowed_query, selection)


# The narrowed-Q view of one analysis (explains itself when no reference was computed).
build = explained(
    html_summary.NEEDS_NUMERICS, _body, "the narrowed-Q counterfactual beside the primary reference", "view-narrowed"
)
