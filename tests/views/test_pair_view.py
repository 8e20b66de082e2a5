"""The pair view, its notebook accessor and its export build.

Each with the right content for every kind of pair.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
from bokeh.models import LogColorMapper
from IPython.lib.pretty import pretty

import explorer
from explorer.export.kinds import COMPARISON_SUFFIX
from explorer.export.pages import export_pair
from explorer.foundations.formatting import SIGNIFICANT_DIGITS
from explorer.notebook.pair import VIEW_CALLS, PairViews
from explorer.pair.findings import DECIDING, output_sentence, pair_findings
from explorer.samples import packets as samples
from explorer.views.pair import html as pair_html
from explorer.views.pair import view as pair_view
from explorer.views.pair.view import build
from explorer.views.shared.scales import LOG, colour_scale

from views_support import colour_mappers, images_by_title, render, text, tooltips

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "sample_packets"
PAGED = COMMITTED / samples.PAIR_NAMES["paged"]
CONTIGUOUS = COMMITTED / samples.PAIR_NAMES["contiguous"]
BIT_MAP_TITLE = "Output bit differences, coloured by ULP distance"
ERROR_TITLES = ("|a - reference| (side a)", "|b - reference| (side b)")


def _float32_output(spec):
    values = samples.bits_to_values(spec.tensors["output"][1], "bfloat16")
    spec = dataclasses.replace(
        spec, tensors={**spec.tensors, "output": ("float32", samples.values_to_bits(values, "float32"))}
    )
    return samples.with_record(spec, output={**spec.snapshot["records"][0]["output"], "dtype": "float32"})


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair-views")
    float32_output = samples.write_packet(root / "float32-output", _float32_output(samples.pair_spec("contiguous")))
    return {
        "compared": explorer.compare(PAGED, CONTIGUOUS),
        "refused": explorer.compare(PAGED, COMMITTED / "refused-hash-mismatch"),
        "shape": explorer.compare(PAGED, COMMITTED / "qwen36-bf16-t64"),
        "dtypes": explorer.compare(CONTIGUOUS, float32_output),
        "inputs": explorer.compare(PAGED, COMMITTED / samples.PAIR_NAMES["input-differs"]),
    }


def test_compared_pair_draws_every_section(pairs):
    pair = pairs["compared"]
    view = pair_view.build(pair)
    document = render(view)
    shown = text(view)
    maps = images_by_title(document)
    assert {BIT_MAP_TITLE, *ERROR_TITLES} <= set(maps)
    # The bit map is coloured by the ULP bucket of every element; equal elements in bucket 0.
    colour = np.asarray(maps[BIT_MAP_TITLE].data_source.data["image"][0])
    distance = pair.output.ulp.distance
    assert np.array_equal(colour == 0, distance == 0)
    assert np.array_equal(colour == 1, distance == 1)
    assert np.array_equal(colour == 2, (distance >= 2) & (distance <= 3))
    # |a - ref| and |b - ref| share one colour scale.
    mappers = [maps[title].glyph.color_mapper for title in ERROR_TITLES]
    assert len({(m.low, m.high) for m in mappers}) == 1
    labels = set(tooltips(document))
    assert {
        "bits a",
        "bits b",
        "output a",
        "output b",
        "ULP distance",
        "primary reference a",
        "rounded reference b",
        "|a - ref|",
        "|b - ref|",
        "elements differing",
    } <= labels
    output = pair.report()["output"]
    assert f"{output['mismatched']} of {output['compared']} output elements differ" in shown
    ladder = pair.report()["ladder"]
    for side in ("a", "b"):
        assert f"{ladder[side]['equalToRoundedReference']} of {ladder[side]['compared']}" in shown
    assert "All five input tensors are byte-identical." in shown
    assert "The two target tokens differ." in shown and "1928" in shown and "6829" in shown
    assert shown.count('data-identical="true"') == 5
    assert 'class="pair-status" data-status="compared"' in shown
    assert colour_mappers(document)


def test_numbers_show_four_significant_digits_and_the_full_value_on_hover(pairs):
    pair = pairs["compared"]
    shown = text(pair_view.ladder_section(pair))
    linf = pair.ladder["b"].primary.linf
    assert f'<span title="{linf!r}">{linf:.{SIGNIFICANT_DIGITS}g}</span>' in shown
    for cell in re.findall(r"<span title=\"[^\"]+\">([^<]+)</span>", shown):
        digits = cell.lstrip("-").replace(".", "").split("e")[0].lstrip("0")
        assert len(digits) <= SIGNIFICANT_DIGITS, cell


def test_a_tap_on_a_cell_shows_that_element(pairs):
    pair = pairs["compared"]
    explorer_view = pair_view.BitDifferenceExplorer(pair)
    first = pair.output.bits.first_positions[0]
    assert (explorer_view.head, explorer_view.channel) == first  # opens on the first differing element
    head, channel = pair.output.bits.first_positions[-1]
    explorer_view.tap.event(x=channel + 0.3, y=head - 0.4)
    assert (explorer_view.head, explorer_view.channel) == (head, channel)
    render(explorer_view.__panel__())
    detail = text(explorer_view.__panel__())
    assert f"Query head {head}, channel {channel}" in detail and "bit patterns differ" in detail
    for side in ("a", "b"):
        tensor = pair.side(side).admission.tensors["output"]
        assert f"0x{int(tensor.bits[0, head, 0, channel]):04x}" in detail
        assert repr(float(tensor.values[0, head, 0, channel])) in detail
        assert repr(float(pair.side(side).numerics.primary.reference[head, channel])) in detail
    explorer_view.tap.event(x=10_000.0, y=-5.0)  # outside the map: clamped to its edge
    assert (explorer_view.head, explorer_view.channel) == (0, pair.output.compared // 16 - 1)


def test_refused_pair_shows_the_refusal_with_its_side_only(pairs):
    view = pair_view.build(pairs["refused"])
    document = render(view)
    shown = text(view)
    assert not images_by_title(document)
    assert "Side b refusals" in shown and "sha256_mismatch" in shown
    assert 'data-status="refused"' in shown


def test_shape_differs_pair_has_no_element_wise_sections(pairs):
    view = pair_view.build(pairs["shape"])
    maps = images_by_title(render(view))
    shown = text(view)
    assert BIT_MAP_TITLE not in maps and set(ERROR_TITLES) <= set(maps)
    assert "shape_differs" in shown and "Inputs not compared element-wise" in shown
    assert "selection field that differs" in shown


def test_output_dtypes_differ_draws_the_value_difference(pairs):
    view = pair_view.build(pairs["dtypes"])
    maps = images_by_title(render(view))
    assert any(title.startswith("|output a - output b|") for title in maps)
    assert "compared by value only" in text(view)


def test_output_values_that_differ_in_another_dtype_are_drawn_on_the_log_scale_of_their_limits(tmp_path):
    """The paged output as float32 against the contiguous bfloat16 one: 786 differences, a log colour scale."""
    paged_float32 = samples.write_packet(tmp_path / "paged-float32", _float32_output(samples.pair_spec("paged")))
    pair = explorer.compare(CONTIGUOUS, paged_float32)
    maps = images_by_title(render(pair_view.build(pair)))
    (difference,) = (renderer for title, renderer in maps.items() if title.startswith("|output a - output b|"))
    mapper = difference.glyph.color_mapper
    scale = colour_scale([pair.output.difference.abs_error], LOG, "|a - b|")
    assert scale.logz and isinstance(mapper, LogColorMapper) and (mapper.low, mapper.high) == scale.clim
    assert "Log colour scale from the smallest positive |a - b|" in text(pair_view.bits_section(pair))


def test_inputs_differ_names_the_tensor_and_why_nearer_is_missing(pairs):
    shown = text(pair_view.build(pairs["inputs"]))
    assert 'data-identical="false"' in shown and "[1, 100, 5]" in shown
    assert "inputs_differ" in shown


def test_notebook_display_and_accessor(pairs):
    for pair in pairs.values():
        markup = pair._repr_html_()
        assert f'data-status="{pair.status}"' in markup and ".views.bits()" in markup
        line = pretty(pair)
        assert "\n" not in line and pair.status in line
        for reason in pair.reasons:
            assert reason.code in line
    views = pairs["compared"].views
    assert isinstance(views, PairViews) and repr(views).startswith("Views of Pair of ")
    for call in VIEW_CALLS:
        render(getattr(views, call.split("(")[0])())


def test_export_writes_the_page_and_the_comparison_and_never_overwrites(pairs, tmp_path):
    pair = pairs["compared"]
    first = export_pair(pair, tmp_path)
    assert first.html.name == f"{PAGED.name}-vs-{CONTIGUOUS.name}.html"
    assert first.report.name.endswith(COMPARISON_SUFFIX)
    assert json.loads(first.report.read_text()) == pair.report()
    page = first.html.read_text()
    assert "export-view-pair" in page and "cdn.bokeh.org" not in page and "cdn.holoviz.org" not in page
    second = export_pair(pair, tmp_path)
    assert second.html.name == f"{PAGED.name}-vs-{CONTIGUOUS.name}-2.html"
    assert first.html.read_text() == page


def test_a_pair_with_emulations_draws_the_matrix(pairs):
    pair = explorer.compare(PAGED, CONTIGUOUS, emulate="default")
    view = pair_view.build(pair)
    render(view)
    shown = text(view)
    assert "pair-emulation-matrix" in shown and "shared_inputs" in shown
    cell = "</td><td[^>]*>([^<]+)"
    for row in pair.emulation.rows:  # per side: decisive, differing, all elements
        cells = re.findall(rf">{re.escape(row.a.id)}</code>{cell * 6}</td>", shown)
        assert cells == [
            tuple(
                str(n)
                for n in (
                    row.a.bit_equal_decisive,
                    row.b.bit_equal_decisive,
                    row.differing_a,
                    row.differing_b,
                    row.a.bit_equal,
                    row.b.bit_equal,
                )
            )
        ]
    assert f"differing a (of {pair.emulation.differing.count})" in shown
    baseline = re.findall(rf">rounded reference \(baseline\)</code>{cell * 6}</td>", shown)
    assert baseline and baseline[0][4:] == (
        str(pair.emulation.baseline.a.bit_equal),
        str(pair.emulation.baseline.b.bit_equal),
    )
    assert "pair-emulation-matrix-per-head" in shown
    sections = [c.css_classes for c in view.objects]
    assert ["pair-emulations"] in sections
    assert ["pair-emulations"] not in [c.css_classes for c in pair_view.build(pairs["compared"]).objects]
    reason = text(
        pair_view.emulations_section(explorer.compare(PAGED, COMMITTED / "qwen36-bf16-t64", emulate="single_pass"))
    )
    assert "shape_differs" in reason and "pair-emulation-matrix" not in reason.replace("emulation-matrix-reason", "")


def test_the_pair_view_leads_with_its_findings(pairs):
    """First: the input identity (naming the tensors that differ), N of M output elements with their heads, the
    tokens; the notes and limitations come last."""
    pair = explorer.compare(PAGED, COMMITTED / "qwen36-pair-contiguous-input-differs")
    view = build(pair)
    assert "pair-findings-section" in view.objects[0].css_classes
    assert "pair-notes-section" in view.objects[-1].css_classes
    findings = pair_html.findings_html(pair)
    differing = [name for name, t in pair.inputs.tensors.items() if not t.identical]
    assert differing and all(name in findings for name in differing) and "Inputs differ" in findings
    assert output_sentence(pair) in findings and "Target tokens" in findings
    assert "byte-identical" in pair_html.findings_html(pairs["compared"])


def test_the_findings_lead_with_which_side_is_off(pairs):
    """Nearer, rounded and the emulation that reproduces each side come first, with the pair's own numbers."""
    pair = explorer.compare(PAGED, CONTIGUOUS, emulate="default")
    found = pair_findings(pair)
    assert [f.key for f in found[:3]] == list(DECIDING)
    counts = pair.nearer.global_counts
    assert found[0].text.startswith(f"Nearer the primary reference: a {counts.a}, b {counts.b} of 2048")
    ladder = pair.ladder
    assert (
        f"a {ladder['a'].equal_to_rounded_reference} vs b {ladder['b'].equal_to_rounded_reference} of "
        f"{ladder['a'].compared}"
    ) in found[1].text
    # By construction (samples.py) the paged packet is the paged kernel's emulation, the contiguous one MLX's.
    assert "side a: paged_two_pass and single_pass, bit for bit (2048 of 2048)" in found[2].text
    assert "side b: mlx_two_pass, bit for bit (2048 of 2048)" in found[2].text
    markup = pair_html.findings_html(pair)
    assert all(markup.index(f"finding-{key}") < markup.index("finding-inputs") for key in DECIDING)
    # Where: the largest |a - b| is named with its element, which holds that value.
    output = next(f for f in found if f.key == "output")
    at = output.numbers["linfAt"]
    assert f"at query head {at['queryHead']}, channel {at['channel']}" in output.text
    assert pair.output.difference.abs_error[at["queryHead"], at["channel"]] == output.numbers["linf"]
    refused = pair_findings(pairs["refused"])
    assert [f.key for f in refused] == ["refused"] and "Side b refused" in refused[0].text


def test_decisive_columns_stand_under_each_sides_own_count():
    """A pair whose inputs differ: the matrix's header gives each side's decisive total, not side a's twice."""
    pair = explorer.compare(PAGED, COMMITTED / samples.PAIR_NAMES["input-differs"], emulate="default")
    own = [pair.side(side).emulation_counts.decisive.count for side in ("a", "b")]
    assert own[0] != own[1]
    markup = pair_html.emulation_matrix_html(pair)
    assert f"decisive a (of {own[0]})" in markup and f"decisive b (of {own[1]})" in markup


def test_emulations_computed_on_the_page_update_the_findings(monkeypatch):
    """On a served page the matrix is computed on request; once it arrives the findings say which emulation
    reproduces each side."""
    heard = []

    def section(pair, on_computed=lambda pair: None, runner=None, on_emulated=lambda request: None):
        heard.append(on_computed)
        return pair_view.pn.Column()

    monkeypatch.setattr(pair_view, "served", lambda: True)
    monkeypatch.setattr(pair_view, "emulations_section", section)
    view = build(explorer.compare(PAGED, CONTIGUOUS))
    findings = next(part for part in view.objects if "pair-findings-section" in part.css_classes)
    assert "not computed (no emulation was requested" in text(findings)
    heard[0](explorer.compare(PAGED, CONTIGUOUS, emulate="default"))
    assert "side b: mlx_two_pass, bit for bit (2048 of 2048)" in text(findings)


def test_the_emulations_section_hands_the_computed_pair_on():
    from explorer.views.pair.emulations import PairEmulationsSection

    heard = []
    section = PairEmulationsSection(explorer.compare(PAGED, CONTIGUOUS), on_computed=heard.append)
    found = explorer.compare(PAGED, CONTIGUOUS, emulate="single_pass")
    section._deliver(found, "")
    assert heard == [found] and section.pair is found
