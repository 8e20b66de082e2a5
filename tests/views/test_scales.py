"""Display scales (explorer.views.shared.scales and the per-head axis).

Colour-bar labels never repeat, counts tick whole numbers, index labels stay apart, and the discrete ULP scale
gives 0 its own colour.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.views.shared.charts import head_ticks
from explorer.views.shared.scales import (
    INDEX_LABEL_PIXELS,
    ULP_BUCKET_COLOURS,
    ZERO_COLOUR,
    colour_bar_ticks,
    index_ticks,
    ulp_bucket_codes,
    ulp_bucket_label,
    ulp_buckets_shown,
    unique_labels,
)


@pytest.mark.parametrize(
    "low, high, log",
    [
        (5e-8, 1.2e-7, True),
        (9.313e-10, 0.1318, True),
        (1e-7, 1.0000001e-7, False),
        (0.1, 0.1000001, False),
        (6.706e-7, 0.1314, True),
        (1.0, 1.5, True),
        (0.0, 3e6, False),
        (-2.5, 7.25, False),
        (1e-300, 1e300, True),
    ],
)
def test_colour_bar_labels_never_repeat(low, high, log):
    ticks = colour_bar_ticks(low, high, log=log)
    labels = [label for _, label in ticks]
    assert len(ticks) >= 2 and len(set(labels)) == len(labels)
    assert all(low * (1 - 1e-12) <= value <= high * (1 + 1e-12) for value, _ in ticks)


def test_the_issue_s_repeated_labels_are_told_apart():
    assert len(set(unique_labels([1.2e-7, 1.4e-7, 5e-8]))) == 3  # "1e-7, 1e-7, 5e-8" before


@pytest.mark.parametrize("high", [1, 2, 3, 7, 37, 1000])
def test_count_bars_tick_whole_numbers(high):
    ticks = colour_bar_ticks(0, high, integer=True)
    assert all(value == int(value) for value, _ in ticks) and ticks[0][0] == 0


@pytest.mark.parametrize("rows, pixels", [(8, 100), (16, 100), (32, 185), (64, 400), (1, 10)])
def test_index_labels_stay_apart(rows, pixels):
    ticks = index_ticks(rows, pixels)
    assert ticks[0] == 0 and ticks == sorted(set(ticks))
    stride = ticks[1] - ticks[0] if len(ticks) > 1 else rows
    assert stride * pixels / rows >= INDEX_LABEL_PIXELS or ticks == list(range(rows))


@pytest.mark.parametrize("heads, upright", [(8, 8), (16, 8), (32, 8), (32, 32), (64, 32)])
def test_head_labels_stand_vertical_and_thin_out_when_narrow(heads, upright):
    ticks, vertical = head_ticks(heads, upright)
    assert vertical == (heads > upright)
    assert len(ticks) <= 2 * upright and ticks[0] == 0


def test_ulp_scale_gives_zero_its_own_colour_and_names_each_bucket_once():
    distance = np.array([[-1, 0, 1, 2], [3, 4, 100, 70000]])
    codes = ulp_bucket_codes(distance)
    assert np.isnan(codes[0, 0]) and codes[0, 1] == 0 and codes[0, 2] == 1 and codes[0, 3] == codes[1, 0] == 2
    assert ULP_BUCKET_COLOURS[0] == ZERO_COLOUR and ZERO_COLOUR not in ULP_BUCKET_COLOURS[1:]
    shown = ulp_buckets_shown(codes)
    labels = [ulp_bucket_label(index) for index in range(shown)]
    assert labels[:3] == ["0", "1", "2-3"] and labels[-1] == ">= 65536" and len(set(labels)) == len(labels)
    assert ulp_buckets_shown(ulp_bucket_codes(np.zeros((2, 2)))) == 2  # 0 and 1 on the bar even when all equal
