"""The UI-free HTML summary and the shared colour-scale choice of the views."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from explorer.foundations import formatting
from explorer.views.pair.html import PAIR_STATUS_COLOURS
from explorer.views.shared import html_summary, markup
from explorer.views.shared.scales import LINEAR, LOG, colour_scale


def test_overview_of_an_analyzed_packet_lists_its_largest_linf_heads(analyses):
    analysis = analyses["injected-error-head5"]
    page = html_summary.overview_html(analysis)
    assert 'data-status="analyzed"' in page
    assert markup.esc(analysis.numerics.primary.label) in page
    assert markup.esc(repr(analysis.numerics.primary.per_head[5].linf)) in page  # the full value, as a tooltip
    assert page.split('class="per-head-primary"')[1].count("<tr><td") == html_summary.LARGEST_HEADS


@pytest.mark.parametrize(
    "name, code",
    [
        ("refused-hash-mismatch", "sha256_mismatch"),
        ("discarded-sample", "sample_not_confirmed"),
        ("nan-stored-values", "nonfinite_inputs"),
    ],
)
def test_overview_of_other_statuses_shows_every_code(analyses, name, code):
    analysis = analyses[name]
    page = html_summary.overview_html(analysis)
    assert f'data-status="{analysis.status}"' in page and code in page


def test_overview_escapes_packet_text(analyses):
    analysis = analyses["refused-hash-mismatch"]
    page = html_summary.overview_html(analysis)
    assert "&#x27;stored-values.bin&#x27;" in page  # the refusal message quotes the file name


def test_numbers_are_shown_as_the_report_prints_them():
    assert formatting.full_number(0.1) == "0.1"
    assert formatting.full_number(np.float32(0.1)) == repr(float(np.float32(0.1)))
    assert formatting.full_number(None) == formatting.MISSING
    assert formatting.full_number(True) == "true"
    assert formatting.full_number({"a": 1}) == '{"a": 1}'
    assert formatting.full_number(7) == "7"


def test_short_numbers_keep_four_significant_digits_and_the_full_value_in_the_tooltip():
    assert formatting.short_number(0.13175451755523682) == "0.1318"
    assert formatting.short_number(np.float32(3.0517578125e-05)) == "3.052e-05"
    assert formatting.short_number(1234567.0) == "1.235e+06"
    assert formatting.short_number(float("nan")) == "nan"
    assert formatting.short_number(12345) == "12345"  # integers are exact counts, never rounded
    assert formatting.short_number(None) == formatting.MISSING
    assert formatting.short_number("bfloat16") == "bfloat16"
    cell = markup.number_cell(0.13175451755523682)
    assert cell == '<span class="number" style="white-space:nowrap" title="0.13175451755523682">0.1318</span>'
    assert markup.number_cell(0.5) == '<span class="number" style="white-space:nowrap">0.5</span>'  # no tooltip


def test_largest_heads_skip_null_metrics_and_break_ties_by_head(analyses):
    primary = analyses["infinite-queries"].numerics.primary
    largest = html_summary.largest_heads(primary, count=len(primary.per_head))
    assert all(primary.per_head[h].linf is not None for h in largest)
    values = [primary.per_head[h].linf for h in largest]
    assert values == sorted(values, reverse=True)


def test_the_html_summary_imports_no_ui_library():
    code = (
        "import sys, explorer.views.shared.html_summary; "
        "print(sorted(m for m in ('panel', 'holoviews', 'bokeh', 'param') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_colour_scale_linear_and_log():
    values = np.array([[0.0, 1e-6], [1e-3, np.nan]])
    linear = colour_scale([values], LINEAR, "x")
    assert linear.clim == (0.0, 1e-3) and not linear.logz
    log = colour_scale([values, np.array([[2e-3]])], LOG, "x")
    assert log.clim == (1e-6, 2e-3) and log.logz and "zeros" in log.note


@pytest.mark.parametrize("mode", [LINEAR, LOG])
def test_colour_scale_without_a_range(mode):
    zeros = colour_scale([np.zeros((2, 2))], mode, "x")
    assert not zeros.logz and zeros.clim == (0.0, 1.0) and "equals 0 " in zeros.note
    one_positive = colour_scale([np.array([0.0, 2.0])], mode, "x")
    assert not one_positive.logz and one_positive.clim == (0.0, 2.0)
    undefined = colour_scale([np.full((2, 2), np.nan)], mode, "x")
    assert undefined.clim == (0.0, 1.0) and "No finite x" in undefined.note


def test_a_cell_of_its_own_keeps_the_shared_cell_style_and_adds_its_style_and_attributes():
    shown = markup.table(
        ("", "b"),
        [(markup.Cell("a", header=True), markup.Cell("1", style="color:red", attributes='data-count="1"'))],
    )
    assert f'<th style="{markup.CELL_STYLE};">a</th>' in shown
    assert f'<td data-count="1" style="{markup.CELL_STYLE};color:red">1</td>' in shown
    assert f'<th style="{markup.CELL_STYLE}"></th>' in shown  # a plain header cell as before


def test_one_status_badge_for_packets_pairs_and_replay_runs():
    compared = markup.status_badge("compared", css_class="pair-status", colours=PAIR_STATUS_COLOURS)
    assert compared.startswith('<span class="pair-status" data-status="compared" style="display:inline-block;')
    assert markup.status_badge("analyzed", css_class="replay-status").endswith(">analyzed</span>")


def test_one_location_text_for_every_view():
    assert formatting.location(5, 17) == "query head 5, channel 17"
    assert formatting.at_text({"queryHead": 5, "channel": 17}) == " at query head 5, channel 17"
