"""Summary view: status, refusals or reasons, the score, the per-head table and the identity."""

from __future__ import annotations

import panel as pn

from explorer.analysis.result import Analysis
from explorer.packet.model import REFUSED, TENSOR_NAMES
from explorer.views.shared import html_summary, markup
from explorer.views.shared.common import Selection, heading, html_pane, section
from explorer.views.shared.markup import esc, mapping_table, number_cell, table

SCALE_BITS_DIGITS = 8  # hex digits of a binary32 pattern
NOT_INTERPRETED = "Not interpreted: a refused packet's contents are not trusted, so nothing in them is reported."


def _selection_table(selection: dict | None) -> str:
    if selection is None:
        return mapping_table(None)
    rows = []
    for key, value in selection.items():
        shown = number_cell(value)
        if key == "scaleBits" and isinstance(value, int):
            shown += f" &nbsp;(<code>0x{value:0{SCALE_BITS_DIGITS}X}</code>)"
        rows.append((f"<code>{esc(key)}</code>", shown))
    return table(("field", "value"), rows, css_class="selection")


def _dtypes_table(analysis: Analysis) -> str:
    tensors = analysis.admission.tensors
    if tensors is None:
        return "<p><i>Tensor dtypes are not established: the tensor files did not all verify.</i></p>"
    return table(
        ("tensor", "dtype", "shape", "bytes", "sha256 (verified)"),
        (
            (
                f"<code>{name}</code>",
                esc(tensors[name].dtype),
                esc(list(tensors[name].shape)),
                esc(tensors[name].byte_count),
                f'<code style="{markup.WRAP_STYLE}">{esc(tensors[name].sha256)}</code>',
            )
            for name in TENSOR_NAMES
        ),
        css_class="tensor-dtypes",
    )


def _identity(analysis: Analysis) -> str:
    identity = analysis.admission.identity
    warning = (
        '<p class="identity-declared"><b>Declared, not authenticated:</b> these fields are what the packet '
        "says about itself; the explorer cannot verify them.</p>"
    )
    return warning + mapping_table(dict(identity) if identity is not None else None, css_class="identity")


def _packet_hashes(analysis: Analysis) -> str:
    admission = analysis.admission
    return mapping_table(
        {"path": admission.path, "packetSHA256": admission.packet_sha256, "metadataSHA256": admission.metadata_sha256},
        css_class="packet",
    )


def _per_head(analysis: Analysis) -> list:
    numerics = analysis.numerics
    if numerics is None:
        return [
            heading("Per-head primary metrics"),
            html_pane(f"<p><i>{esc(html_summary.missing_text(analysis, html_summary.NEEDS_NUMERICS))}</i></p>"),
        ]
    score = numerics.score
    lead = f"Score (error / allowance) {number_cell(score.value)}" + (
        f"; {score.heads_not_compared} of {score.heads} heads not compared" if score.heads_not_compared else ""
    )
    return [
        heading(
            "Per-head primary metrics",
            f"{esc(numerics.primary.label)}. Sorted by each head's score: its "
            "largest |output - primary reference| over the allowance (half the output dtype's spacing plus "
            "the head's FP64 noise floor; a ratio, not a verdict), then by its largest ULP distance to the "
            "rounded reference.",
        ),
        html_pane(
            f'<p class="summary-score"><b>{lead}</b></p>'
            + html_summary.global_table(analysis)
            + html_summary.per_head_table(analysis)
        ),
    ]


def _side_by_side(left: tuple, right: tuple) -> pn.GridBox:
    """Two columns of equal share of the width (long values wrap inside their own column, never under the other)."""
    return pn.GridBox(
        pn.Column(*left, sizing_mode="stretch_width"),
        pn.Column(*right, sizing_mode="stretch_width"),
        ncols=2,
        sizing_mode="stretch_width",
    )


def build(analysis: Analysis, selection: Selection) -> pn.Column:
    """The summary of one analysis (every status)."""
    refused = analysis.status == REFUSED
    limitations = "".join(f"<li>{esc(text)}</li>" for text in analysis.report()["limitations"])
    parts = [
        heading("Status"),
        html_pane(f'<div class="summary-status">{html_summary.status_html(analysis)}</div>'),
    ]
    if refused:
        parts += [
            heading("Packet"),
            html_pane(_packet_hashes(analysis)),
            heading("Identity, selection, geometry, sample"),
            html_pane(f"<p><i>{NOT_INTERPRETED}</i></p>"),
        ]
    else:
        admission = analysis.admission
        parts += [
            *_per_head(analysis),
            heading("Packet"),
            html_pane(_packet_hashes(analysis)),
            _side_by_side(
                (heading("Identity"), html_pane(_identity(analysis))),
                (heading("Selection"), html_pane(_selection_table(admission.selection))),
            ),
            _side_by_side(
                (heading("Geometry"), html_pane(mapping_table(admission.geometry, css_class="geometry"))),
                (heading("Sample facts"), html_pane(mapping_table(admission.sample, css_class="sample"))),
            ),
            heading("Tensors"),
            html_pane(_dtypes_table(analysis)),
        ]
    parts += [heading("What this analysis does not prove"), html_pane(f'<ul class="limitations">{limitations}</ul>')]
    return section("view-summary", *parts)
