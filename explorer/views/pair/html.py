"""The pair's tables as plain HTML strings; never imports a UI library.

Numbers show 4 significant digits, the full value (as the JSON report prints it) in each cell's hover title.
"""

from __future__ import annotations

from collections.abc import Sequence

from explorer.analysis.result import Metrics
from explorer.foundations.formatting import MISSING
from explorer.foundations.formatting import full_number as number
from explorer.packet.model import INCONCLUSIVE, REFUSED
from explorer.pair.compare import COMPARED
from explorer.pair.emulation import ranked_rows
from explorer.pair.findings import DECIDING, pair_findings
from explorer.pair.model import NEARER_KEYS, PAIR_LIMITATIONS, SIDES, LadderRow, Pair
from explorer.pair.report import (
    emulation_decisive_block,
    emulation_differing_block,
    emulation_matrix_block,
    side_summary,
)
from explorer.views.packet.emulation_tables import pair_emulation_table
from explorer.views.shared.html_summary import reasons_table, refusals_table
from explorer.views.shared.markup import BOX_STYLE, STATUS_COLOURS, WRAP_STYLE, esc, number_cell, status_badge, table

SHOWN_POSITIONS = 8  # first differing input positions listed per tensor (the report holds up to 100)
PAIR_STATUS_COLOURS = {**STATUS_COLOURS, COMPARED: STATUS_COLOURS["analyzed"]}  # compared: as an analyzed packet
PAIR_STATUS_MEANING = {
    COMPARED: "Both sides analyzed, one selection, one shape: every element-wise comparison below was computed.",
    INCONCLUSIVE: "The reasons below limit what this pair's comparison can be taken to show; what both sides "
    "allow is still computed.",
    REFUSED: "A side was refused at admission: nothing in it is interpreted and nothing is compared.",
}
LADDER_BLOCKS = (
    ("primary", "vs primary reference"),
    ("rounded_to_output", "vs reference rounded to output dtype"),
    ("fp64_output_error", "vs FP64 (diagnostic)"),
)
LADDER_METRICS = (("linf", "linf"), ("rmse", "rmse"), ("relative_l2", "relativeL2"))


def sides_table(pair: Pair) -> str:
    """Each side's packet, status and the fields allowed to differ, side by side."""
    report = {s: side_summary(pair.side(s)) for s in SIDES}
    rows = [
        ("packet", *(f'<code style="{WRAP_STYLE}">{esc(report[s]["path"])}</code>' for s in SIDES)),
        ("status", *(status_badge(report[s]["status"]) for s in SIDES)),
    ]
    rows += [
        (esc(label), *(f'<span style="{WRAP_STYLE}">{esc(number(report[s][key]))}</span>' for s in SIDES))
        for key, label in (
            ("backend", "backend (declared)"),
            ("dispatch", "dispatch"),
            ("outputDType", "output dtype"),
            ("kernelOutputDType", "kernel output dtype"),
            ("packetSHA256", "packet.json SHA-256"),
        )
    ]
    return table(("", "side a", "side b"), rows, css_class="pair-sides")


def status_html(pair: Pair) -> str:
    badge = status_badge(pair.status, css_class="pair-status", colours=PAIR_STATUS_COLOURS)
    parts = [f"<p>Pair status: {badge} &nbsp; {esc(PAIR_STATUS_MEANING[pair.status])}</p>"]
    for refusal_side in SIDES:
        problems = [r.problem for r in pair.refusals if r.side == refusal_side]
        if problems:
            parts.append(f"<p>Side {refusal_side} refusals:</p>{refusals_table(problems)}")
    if pair.reasons:
        parts.append(reasons_table(pair.reasons, "pair-reasons"))
    return "".join(parts)


def selection_html(pair: Pair) -> str:
    if pair.selection is None:
        return "<p><i>No selection is compared: a side was refused.</i></p>"
    shared = table(
        ("selection field (both sides)", "value"),
        ((f"<code>{esc(k)}</code>", esc(number(v))) for k, v in pair.selection),
        css_class="pair-selection",
    )
    if not pair.selection_differences:
        return shared
    differences = table(
        ("selection field that differs", "side a", "side b"),
        ((f"<code>{esc(d.field)}</code>", esc(number(d.a)), esc(number(d.b))) for d in pair.selection_differences),
        css_class="selection-differences",
    )
    return differences + shared


def _positions(positions: Sequence[Sequence[int]], total: int) -> str:
    shown = ", ".join(f"[{', '.join(str(i) for i in p)}]" for p in positions[:SHOWN_POSITIONS])
    if total > SHOWN_POSITIONS:
        shown += f" ... ({total} differ; the report lists the first {len(positions)})"
    return shown or "none"


def inputs_table(pair: Pair) -> str:
    """Per input tensor: identical or not, elements differing, per head, bit flips and the first positions."""
    if pair.inputs is None:
        return "<p><i>Inputs not compared element-wise: a side was refused or the shapes differ.</i></p>"
    rows = [
        (
            f"<code>{esc(name)}</code>",
            esc(t.dtype),
            f'<span class="identical" data-identical="{str(t.identical).lower()}">'
            f"{'identical' if t.identical else 'differs'}</span>",
            f"{t.mismatched} of {t.compared}",
            esc(list(t.per_head)),
            ", ".join(f"{esc(k)} {esc(v)}" for k, v in t.bit_flips.items()),
            esc(_positions(t.first_positions, t.mismatched)),
        )
        for name, t in pair.inputs.tensors.items()
    ]
    lead = (
        "All five input tensors are byte-identical."
        if pair.inputs.identical
        else "The inputs are not byte-identical: output differences mix input and arithmetic differences."
    )
    return f'<p class="inputs-lead"><b>{esc(lead)}</b></p>' + table(
        (
            "tensor",
            "dtype",
            "native bytes",
            "elements differing",
            "per head (axis 1)",
            "differing bits by field",
            "first differing [head, token, channel]",
        ),
        rows,
        css_class="pair-inputs",
    )


def findings_html(pair: Pair) -> str:
    """The pair's findings (explorer.pair.findings) for its first screen, those saying which side is off in bold."""
    items = "".join(
        f'<li class="finding-{esc(f.key)}" style="margin:0.15em 0">'
        f"{'<b>' + esc(f.text) + '</b>' if f.key in DECIDING else esc(f.text)}</li>"
        for f in pair_findings(pair)
    )
    return f'<ul class="pair-findings" style="font-size:1.05em;margin:0.3em 0 0.6em 0;padding-left:1.2em">{items}</ul>'


def _metric_cells(m: Metrics) -> list[str]:
    return [number_cell(getattr(m, attribute), bare=True) for attribute, _ in LADDER_METRICS]


def ladder_table(pair: Pair) -> str:
    """The two sides as columns; a row per reference and metric, then the elements equal to the rounded one."""
    if pair.ladder is None:
        return "<p><i>No ladder: neither side has a reference (see the status).</i></p>"
    ladder: dict[str, LadderRow | None] = {side: pair.ladder[side] for side in SIDES}
    rows = [["backend", *(esc(number(side_summary(pair.side(side))["backend"])) for side in SIDES)]]
    for attribute, label in LADDER_BLOCKS:
        missing = [MISSING] * len(LADDER_METRICS)
        cells = {
            side: _metric_cells(getattr(row, attribute)) if row is not None else missing for side, row in ladder.items()
        }
        rows += [
            [f"{esc(label)}: {esc(metric)}", *(cells[side][index] for side in SIDES)]
            for index, (_, metric) in enumerate(LADDER_METRICS)
        ]
    equal = [
        "no reference on this side" if row is None else f"{row.equal_to_rounded_reference} of {row.compared}"
        for row in ladder.values()
    ]
    rows.append(["equal to rounded reference", *equal])
    return table(("", "side a", "side b"), rows, css_class="pair-ladder")


NEARER_HEADER = ("query head", *(f"nearer {k}" if k in SIDES else k for k in NEARER_KEYS))


def nearer_html(pair: Pair) -> str:
    """Global counts of elements nearer the shared primary reference, or why there are none."""
    nearer = pair.nearer
    if nearer is None:
        return (
            f'<p class="nearer-reason">Nearer the primary reference: not computed '
            f"(<code>{esc(pair.nearer_reason)}</code>).</p>"
        )
    return table(
        NEARER_HEADER, [("all", *(esc(getattr(nearer.global_counts, k)) for k in NEARER_KEYS))], css_class="pair-nearer"
    )


def nearer_per_head_html(pair: Pair) -> str:
    """The same counts per query head (empty without them)."""
    if pair.nearer is None:
        return ""
    rows = [(str(h), *(esc(getattr(c, k)) for k in NEARER_KEYS)) for h, c in enumerate(pair.nearer.per_head)]
    return table(NEARER_HEADER, rows, css_class="pair-nearer-per-head")


def tokens_html(pair: Pair) -> str:
    tokens = pair.tokens
    if tokens is None:
        return "<p><i>Tokens not established: a side was refused.</i></p>"
    rows = [
        ("seed token", esc(number(tokens.seed_token)), esc(number(tokens.seed_token))),
        ("target token", esc(number(tokens.target_a)), esc(number(tokens.target_b))),
    ]
    lead = "The two target tokens differ." if tokens.differ else "The two target tokens are equal."
    return f'<p class="tokens-lead"><b>{lead}</b></p>' + table(("", "side a", "side b"), rows, css_class="pair-tokens")


def emulation_matrix_html(pair: Pair) -> str:
    """The emulation x side matrix: per side, the decisive, differing and all elements equal to each emulation."""
    emulation = pair.emulation
    if emulation is None:
        return "<p><i>No kernel emulation was requested for this pair.</i></p>"
    if emulation.rows is None:
        return (
            f'<p class="emulation-matrix-reason">No emulation x side matrix (<code>{esc(emulation.reason)}</code>).</p>'
        )
    labels = {row.a.id: row.a.label for row in emulation.rows}
    header, rows = pair_emulation_table(
        emulation_matrix_block(pair), emulation_differing_block(pair), emulation_decisive_block(pair)
    )
    cells = [
        (f'<code title="{esc(labels.get(row[0], row[0]))}">{esc(row[0])}</code>', *(esc(c) for c in row[1:]))
        for row in rows
    ]
    lead = (
        f"Emulated on <code>{esc(emulation.emulated_on)}</code>: each emulation is a counterfactual with its "
        "assumptions listed in the JSON report, never the reference. <i>Differing</i>: the "
        f"{emulation.differing.count} elements where the two outputs differ; <i>decisive</i>: those where the "
        "emulations disagree. The last row is the primary reference rounded to the output dtype."
    )
    return f'<p class="emulation-lead">{lead}</p>' + table(
        [esc(h) for h in header], cells, css_class="pair-emulation-matrix"
    )


def emulation_matrix_per_head_html(pair: Pair) -> str:
    """The bit-equal counts per query head, one column per emulation and side in table order, the baseline last."""
    emulation = pair.emulation
    if emulation is None or emulation.rows is None:
        return ""
    shown = [row for row in ranked_rows(emulation.rows) if row.a.bit_equal_per_head is not None]
    header = (
        "query head",
        *(f"{row.a.id}: {side}" for row in shown for side in SIDES),
        *(f"rounded reference: {side}" for side in SIDES),
    )
    columns = [
        *(e.bit_equal_per_head for row in shown for e in (row.a, row.b)),
        emulation.baseline.a.bit_equal_per_head,
        emulation.baseline.b.bit_equal_per_head,
    ]
    rows = [(str(head), *(esc(number(column[head])) for column in columns)) for head in range(len(columns[0]))]
    return table(header, rows, css_class="pair-emulation-matrix-per-head")


def notes_html(pair: Pair) -> str:
    items = [*pair.notes, *PAIR_LIMITATIONS]
    return '<ul class="pair-notes">' + "".join(f"<li>{esc(text)}</li>" for text in items) + "</ul>"


def overview_html(pair: Pair) -> str:
    """A compact, self-contained HTML summary: status, the findings, sides, inputs, ladder, tokens."""
    parts = [
        f'<div class="pair-overview" style="{BOX_STYLE}">',
        status_html(pair),
        findings_html(pair),
        sides_table(pair),
    ]
    if pair.status != REFUSED:
        parts += [inputs_table(pair), ladder_table(pair), tokens_html(pair)]
    parts.append("</div>")
    return "".join(parts)
