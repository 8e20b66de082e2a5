"""The Overview view and the element panel.

Status, reasons and identity above four compact views, each linked to its tab, and every number about a
clicked element.
"""

from __future__ import annotations

import itertools

import holoviews as hv
import numpy as np
import panel as pn
import pytest

from explorer.analysis.ranking import ranked_heads, worst_ulp_per_head
from explorer.foundations.formatting import short_number
from explorer.packet.model import TENSOR_NAMES
from explorer.views import Selection
from explorer.views.packet import overview
from explorer.views.packet.element import element_html
from explorer.views.shared.markup import esc
from explorer.views.shared.scales import ulp_bucket_codes

from views_support import head_charts, images, images_by_title, render, text

CELL_SLUGS = [slug for slug, _, _ in overview.CELLS]


def _build(analyses, name):
    selection = Selection()
    view = overview.build(analyses[name], selection)
    return view, render(view), selection


def _cells(view) -> dict[str, pn.Column]:
    return {
        next(c for c in cell.css_classes if c.startswith("overview-") and c != "overview-cell").removeprefix(
            "overview-"
        ): cell
        for cell in view.select(pn.Column)
        if "overview-cell" in cell.css_classes
    }


def test_overview_draws_the_four_views_two_by_two_under_status_reasons_and_identity(analyses):
    analysis = analyses["last-row-mismatch"]
    view, document, _ = _build(analyses, "last-row-mismatch")
    grid = view.select(pn.GridBox)[0]
    assert grid.ncols == 2 and set(_cells(view)) == set(CELL_SLUGS)
    shown = text(view)
    for reason in analysis.reasons:
        assert f">{reason.code}</code>" in shown
    assert f'data-status="{analysis.status}"' in shown
    assert esc(analysis.admission.identity["modelID"]) in shown and "output index" in shown
    keys, values = analysis.facts.last_row_keys, analysis.facts.last_row_values
    stacked = np.concatenate([keys.field_mask, values.field_mask])  # the keys' KV heads above the values'
    masks = [
        np.asarray(r.data_source.data["image"][0])
        for r in images(document)
        if r.data_source.data["image"][0].shape == stacked.shape
    ]
    assert len(masks) == 1 and np.array_equal(masks[0], stacked)
    from bokeh.models import Plot

    strip = next(
        p
        for p in document.select({"type": Plot})
        if p.renderers
        and any(
            getattr(r, "data_source", None) is not None
            and "image" in r.data_source.data
            and np.asarray(r.data_source.data["image"][0]).shape == stacked.shape
            for r in p.renderers
        )
    )
    axis = strip.left[0]
    assert list(axis.ticker.ticks) == [0, 1, 2, 3] and axis.axis_label == "KV head"  # every row labelled
    assert [axis.major_label_overrides[t] for t in range(4)] == ["K0", "K1", "V0", "V1"]
    assert not np.array_equal(keys.field_mask, values.field_mask)
    assert f"<b>Keys</b>: {analysis.facts.last_row_keys.mismatched} of" in shown


def test_bfloat16_output_map_is_coloured_by_ulp_to_the_rounded_reference(analyses):
    numerics = analyses["qwen36-bf16-t64"].numerics
    view, document, _ = _build(analyses, "qwen36-bf16-t64")
    renderer = images_by_title(document)["ULP distance in bfloat16"]
    drawn = np.asarray(renderer.data_source.data["image"][0])
    distance = numerics.rounded_to_output.ulp.distance
    np.testing.assert_array_equal(drawn, ulp_bucket_codes(distance))  # a discrete scale: 0 has its own colour
    assert max(worst_ulp_per_head(numerics)) == np.nanmax(drawn) <= 1  # buckets 0 and 1 hold exactly 0 and 1 ULP
    assert "Output bfloat16" in text(view)
    assert len(images(document)) == 1, "equal last rows are stated, not drawn as blank maps"
    assert text(view).count("(all bits equal)") == 2
    assert "queries_not_float32" in text(view)  # the narrowed-Q cell says why it does not apply


def test_float32_output_map_is_the_primary_error_and_narrowed_q_is_charted(analyses):
    numerics = analyses["injected-error-head5"].numerics
    view, document, _ = _build(analyses, "injected-error-head5")
    renderer = images_by_title(document)["|output - primary|"]
    np.testing.assert_array_equal(np.asarray(renderer.data_source.data["image"][0]), numerics.primary.abs_error)
    chart = next(c for c in head_charts(view) if c.title == "linf per query head")
    assert chart.points["vs primary reference"] == {h: m.linf for h, m in enumerate(numerics.primary.per_head)}
    assert "never the reference" in text(view)


def test_nonfinite_cell_maps_each_tensor_holding_nan_side_by_side_and_names_the_finite_ones(analyses):
    analysis = analyses["nan-stored-values"]
    view, document, _ = _build(analyses, "nan-stored-values")
    shown = text(_cells(view)["nonfinite"])
    held = [name for name in TENSOR_NAMES if analysis.facts.nonfinite[name].total]
    assert held == ["storedValues", "output"]
    stored, output = (analysis.facts.nonfinite[name] for name in held)
    assert f"<code>storedValues</code> {stored.nan} NaN ({stored.signaling_nan} signaling)" in shown
    assert f"<code>output</code> {output.nan} NaN" in shown
    assert "(only these)" in shown and "<code>storedValues</code> (only" not in shown
    maps = images_by_title(document)
    assert set(held) <= set(maps)  # one map per tensor holding NaN, titled by it
    kinds = np.asarray(maps["output"].data_source.data["image"][0])
    np.testing.assert_array_equal(kinds, analysis.facts.nonfinite["output"].kinds[:, 0, :])
    grid = next(g for g in view.select(pn.GridBox) if "overview-nonfinite-maps" in g.css_classes)
    assert grid.ncols == 2 and len(grid.objects) == 2  # side by side
    finite_view, _, _ = _build(analyses, "injected-error-head5")
    assert "No NaN and no infinity in any element of the six tensors." in text(_cells(finite_view)["nonfinite"])


@pytest.mark.parametrize("name", ["refused-hash-mismatch", "discarded-sample", "inconclusive-without-facts"])
def test_refused_and_inconclusive_packets_keep_the_grid_and_say_why(analyses, name):
    view, _, _ = _build(analyses, name)
    cells = _cells(view)
    assert set(cells) == set(CELL_SLUGS)
    missing = [slug for slug, cell in cells.items() if "Not available" in text(cell)]
    expected = {
        "refused-hash-mismatch": CELL_SLUGS,
        "discarded-sample": ["errors", "narrowed"],
        "inconclusive-without-facts": CELL_SLUGS,
    }[name]
    assert sorted(missing) == sorted(expected)


def test_each_cell_links_to_its_tab(analyses):
    view, _, selection = _build(analyses, "injected-error-head5")
    for slug, cell in _cells(view).items():
        button = cell.select(pn.widgets.Button)[0]
        button.clicks += 1
        assert selection.tab == slug


def test_element_panel_lists_the_records_values(analyses):
    analysis = analyses["qwen36-bf16-t64"]
    record = analysis.element(4, 155)
    panel = element_html(analysis, 4, 155)
    assert 'data-element="4,155"' in panel and "flat index 1179" in panel
    for label, value in record.fields():
        assert esc(label) in panel and esc(short_number(value)) in panel
    assert record.output_hex in panel and record.rounded_to_output.hex in panel
    assert "outside" in element_html(analysis, 99, 0)
    assert "did not all verify" in element_html(analyses["refused-hash-mismatch"], 0, 0)


def test_clicking_a_query_head_by_channel_cell_selects_that_element(analyses):
    view, _, selection = _build(analyses, "qwen36-bf16-t64")
    pane = next(p for p in view.select(pn.pane.HoloViews) if "overview-error-map" in p.css_classes)
    image = pane.object
    tap = next(s for s in hv.streams.Stream.registry[image] if isinstance(s, hv.streams.Tap))
    tap.event(x=155.3, y=3.8)  # image coordinates: channel on x, query head on y (cell centres at integers)
    assert selection.element == (4, 155)
    tap.event(x=256.6, y=0.0)  # outside the map: the selection stays
    assert selection.element == (4, 155)


def test_selection_element_is_a_pair_or_none():
    selection = Selection()
    assert selection.element is None
    selection.element = (4, 155)
    with pytest.raises(ValueError, match="correct length"):
        selection.element = (1, 2, 3)


def test_each_cell_is_its_link_and_one_pane_per_run_of_text(analyses):
    """Every pane costs each session's page server time: a cell never holds an empty or a split text pane."""
    for name, analysis in analyses.items():
        for slug, cell in _cells(overview.build(analysis, Selection())).items():
            assert isinstance(cell.objects[0], pn.widgets.Button), (name, slug)
            kinds = [isinstance(part, pn.pane.HTML) and "view-hint" not in part.css_classes for part in cell.objects]
            assert not any(a and b for a, b in itertools.pairwise(kinds)), (name, slug)
            assert all(part.object for part in cell.objects if isinstance(part, pn.pane.HTML)), (name, slug)


def _error_plot(document):
    from bokeh.models import Plot

    return next(
        p for p in document.select({"type": Plot}) if p.title.text in ("|output - primary|", "ULP distance in bfloat16")
    )


@pytest.mark.parametrize("name", ["injected-error-head5", "qwen36-bf16-t64"])  # 8 and 16 query heads
def test_the_error_map_labels_every_head_and_a_line_names_the_largest_score_head(analyses, name):
    numerics = analyses[name].numerics
    view, document, _ = _build(analyses, name)
    heads = len(numerics.score.per_head)
    assert list(_error_plot(document).left[0].ticker.ticks) == list(range(heads))
    worst = max(range(heads), key=lambda h: (numerics.score.per_head[h] or 0, -h))
    assert ranked_heads(numerics)[0] == worst
    assert f'data-head="{worst}">Largest score: <b>query head {worst}</b>' in text(_cells(view)["errors"])


def test_isolated_nonzero_elements_are_ringed_on_the_error_map(analyses):
    numerics = analyses["qwen36-pair-paged"].numerics
    distance = numerics.rounded_to_output.ulp.distance
    heads, channels = np.nonzero(distance > 0)
    assert 0 < heads.size <= 4 and distance.size >= 2048  # a few 1-ULP elements among thousands of cells
    view, document, _ = _build(analyses, "qwen36-pair-paged")
    from bokeh.models import Scatter

    rings = [r for r in _error_plot(document).renderers if isinstance(getattr(r, "glyph", None), Scatter)]
    assert len(rings) == 1
    data = rings[0].data_source.data
    assert sorted(zip(data["y"], data["x"], strict=True)) == sorted(zip(heads.tolist(), channels.tolist(), strict=True))
    assert rings[0].glyph.fill_alpha == 0  # a ring: the cell's own colour still says its value
    assert f"the {heads.size} nonzero element" in text(_cells(view)["errors"])
    _, plain, _ = _build(analyses, "injected-error-head5")  # every element differs: colours show them, no ring
    assert not [r for r in _error_plot(plain).renderers if isinstance(getattr(r, "glyph", None), Scatter)]
