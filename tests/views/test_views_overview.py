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

from explorer.analysis.ranking import worst_ulp_per_head
from explorer.packet.model import TENSOR_NAMES
from explorer.views import Selection, html_summary, overview
from explorer.views.element import element_html
from explorer.views.html_summary import esc, short_number
from explorer.views.scales import ulp_bucket_codes

from views_support import head_charts, images, images_by_title, render, text

CELL_SLUGS = [slug for slug, _, _ in overview.CELLS]


def _build(analyses, name):
    selection = Selection()
    view = overview.build(analyses[name], selection)
    return view, render(view), selection


def _cells(view) -> dict[str, pn.Column]:
    return {next(c for c in cell.css_classes if c.startswith("overview-") and c != "overview-cell")
            .removeprefix("overview-"): cell for cell in view.select(pn.Column) if "overview-cell" in cell.css_classes}


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
    masks = [np.asarray(r.data_source.data["image"][0]) for r in images(document)
             if r.data_source.data["image"][0].shape == analysis.facts.last_row_keys.field_mask.shape]
    assert len(masks) == 2
    for row in (analysis.facts.last_row_keys, analysis.facts.last_row_values):
        assert any(np.array_equal(mask, row.field_mask) for mask in masks)
    assert not np.array_equal(analysis.facts.last_row_keys.field_mask, analysis.facts.last_row_values.field_mask)
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


def test_nonfinite_cell_counts_every_tensor_and_names_the_finite_ones(analyses):
    analysis = analyses["nan-stored-values"]
    view, _, _ = _build(analyses, "nan-stored-values")
    shown = text(view)
    for name in TENSOR_NAMES:
        assert f"<code>{name}</code>" in shown
    nan = analysis.facts.nonfinite["storedValues"].nan
    assert f"<td style=\"{html_summary.CELL_STYLE}\">{nan}</td>" \
        in shown
    assert "(only these)" in shown and "<code>storedValues</code> (only" not in shown


@pytest.mark.parametrize("name", ["refused-hash-mismatch", "discarded-sample", "inconclusive-without-facts"])
def test_refused_and_inconclusive_packets_keep_the_grid_and_say_why(analyses, name):
    view, _, _ = _build(analyses, name)
    cells = _cells(view)
    assert set(cells) == set(CELL_SLUGS)
    missing = [slug for slug, cell in cells.items() if "Not available" in text(cell)]
    expected = {"refused-hash-mismatch": CELL_SLUGS, "discarded-sample": ["errors", "narrowed"],
                "inconclusive-without-facts": CELL_SLUGS}[name]
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
