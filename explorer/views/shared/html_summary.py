"""Compact HTML of one analysis (status, reasons, per-head primary metrics) as plain strings."""

from __future__ import annotations

from collections.abc import Sequence

from explorer.analysis.ranking import noise_floor_ratios, ranked_heads, worst_ulp_per_head
from explorer.analysis.result import Analysis, Comparison, Metrics
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED, Problem, Reason
from explorer.views.shared.markup import BOX_STYLE, esc, number_cell, status_badge, table

LARGEST_HEADS = 3  # heads with the largest primary linf, listed in the notebook summary


STATUS_MEANING = {
    ANALYZED: "The packet was admitted and every comparison was computed; no inconclusive reason applies.",
    INCONCLUSIVE: "The packet is well-formed, but the reasons below limit what its numbers can be taken to show.",
    REFUSED: "The packet was refused at admission (the refusal codes below): nothing in it is interpreted "
    "and nothing numeric is computed.",
}
# What a view cannot show, and why, keyed by what it needs.
NEEDS_FACTS, NEEDS_NUMERICS = "facts", "numerics"
MISSING_BECAUSE_REFUSED = (
    "This packet was refused, so nothing in it is interpreted: no tensor facts, "
    "no reference and no metrics exist for it."
)
MISSING = {
    NEEDS_FACTS: "No tensor facts exist: they need all six tensor files verified and the tensor geometry to hold.",
    NEEDS_NUMERICS: "No reference was computed: the selection is unsupported or not confirmed (the inconclusive "
    "reasons above), so the analysis stops before numerics. Tensor facts (nonfinite maps, "
    "last-row bits) are still shown in their tabs when the files verified.",
}


def refusals_table(problems: Sequence[Problem]) -> str:
    return table(
        ("refusal code", "field (JSON pointer)", "message"),
        (
            (
                f'<code class="refusal-code">{esc(p.code)}</code>',
                f"<code>{esc(p.field)}</code>" if p.field is not None else "<i>packet.json as a whole</i>",
                esc(p.message),
            )
            for p in problems
        ),
        css_class="refusals",
    )


def reasons_table(reasons: Sequence[Reason], css_class: str = "reasons") -> str:
    return table(
        ("inconclusive reason", "message"),
        ((f'<code class="reason-code">{esc(r.code)}</code>', esc(r.message)) for r in reasons),
        css_class=css_class,
    )


def status_html(analysis: Analysis) -> str:
    """Status badge, what it means, and every refusal or inconclusive reason with its code and message."""
    parts = [f"<p>Status: {status_badge(analysis.status)} &nbsp; {esc(STATUS_MEANING[analysis.status])}</p>"]
    if analysis.admission.refusals:
        parts.append(refusals_table(analysis.admission.refusals))
    if analysis.reasons:
        parts.append(reasons_table(analysis.reasons))
    return "".join(parts)


def missing_text(analysis: Analysis, needs: str) -> str | None:
    """Why a view needing `needs` (NEEDS_FACTS or NEEDS_NUMERICS) has nothing to draw, or None when it has."""
    available = analysis.facts if needs == NEEDS_FACTS else analysis.numerics
    if available is not None:
        return None
    return MISSING_BECAUSE_REFUSED if analysis.status == REFUSED else MISSING[needs]


def explanation_html(analysis: Analysis, needs: str | None = None, what: str = "") -> str:
    """The status box a view opens with when the packet is not analyzed or `what` it draws is missing."""
    missing = None if needs is None else missing_text(analysis, needs)
    if analysis.status == ANALYZED and missing is None:
        return ""
    tail = ""
    if missing is not None:
        lead = f"Not available in this tab: {esc(what)}. " if what else ""
        tail = f'<p class="missing-explanation"><b>{lead}{esc(missing)}</b></p>'
    return f'<div class="status-explanation" style="{BOX_STYLE}">{status_html(analysis)}{tail}</div>'


def largest_heads(comparison: Comparison, count: int = LARGEST_HEADS) -> list[int]:
    """Query heads with the largest defined per-head linf, largest first (ties: lower head first)."""
    defined = [(m.linf, h) for h, m in enumerate(comparison.per_head) if m.linf is not None]
    return [h for _, h in sorted(defined, key=lambda pair: (-pair[0], pair[1]))[:count]]


def metric_cells(m: Metrics) -> list[str]:
    return [number_cell(m.linf), number_cell(m.rmse), number_cell(m.relative_l2), esc(m.undefined_reason or "")]


METRIC_HEADER = ("linf", "rmse", "relativeL2", "undefined reason")


def per_head_table(analysis: Analysis, heads: Sequence[int] | None = None) -> str:
    """Primary per-head metrics with each head's score, noise-floor ratio and worst ULP (all heads ranked by score,
    or `heads`)."""
    numerics = analysis.numerics
    if numerics is None:
        return ""
    primary = numerics.primary
    scores, ratios, ulps = numerics.score.per_head, noise_floor_ratios(numerics), worst_ulp_per_head(numerics)
    order = ranked_heads(numerics) if heads is None else list(heads)
    rows = [
        [
            str(h),
            str(numerics.attention[h].kv_head),
            number_cell(scores[h]),
            *metric_cells(primary.per_head[h])[:3],
            number_cell(ratios[h]),
            number_cell(ulps[h]),
            *metric_cells(primary.per_head[h])[3:],
        ]
        for h in order
    ]
    dtype = numerics.rounded_to_output.dtype
    return table(
        (
            "query head",
            "KV head",
            "score (error / allowance)",
            *METRIC_HEADER[:3],
            "linf / own FP64 noise floor",
            f"max ULP to reference rounded to {esc(dtype)}",
            METRIC_HEADER[3],
        ),
        rows,
        css_class="per-head-primary",
    )


def global_table(analysis: Analysis) -> str:
    """Global metrics of the primary comparison (and its eligible-heads aggregate when present)."""
    numerics = analysis.numerics
    if numerics is None:
        return ""
    primary = numerics.primary
    rows = [["all heads", *metric_cells(primary.global_metrics)]]
    if primary.eligible_global is not None:
        rows.append(["eligible heads only", *metric_cells(primary.eligible_global)])
    return table(("", *METRIC_HEADER), rows, css_class="global-primary")


def comparison_rows(series: Sequence[tuple[str, Comparison]]) -> str:
    """Global metric table of several comparisons, each labelled as the result labels it."""
    rows = []
    for label, comparison in series:
        rows.append([esc(label), "all heads", *metric_cells(comparison.global_metrics)])
        if comparison.eligible_global is not None:
            rows.append([esc(label), "eligible heads only", *metric_cells(comparison.eligible_global)])
    return table(("comparison", "heads", *METRIC_HEADER), rows, css_class="global-metrics")


def per_head_rows(series: Sequence[tuple[str, Comparison]], kv_heads: Sequence[int]) -> str:
    """Per-head metric table of several comparisons (one row per head and comparison)."""
    rows = [
        [str(h), str(kv), esc(label), *metric_cells(comparison.per_head[h])]
        for h, kv in enumerate(kv_heads)
        for label, comparison in series
    ]
    return table(("query head", "KV head", "comparison", *METRIC_HEADER), rows, css_class="per-head-metrics")


def overview_html(analysis: Analysis) -> str:
    """A compact, self-contained HTML summary: status, reasons, primary global metrics and the largest-linf heads."""
    parts = [
        f'<div class="analysis-overview"><p><code>{esc(analysis.admission.path)}</code></p>',
        status_html(analysis),
    ]
    numerics = analysis.numerics
    if numerics is None:
        parts.append(f"<p><i>{esc(missing_text(analysis, NEEDS_NUMERICS))}</i></p>")
    else:
        parts.append(f"<p><b>{esc(numerics.primary.label)}</b></p>{global_table(analysis)}")
        largest = largest_heads(numerics.primary)
        if largest:
            parts.append(
                f"<p>Query heads with the largest primary linf (largest first):</p>{per_head_table(analysis, largest)}"
            )
    parts.append("</div>")
    return "".join(parts)
