"""What each view shows: the analysis' own numbers, explicit states, hovers, the head selection.

What each view shows: the analysis' own numbers in maps and tables, explicit states, hover fields and the head
selection.
"""

from __future__ import annotations

import io
import re

import holoviews as hv
import numpy as np
import panel as pn
from bokeh.models import ColorBar, GlyphRenderer, HoverTool, LinearColorMapper, LogColorMapper, Scatter

from explorer.analysis.ranking import noise_floor_ratios, worst_ulp_per_head
from explorer.analysis.report import report_text
from explorer.analysis.result import NEGATIVE_INFINITY, POSITIVE_INFINITY
from explorer.packet.model import TENSOR_NAMES
from explorer.views import Selection
from explorer.views.packet import attention, errors, nonfinite
from explorer.views.shared import charts, marks, markup
from explorer.views.shared.common import NAN_COLOUR
from explorer.views.shared.scales import LINEAR, LOG, ZERO_COLOUR, colour_scale

from views_support import (
    BUILDERS,
    colour_mappers,
    head_charts,
    images,
    images_by_title,
    models,
    plots,
    render,
    text,
    tooltips,
)


def _build(analyses, name, slug, head=0):
    view = BUILDERS[slug](analyses[name], Selection(head=head))
    return view, render(view)


def _column(renderer, name) -> np.ndarray:
    """A map's data column; a hover field equal to the drawn colour is the image column itself ("image")."""
    return np.asarray(renderer.data_source.data[name][0])


# ---------------------------------------------------------------- errors


def test_error_maps_draw_the_results_own_errors_each_on_its_own_log_scale(analyses):
    numerics = analyses["clean-fp32q-bf16kv"].numerics
    view, document = _build(analyses, "clean-fp32q-bf16kv", "errors")
    maps = images_by_title(document)
    expected = {"primary reference": numerics.primary, "narrowed-Q counterfactual": numerics.narrowed_query.comparison}
    assert set(maps) == set(expected)  # the identity rounding of a float32 output is the primary map: not drawn twice
    assert numerics.rounded_to_output.identity and "its map would repeat this one" in text(view)
    charted = set(head_charts(view)[0].points)
    assert "primary reference" in charted and "rounded to float32 (identity)" not in charted  # nor charted twice
    assert markup.esc(numerics.rounded_to_output.comparison.label) in text(view)  # the tables list it
    for title, comparison in expected.items():
        renderer = maps[title]
        np.testing.assert_array_equal(_column(renderer, "image"), comparison.abs_error)
        np.testing.assert_array_equal(_column(renderer, "output"), comparison.actual)
        np.testing.assert_array_equal(_column(renderer, "reference"), comparison.reference)
        np.testing.assert_array_equal(_column(renderer, "ulp"), numerics.rounded_to_output.ulp.distance)
        mapper = renderer.glyph.color_mapper
        own = colour_scale([comparison.abs_error], LOG, "|output - reference|")
        assert isinstance(mapper, LogColorMapper) and (mapper.low, mapper.high) == own.clim, title
    assert len({(m.low, m.high) for m in colour_mappers(document)}) > 1, "each map its own scale"
    assert len(models(document, ColorBar)) == len(expected), "one colour bar per map"
    labels = tooltips(document)
    for label in ("query head", "channel", "KV head", "output", "reference", "|output - reference|"):
        assert label in labels
    assert any(label.startswith("ULP") for label in labels)
    assert "smallest positive" in text(view)


def test_error_maps_can_share_one_scale(analyses):
    view, _ = _build(analyses, "clean-fp32q-bf16kv", "errors")
    (shared,) = [w for w in view.select(pn.widgets.RadioButtonGroup) if w.label == "maps"]
    shared.value = True  # "one scale for all maps"
    document = render(view)
    assert len({(m.low, m.high) for m in colour_mappers(document)}) == 1, "one shared colour scale"
    assert len(models(document, ColorBar)) == len(images(document)), "every map keeps its (equal) colour bar"
    assert "One colour scale for every map" in text(view)


def test_error_map_captions_say_what_dominates(analyses):
    view, _ = _build(analyses, "qwen36-bf16-t64", "errors")
    assert (
        "output is bfloat16: |output - primary| includes the bfloat16 rounding of the reference; "
        "the rounded map shows what is left beyond it"
    ) in text(view).lower()
    view, _ = _build(analyses, "clean-fp32q-bf16kv", "errors")
    assert "A counterfactual, not the reference" in text(view)


def test_log_colour_bars_label_whole_decades_once_and_draw_zeros_apart(analyses):
    _, document = _build(analyses, "injected-error-head5", "errors")
    bars = models(document, ColorBar)
    assert bars
    for bar in bars:
        labels = [bar.major_label_overrides[tick] for tick in bar.ticker.ticks]
        assert len(set(labels)) == len(labels) and all(label.startswith("1e") for label in labels)
        assert bar.color_mapper.low_color == ZERO_COLOUR and bar.color_mapper.nan_color == NAN_COLOUR


def test_ulp_histogram_is_a_bar_chart_beside_its_table(analyses):
    numerics = analyses["qwen36-bf16-t64"].numerics
    view, _ = _build(analyses, "qwen36-bf16-t64", "errors")
    shown = text(view)
    assert shown.count('class="ulp-histogram"') == 1
    counts = [int(c) for c in re.findall(r'class="ulp-bar" data-count="(\d+)"', shown)]
    assert counts == [count for _, _, count in numerics.rounded_to_output.ulp.histogram]
    bar = r'class="ulp-bar" data-count="\d+" style="display:inline-block;width:(\d+)px'
    widths = [int(w) for w in re.findall(bar, shown)]
    assert max(widths) == errors.ULP_BAR_PIXELS and all((w > 0) == (c > 0) for w, c in zip(widths, counts, strict=True))
    assert "nonfinite pairs (eligible heads only)" in shown


def test_error_maps_switch_to_a_linear_scale(analyses):
    view, _ = _build(analyses, "injected-error-head5", "errors")
    toggle = view.select(pn.widgets.RadioButtonGroup)[0]
    toggle.value = LINEAR
    document = render(view)
    assert all(isinstance(m, LinearColorMapper) for m in colour_mappers(document))
    assert "Linear colour scale" in text(view)


def test_error_maps_follow_the_comparisons_present(analyses):
    _, qwen = _build(analyses, "qwen36-bf16-t64", "errors")
    assert len(images(qwen)) == 2  # no narrowed-Q counterfactual for bfloat16 queries
    _view, kernel = _build(analyses, "float32-kv-kernel-bf16", "errors")
    assert len(images(kernel)) == 2  # primary (float32 output: rounding is identity), rounded to the kernel's bfloat16
    assert "rounded to kernel bfloat16" in " ".join(p.title.text for p in plots(kernel) if p.title is not None)


def test_ineligible_heads_are_undefined_not_dropped(analyses):
    analysis = analyses["infinite-queries"]
    view, _document = _build(analyses, "infinite-queries", "errors")
    assert "nonfinite_inputs" in text(view)
    assert "null" in text(view)  # the log charts name the null values they cannot draw
    assert not analysis.numerics.eligible.all()


# ---------------------------------------------------------------- last row


def test_last_row_maps_colour_the_fields_that_differ(analyses):
    facts = analyses["last-row-mismatch"].facts
    view, document = _build(analyses, "last-row-mismatch", "lastrow")
    maps = images_by_title(document)
    keys, values = (
        maps["Keys: XOR of stored and incoming, by differing field"],
        maps["Values: XOR of stored and incoming, by differing field"],
    )
    assert len(maps) == 2
    np.testing.assert_array_equal(_column(keys, "image"), facts.last_row_keys.field_mask)
    np.testing.assert_array_equal(_column(keys, "xor"), facts.last_row_keys.xor)
    np.testing.assert_array_equal(_column(values, "stored_bits"), facts.last_row_values.stored_bits)
    for label in (
        "KV head",
        "channel",
        "stored (token T-1)",
        "incoming",
        "XOR",
        "stored value",
        "incoming value",
        "fields that differ",
        "elements differing",
    ):
        assert label in tooltips(document)
    assert "all-bits-equal" not in text(view)
    assert len(plots(document)) == 4  # a map and a bit-position histogram each for keys and values


def test_equal_last_rows_say_so(analyses):
    """An all-equal last row is said in words where its map would be, never drawn as an empty grey plot (issue 39)."""
    facts = analyses["clean-fp32q-bf16kv"].facts
    view, document = _build(analyses, "clean-fp32q-bf16kv", "lastrow")
    shown = text(view)
    assert shown.count('class="all-bits-equal"') == 2
    assert f"the {facts.last_row_keys.compared} key elements" in shown and "nothing to draw" in shown
    assert not plots(document) and not images_by_title(document)  # no empty map, no bit-position histogram
    assert 'class="field-legend"' not in shown


def test_a_lone_differing_last_row_element_is_ringed(analyses):
    """The Values row of the sample differs in one element of many: ringed on its map, as the Overview rings it."""
    values = analyses["last-row-mismatch"].facts.last_row_values
    assert values.mismatched == 1
    view, document = _build(analyses, "last-row-mismatch", "lastrow")
    rings = [
        r.data_source.data
        for r in models(document, GlyphRenderer)
        if isinstance(r.glyph, Scatter) and r.glyph.line_color == marks.RING_COLOUR
    ]
    (head,), (column,) = np.nonzero(values.field_mask)
    assert {"y": [float(head)], "x": [float(column)]} in [dict(ring) for ring in rings]
    assert "Ringed: the 1 differing element, too few to see by colour alone." in text(view)


# ---------------------------------------------------------------- nonfinite


def test_all_finite_state(analyses):
    view, document = _build(analyses, "clean-fp32q-bf16kv", "nonfinite")
    shown = text(view)
    assert 'class="all-finite"' in shown
    assert not images(document), "an all-finite tensor gets a line, not a blank map"
    for name in TENSOR_NAMES:
        assert f"<code>{name}</code>: all finite</b>" in shown


def test_nonfinite_maps_show_where_the_nans_are(analyses):
    facts = analyses["nan-stored-values"].facts
    view, document = _build(analyses, "nan-stored-values", "nonfinite")
    shown = text(view)
    assert 'class="tensors-all-finite"' in shown
    maps = images_by_title(document)
    holding = [name for name in TENSOR_NAMES if facts.nonfinite[name].total]
    assert sorted(title.split(":")[0] for title in maps) == sorted(holding)
    for name in set(TENSOR_NAMES) - set(holding):
        assert f"<code>{name}</code>: all finite</b>" in shown
    stored = facts.nonfinite["storedValues"].per_head_token
    np.testing.assert_array_equal(
        _column(maps["storedValues: nonfinite elements per head and token"], "image"), stored.sum(axis=2)
    )
    np.testing.assert_array_equal(
        _column(maps["output: kind of every element"], "image"), facts.nonfinite["output"].kinds[:, 0, :]
    )
    assert "signaling NaN (elements)" in tooltips(document)


def test_long_histories_are_drawn_in_token_bins(analyses, monkeypatch):
    monkeypatch.setattr(nonfinite, "MAX_TOKEN_CELLS", 50)
    per_head_token = analyses["nan-stored-values"].facts.nonfinite["storedValues"].per_head_token
    heads, tokens, _ = per_head_token.shape
    width = nonfinite.token_bins(tokens, heads)
    assert width > 1
    view, document = _build(analyses, "nan-stored-values", "nonfinite")
    stored = images_by_title(document)["storedValues: nonfinite elements per head and token"]
    assert _column(stored, "image").shape == (heads, -(-tokens // width))
    assert _column(stored, "image").sum() == per_head_token.sum()
    assert "first token" in tooltips(document)
    assert f"bins of {width} tokens" in text(view)


def test_infinities_in_queries_are_mapped_by_kind(analyses):
    view, document = _build(analyses, "infinite-queries", "nonfinite")
    kinds = _column(images_by_title(document)["queries: kind of every element"], "image")
    assert kinds[1, 2] == POSITIVE_INFINITY and kinds[3, 5] == NEGATIVE_INFINITY
    assert "+inf" in text(view) and "-inf" in text(view)


# ---------------------------------------------------------------- narrowed-Q


def test_narrowed_q_beside_the_primary(analyses):
    nq = analyses["clean-fp32q-bf16kv"].numerics.narrowed_query
    view, document = _build(analyses, "clean-fp32q-bf16kv", "narrowed")
    assert markup.esc(nq.label) in text(view) and "never the reference" in text(view)
    maps = images_by_title(document)
    assert len(maps) == 2
    np.testing.assert_array_equal(
        _column(maps["|narrowed-Q reference - primary reference|"], "image"), nq.difference_from_primary.abs_error
    )
    np.testing.assert_array_equal(
        _column(maps["|q' - q| per query head and channel"], "image"), nq.query_rounding_difference.abs_error
    )


def test_narrowed_q_not_applicable_is_explained(analyses):
    view, document = _build(analyses, "qwen36-bf16-t64", "narrowed")
    assert "queries_not_float32" in text(view) and "not float32" in text(view)
    assert not plots(document)
    view, _ = _build(analyses, "float32-kv-kernel-bf16", "narrowed")
    assert "storage_not_narrow" in text(view) and "no narrower storage" in text(view)


# ---------------------------------------------------------------- attention


def test_attention_follows_the_selected_head(analyses):
    numerics = analyses["injected-error-head5"].numerics
    selection = Selection(head=3)
    view = BUILDERS["attention"](analyses["injected-error-head5"], selection)
    render(view)

    def head_table():
        return next(p.object for p in view.select(pn.pane.HTML) if "head-diagnostics" in str(p.object))

    assert repr(numerics.attention[3].entropy) in head_table()
    selector = view.select(pn.widgets.Select)[0]
    assert selector.value == 3
    selection.head = 5
    render(view)
    assert selector.value == 5
    assert repr(numerics.attention[5].entropy) in head_table()
    selector.value = 6
    assert selection.head == 6


def test_attention_weights_are_the_results_own(analyses):
    numerics = analyses["clean-fp32q-bf16kv"].numerics
    _, document = _build(analyses, "clean-fp32q-bf16kv", "attention", head=2)
    overview = images(document)[0]
    np.testing.assert_array_equal(_column(overview, "image"), numerics.weights)


def test_attention_explains_missing_heads_and_undefined_weights(analyses):
    selection = Selection(head=99)
    view = BUILDERS["attention"](analyses["clean-fp32q-bf16kv"], selection)
    render(view)
    assert "Query head 99 does not exist" in text(view) and selection.head == 0
    assert "does not exist" in attention.head_panel(analyses["clean-fp32q-bf16kv"].numerics, 99).objects[0].object
    undefined = next(h for h, a in enumerate(analyses["infinite-queries"].numerics.attention) if a.undefined_reason)
    view, _ = _build(analyses, "infinite-queries", "attention", head=undefined)
    assert f"No weights for query head {undefined}" in text(view)


def test_attention_diagnostics_draw_the_chosen_one_with_the_results_values(analyses):
    entries = analyses["qwen36-bf16-t64"].numerics.attention
    view, _ = _build(analyses, "qwen36-bf16-t64", "attention")
    choice = next(w for w in view.select(pn.widgets.RadioButtonGroup) if "diagnostic-choice" in w.css_classes)
    for attribute, label, logy in attention.OVERVIEW_METRICS:
        choice.value = attribute
        render(view)
        shown = [c for c in head_charts(view) if c.title.endswith("per query head")]
        assert [c.title for c in shown] == [f"{label} per query head"]
        assert shown[0].points == {label: {h: getattr(a, attribute) for h, a in enumerate(entries)}}
        assert shown[0].y_title == label + (" (log)" if logy else "")


def test_attention_overview_is_limited(analyses, monkeypatch):
    monkeypatch.setattr(attention, "MAX_OVERVIEW_CELLS", 10)
    view, document = _build(analyses, "clean-fp32q-bf16kv", "attention")
    assert "is not drawn" in text(view)
    assert not images(document)


# ---------------------------------------------------------------- raw and summary


def test_raw_view_offers_the_report_and_the_captured_text(analyses):
    analysis = analyses["injected-error-head5"]
    view, _ = _build(analyses, "injected-error-head5", "raw")
    download = view.select(pn.widgets.FileDownload)[0]
    assert download.filename.endswith(".report.json")
    payload = download.callback()
    assert isinstance(payload, io.BytesIO) and payload.getvalue().decode() == report_text(analysis)
    json_panes = view.select(pn.pane.JSON)
    assert json_panes[0].object == analysis.report()
    assert '"darkbloom.attention-packet.v1"' in text(view).replace("&quot;", '"')


def test_summary_shows_identity_selection_and_limitations(analyses):
    analysis = analyses["qwen36-bf16-t64"]
    view, _ = _build(analyses, "qwen36-bf16-t64", "summary")
    shown = text(view)
    assert "Declared, not authenticated" in shown
    assert "0x3D800000" in shown  # scaleBits 1031798784 of scale 0.0625
    for sentence in analysis.report()["limitations"]:
        assert markup.esc(sentence) in shown
    assert shown.count("<tr") >= len(analysis.numerics.primary.per_head)
    for name in TENSOR_NAMES:
        assert f"<code>{name}</code>" in shown


def test_summary_ranks_heads_by_score_with_the_numbers_before_the_limitations(analyses):
    analysis = analyses["injected-error-head5"]
    ratios = noise_floor_ratios(analysis.numerics)
    ulps = worst_ulp_per_head(analysis.numerics)
    scores = analysis.numerics.score.per_head
    view, _ = _build(analyses, "injected-error-head5", "summary")
    table = text(view).split('class="per-head-primary"')[1].split("</table>")[0]
    heads = [int(h) for h in re.findall(r"<tr><td[^>]*>(\d+)</td>", table)]
    assert sorted(heads) == list(range(len(ratios)))
    shown = [scores[h] for h in heads]
    assert shown == sorted(shown, reverse=True) and heads[0] == 5
    assert markup.number_cell(scores[5]) in table
    assert text(view).index('class="per-head-primary"') < text(view).index('class="limitations"')
    assert markup.number_cell(ratios[5]) in table and markup.number_cell(ulps[5]) in table
    assert "background" not in table, "no shading"
    assert "a ratio, not a verdict" in text(view)


def test_refused_summary_interprets_nothing(analyses):
    view, _ = _build(analyses, "refused-hash-mismatch", "summary")
    assert "Not interpreted" in text(view) and "Declared" not in text(view)


def test_every_custom_hover_field_has_its_formatter(analyses):
    for slug in BUILDERS:
        _, document = _build(analyses, "last-row-mismatch", slug)
        for tool in models(document, HoverTool):
            formatted = [
                match.group(1) for _, spec in tool.tooltips if (match := re.match(r"^(\$\w+|@\{[^}]+\})\{", spec))
            ]
            assert all(field in tool.formatters for field in formatted), (slug, tool.tooltips)


# ---------------------------------------------------------------- per-head axes, narrowed-Q drill-down, tables


def test_per_head_axes_label_every_head_as_an_integer(analyses):
    for name, slug in (
        ("qwen36-bf16-t64", "errors"),
        ("injected-error-head5", "narrowed"),
        ("qwen36-bf16-t64", "attention"),
    ):
        heads = len(analyses[name].numerics.attention)
        view, _ = _build(analyses, name, slug)
        charts = head_charts(view)
        assert charts, (name, slug)
        for chart in charts:
            assert chart.head_labels == [str(h) for h in range(heads)], (name, slug, chart.title)


def test_head_ticks_stay_integers_beyond_the_labelled_heads_and_stand_up_when_crowded():
    assert charts.head_ticks(8, charts.UPRIGHT_HEAD_LABELS) == (list(range(8)), False)
    assert charts.head_ticks(16, charts.UPRIGHT_HEAD_LABELS) == (list(range(16)), True)
    many, _ = charts.head_ticks(64, charts.MAX_INDEX_TICKS)
    assert many == list(range(0, 64, 2)) and len(many) <= charts.MAX_INDEX_TICKS


def test_per_head_chart_draws_the_chosen_metric(analyses):
    numerics = analyses["injected-error-head5"].numerics
    floor = ("floor", numerics.fp64.reference_error)
    controls, chart = charts.per_head_charts([("primary", numerics.primary)], floor)
    choice = controls.select(pn.widgets.RadioButtonGroup)[0]
    for attribute, metric in charts.METRICS:
        choice.value = attribute
        render(pn.Column(chart))
        shown = head_charts(pn.Column(chart))
        assert [c.title for c in shown] == [f"{metric} per query head"]
        expected = [getattr(m, attribute) for m in numerics.primary.per_head]
        assert shown[0].points["primary"] == {h: v for h, v in enumerate(expected) if v > 0}
        assert "floor" not in shown[0].points  # the floor is a dashed line, no marker sits on the primary's


def test_shared_metric_choice_drives_every_chart_and_one_metric_needs_no_choice(analyses):
    numerics = analyses["qwen36-bf16-t64"].numerics
    choice = charts.metric_choice()
    drawn = [charts.per_head_charts([(label, numerics.primary)], choice=choice)[1] for label in ("a", "b")]
    choice.value = "rmse"
    for chart in drawn:
        render(pn.Column(chart))
        assert [c.title for c in head_charts(pn.Column(chart))] == ["rmse per query head"]
    legend, chart = charts.per_head_charts([("a", numerics.primary)], metrics=(("linf", "linf"),))
    assert not pn.Column(legend, chart).select(pn.widgets.RadioButtonGroup)


def test_narrowed_difference_maps_select_the_clicked_element(analyses):
    selection = Selection()
    view = BUILDERS["narrowed"](analyses["injected-error-head5"], selection)
    render(view)
    images = [
        p.object
        for p in view.select(pn.pane.HoloViews)
        if isinstance(p.object, hv.Image) and p.object.kdims[1].name == "query head"
    ]
    assert len(images) == 2  # |narrowed-Q reference - primary reference| and |q' - q|
    for image, (head, channel) in zip(images, ((5, 9), (2, 40)), strict=True):
        tap = next(s for s in hv.streams.Stream.registry[image] if isinstance(s, hv.streams.Tap))
        tap.event(x=channel + 0.2, y=head - 0.3)
        assert selection.element == (head, channel)


def test_attention_tables_show_four_significant_digits_with_the_full_value_on_hover(analyses):
    entry = analyses["qwen36-bf16-t64"].numerics.attention[0]
    view, _ = _build(analyses, "qwen36-bf16-t64", "attention")
    shown = " ".join(p.object for p in view.select(pn.pane.HTML) if isinstance(p.object, str))
    assert markup.number_cell(entry.entropy) in shown
    assert f'title="{entry.entropy!r}"' in shown and f">{entry.entropy:.4g}<" in shown
