"""Pair view: two captures of one selection side by side; draws only what the Pair result holds.

`build(pair)` is the whole view (the app and the export); each `*_section(pair)` is one part of it (the notebook
accessor `pair.views.<name>()`).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import param

from explorer.analysis.result import Analysis
from explorer.foundations.formatting import full_number as number
from explorer.foundations.formatting import location
from explorer.packet.dtypes import FIELD_BITS
from explorer.pair.findings import output_sentence
from explorer.pair.model import SIDES, Pair
from explorer.views.pair import html as pair_html
from explorer.views.pair.emulations import PairEmulationsSection
from explorer.views.shared.charts import CHART_HEIGHT
from explorer.views.shared.common import (
    Field,
    collapsed,
    continuous,
    grid_map,
    heading,
    hex_pattern,
    hint,
    hover,
    html_pane,
    integer_y_axis,
    note,
    per_cell,
    plot_pane,
    section,
    served,
    ulp_value,
)
from explorer.views.shared.marks import ElementExplorer
from explorer.views.shared.markup import esc, swatches, table, value_row
from explorer.views.shared.scales import LOG, ColourScale, colour_scale

# Colours of the bit-difference map by ULP bucket [0], [1], [2, 3], [4, 7], ... (the report's histogram buckets).
EQUAL_COLOUR = "#f4f4f4"
ULP_BUCKET_COLOURS = ("#fdd49e", "#fc8d59", "#e34a33", "#b30000", "#7f0000", "#4d0000")
BUCKET_LABELS = ("equal", "1 ULP", "2-3", "4-7", "8-15", "16-31", ">= 32")
BAR_COLOUR = "#5b7fa6"


def _bucket(distance: np.ndarray) -> np.ndarray:
    """The histogram bucket index of each ULP distance (0 for equal, 1 for 1, 2 for 2-3, ...), NaN where undefined."""
    bucket = np.where(distance > 0, np.floor(np.log2(np.maximum(distance, 1))) + 1, 0.0)
    bucket = np.minimum(bucket, len(ULP_BUCKET_COLOURS))
    return np.where(distance < 0, np.nan, bucket)


def _bucket_legend() -> str:
    shown = swatches(zip(BUCKET_LABELS, (EQUAL_COLOUR, *ULP_BUCKET_COLOURS), strict=True))
    return f'<div class="ulp-legend">ULP distance between the outputs: {shown} (grey: a nonfinite value)</div>'


def _references(analysis: Analysis) -> tuple[np.ndarray | None, np.ndarray | None]:
    numerics = analysis.numerics
    if numerics is None:
        return None, None
    return numerics.primary.reference, numerics.rounded_to_output.comparison.reference


# ---------------------------------------------------------------- the bit-difference map and its element detail


def _difference_scale(pair: Pair) -> ColourScale:
    """The log colour scale of |a - b| for outputs of different dtypes (no bitwise map)."""
    return colour_scale([pair.output.difference.abs_error], LOG, "|a - b|")


def bit_map(pair: Pair) -> hv.Image:
    """Query head x channel, coloured by the ULP distance of the two outputs; hover gives both sides exactly."""
    output = pair.output
    tensor_a, tensor_b = (pair.side(s).admission.tensors["output"] for s in SIDES)
    values_a, values_b = tensor_a.values[0, :, 0, :], tensor_b.values[0, :, 0, :]
    fields = [Field("output_a", "output a", values_a), Field("output_b", "output b", values_b)]
    if output.bits is not None:
        fields = [
            Field("ulp", "ULP distance", output.ulp.distance, ulp_value),
            Field("bits_a", "bits a", tensor_a.bits[0, :, 0, :], lambda: hex_pattern(sum(FIELD_BITS[tensor_a.dtype]))),
            Field("bits_b", "bits b", tensor_b.bits[0, :, 0, :], lambda: hex_pattern(sum(FIELD_BITS[tensor_b.dtype]))),
            *fields,
        ]
        colour = _bucket(output.ulp.distance)
        scale = {"cmap": [EQUAL_COLOUR, *ULP_BUCKET_COLOURS], "clim": (-0.5, len(ULP_BUCKET_COLOURS) + 0.5)}
        title, label, colorbar = "Output bit differences, coloured by ULP distance", "ULP bucket", False
    else:
        colour = output.difference.abs_error
        scale, colorbar = continuous(_difference_scale(pair)), True
        title, label = "|output a - output b| (the output dtypes differ: no bitwise map)", "|a - b|"
        fields.append(Field("difference", "|a - b|", colour))
    for side in SIDES:
        primary, rounded = _references(pair.side(side))
        if primary is not None:
            fields += [
                Field(f"reference_{side}", f"primary reference {side}", primary),
                Field(f"rounded_{side}", f"rounded reference {side}", rounded),
            ]
    kv_heads = np.arange(colour.shape[0]) // pair.a.admission.geometry["groupSize"]
    fields.insert(0, Field("kv_head", "KV head", per_cell(kv_heads, colour.shape)))
    return grid_map(colour, fields, title=title, colour_label=label, colorbar=colorbar, **scale)


def element_html(pair: Pair, head: int, channel: int) -> str:
    """Both outputs, both bit patterns and every reference of one output element (full precision)."""
    rows = []
    for side in SIDES:
        analysis = pair.side(side)
        tensor = analysis.admission.tensors["output"]
        values, bits = tensor.values[0, head, 0, channel], tensor.bits[0, head, 0, channel]
        rows.append(value_row(f"output {side}", values, tensor.dtype, bits))
        primary, rounded = _references(analysis)
        if primary is not None:
            rows.append(value_row(f"primary reference {side} (FP32)", primary[head, channel], "float32"))
            rows.append(value_row(f"reference {side} rounded to {tensor.dtype}", rounded[head, channel], tensor.dtype))
    output = pair.output
    ulp = "" if output.ulp is None else f"; ULP distance {esc(number(int(output.ulp.distance[head, channel])))}"
    differs = (
        "" if output.differs is None else f"; bit patterns {'differ' if output.differs[head, channel] else 'equal'}"
    )
    return f'<p class="element-title"><b>{location(head, channel).capitalize()}</b>{differs}{ulp}</p>' + table(
        ("", "value (4 significant digits; the comparison JSON holds every digit)", "bits", "dtype"),
        rows,
        css_class="pair-element",
    )


class BitDifferenceExplorer(ElementExplorer):
    """The bit-difference map; a click (tap) on a cell shows that element's outputs, patterns and references."""

    def __init__(self, pair: Pair, **params):
        positions = pair.output.bits.first_positions if pair.output.bits is not None else ()
        super().__init__(positions[0] if positions else (0, 0), **params)
        self._pair = pair
        self._plot = plot_pane(bit_map(pair))
        self._listen(self._plot, pair.output.difference.abs_error.shape)
        self._detail = html_pane(element_html(pair, self.head, self.channel), css_classes=["pair-element-detail"])

    @param.depends("head", "channel", watch=True)
    def _show(self) -> None:
        self._detail.object = element_html(self._pair, self.head, self.channel)

    def __panel__(self):
        return pn.Column(
            self._plot,
            hint("Click a cell to show that element below; hover for exact values."),
            self._detail,
            sizing_mode="stretch_width",
        )


def mismatch_bars(pair: Pair) -> hv.Bars:
    """Differing output elements per query head."""
    per_head = pair.output.bits.per_head
    data = {"query head": [str(h) for h in range(len(per_head))], "elements differing": list(per_head)}
    options = hover([("query head", "@{query_head}"), ("elements differing", "@{elements_differing}")], {})
    return hv.Bars(data, "query head", "elements differing").opts(
        title="Differing output elements per query head",
        color=BAR_COLOUR,
        height=CHART_HEIGHT,
        responsive=True,
        min_width=320,
        show_grid=True,
        **{**options, "hooks": [*options["hooks"], integer_y_axis]},  # the count axis ticks whole numbers
    )


def error_maps(pair: Pair) -> pn.Column:
    """|a - ref| and |b - ref| (each side's own primary reference) on one shared log colour scale."""
    sides = [(s, pair.side(s).numerics) for s in SIDES]
    drawn = [(s, n) for s, n in sides if n is not None]
    if not drawn:
        return pn.Column(note("Neither side has a primary reference: no error maps."))
    scale = colour_scale([n.primary.abs_error for _, n in drawn], LOG, "|output - reference|")
    images = []
    for index, (side, numerics) in enumerate(drawn):
        comparison = numerics.primary
        kv_heads = [a.kv_head for a in numerics.attention]
        fields = [
            Field("kv_head", "KV head", per_cell(kv_heads, comparison.abs_error.shape)),
            Field("output", f"output {side}", comparison.actual),
            Field("reference", f"primary reference {side}", comparison.reference),
            Field("error", f"|{side} - ref|", comparison.abs_error),
        ]
        images.append(
            grid_map(
                comparison.abs_error,
                fields,
                title=f"|{side} - reference| (side {side})",
                colour_label=f"|{side} - ref|",
                **continuous(scale),
                colorbar=index == len(drawn) - 1,
            )
        )
    missing = [s for s, n in sides if n is None]
    parts = [
        pn.GridBox(
            *(plot_pane(image, linked_axes=True) for image in images),
            ncols=len(images),
            css_classes=["pair-error-maps"],
            sizing_mode="stretch_width",
        ),
        note(esc(scale.note), "colour-scale-note"),
    ]
    if missing:
        parts.append(note(f"Side {', '.join(missing)} has no primary reference (see the status)."))
    return pn.Column(*parts, sizing_mode="stretch_width")


def findings_section(pair: Pair) -> pn.Column:
    """What the pair shows, first: which side is off (nearer, rounded, emulations), then what differs and where."""
    return section("pair-findings-section", heading("Findings"), html_pane(pair_html.findings_html(pair)))


def summary_section(pair: Pair) -> pn.Column:
    """Status and reasons, the two sides and the selection."""
    status, sides = html_pane(pair_html.status_html(pair)), html_pane(pair_html.sides_table(pair))
    return section(
        "pair-summary", heading("Pair"), status, sides, heading("Selection"), html_pane(pair_html.selection_html(pair))
    )


def notes_section(pair: Pair) -> pn.Column:
    """The pair's notes and limitations (after its numbers)."""
    return section("pair-notes-section", heading("Notes and limitations"), html_pane(pair_html.notes_html(pair)))


def inputs_section(pair: Pair) -> pn.Column:
    lead = heading("Input identity", "Native bytes of each input tensor, side a against side b.")
    return section("pair-inputs", lead, html_pane(pair_html.inputs_table(pair)))


def bits_section(pair: Pair) -> pn.Column:
    parts = [heading("Output differences", esc(output_sentence(pair)))]
    if pair.output is not None:
        if pair.output.bits is not None:
            parts.append(html_pane(_bucket_legend()))
        else:  # what the value-difference map's colours mean (zeros white, its log range)
            parts.append(note(esc(_difference_scale(pair).note), "colour-scale-note"))
        parts.append(BitDifferenceExplorer(pair))
    return section("pair-bits", *parts)


def heads_section(pair: Pair) -> pn.Column:
    if pair.output is None or pair.output.bits is None:
        drawn = note("No bitwise comparison of the outputs (see the output differences).")
    else:
        drawn = plot_pane(mismatch_bars(pair))
    return section("pair-heads", heading("Mismatches per query head"), drawn)


def ladder_section(pair: Pair) -> pn.Column:
    per_head = pair_html.nearer_per_head_html(pair)
    return section(
        "pair-ladder",
        heading("Ladder", "Each side against its own references (global metrics)."),
        hint("Hover a number for its full value."),
        html_pane(pair_html.ladder_table(pair)),
        heading("Nearer the primary reference", "Per element, |a - ref| against |b - ref| in FP64."),
        html_pane(pair_html.nearer_html(pair)),
        *([collapsed("Nearer the primary reference, per query head", html_pane(per_head))] if per_head else []),
    )


def errors_section(pair: Pair) -> pn.Column:
    return section(
        "pair-errors", heading("|a - ref| and |b - ref|", "One colour scale for both maps."), error_maps(pair)
    )


def tokens_section(pair: Pair) -> pn.Column:
    return section("pair-tokens", heading("Tokens"), html_pane(pair_html.tokens_html(pair)))


def emulations_section(
    pair: Pair, on_computed=lambda pair: None, runner=None, on_emulated=lambda request: None
) -> pn.viewable.Viewable:
    """The emulation x side matrix; on a served page computed on request (views.pair.emulations)."""
    return PairEmulationsSection(pair, on_computed, runner, on_emulated).__panel__()


# name -> (title, section builder), in display order
SECTIONS = {
    "findings": ("Findings", findings_section),
    "summary": ("Pair", summary_section),
    "inputs": ("Input identity", inputs_section),
    "bits": ("Output differences", bits_section),
    "heads": ("Mismatches per head", heads_section),
    "ladder": ("Ladder", ladder_section),
    "errors": ("|a - ref|, |b - ref|", errors_section),
    "tokens": ("Tokens", tokens_section),
    "emulations": ("Kernel emulations", emulations_section),
    "notes": ("Notes and limitations", notes_section),
}


def build(pair: Pair, runner=None, on_emulated=lambda request: None) -> pn.Column:
    """The whole pair view: every section, the element-wise ones only when the pair was compared element-wise;
    `runner` (the app's) computes emulations on request, `on_emulated(request)` hearing the set computed."""
    names = ["findings", "summary", "notes"] if pair.output is None and pair.ladder is None else list(SECTIONS)
    if pair.output is None:
        names = [n for n in names if n not in ("bits", "heads")]
    if pair.emulation is None and (pair.output is None or pair.output.dtypes_differ or not served()):
        names = [n for n in names if n != "emulations"]  # nothing to show, nothing that could be computed here
    sections = {name: SECTIONS[name][1](pair) for name in names if name != "emulations"}
    if "emulations" in names:  # emulations computed on the page: the findings then say which reproduces each side
        findings = sections["findings"].objects[1]
        sections["emulations"] = emulations_section(
            pair, lambda found: setattr(findings, "object", pair_html.findings_html(found)), runner, on_emulated
        )
    return section("view-pair", *(sections[name] for name in names))
