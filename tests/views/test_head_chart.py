"""The SVG per-head chart: its axes, what it leaves out, and exact markers inside the frame.

The SVG per-head chart: its axes, what it leaves out, and that every marker is the exact value, inside the
frame.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from explorer.views.shared import head_chart
from explorer.views.shared.head_chart import Series

HEIGHT = 280


def _chart(series, log=True, heads=None, vertical=False) -> ElementTree.Element:
    heads = len(series[0].values) if heads is None else heads
    markup = head_chart.head_chart(
        series,
        title="t <&>",
        ylabel="linf",
        log=log,
        heads=heads,
        xticks=list(range(heads)),
        vertical_labels=vertical,
        height=HEIGHT,
    )
    return ElementTree.fromstring(markup)  # well-formed, every label escaped


def _points(root) -> list[ElementTree.Element]:
    return [g for g in root.iter("g") if g.get("class") == "head-point"]


def _frame(root) -> tuple[float, float]:
    rect = next(root.iter("rect"))
    return float(rect.get("y")), float(rect.get("y")) + float(rect.get("height"))


@pytest.mark.parametrize(
    "values, labels",
    [
        ([3e-5, 4e-5], ["1e-05", "1e-04"]),  # inside one decade: that decade
        ([1e-5, 1e-5], ["1e-05", "1e-04"]),  # one value on a decade: the decade above added
        ([2e-7, 0.5], ["1e-08", "1e-06", "1e-04", "1e-02", "1e+00"]),  # every 2nd decade
        ([1e-30, 1e-2], ["1e-32", "1e-26", "1e-20", "1e-14", "1e-08", "1e-02"]),  # every 6th decade, both ends labelled
        ([5e-324], ["1e-324", "1e-323"]),  # the smallest subnormal: labels never underflow to 0
    ],
)
def test_log_axis_spans_whole_decades_with_at_most_six_labels_and_both_ends_labelled(values, labels):
    axis = head_chart.log_axis(np.array(values))
    assert [label for _, label in axis.ticks] == labels
    assert len(axis.ticks) <= head_chart.MAX_Y_TICKS


@pytest.mark.parametrize(
    "values, labels",
    [
        ([2.05, 3.45], ["2.0", "2.5", "3.0", "3.5"]),
        ([-3.0, 4.1], ["-4", "-2", "0", "2", "4", "6"]),
        ([5.0, 5.0], ["4.5", "5.0", "5.5"]),  # one value: 10 % either side
        ([0.0, 0.0], ["-1.0", "-0.5", "0.0", "0.5", "1.0"]),  # never "-0.0"
        ([-0.3, -0.1], ["-0.30", "-0.25", "-0.20", "-0.15", "-0.10"]),
        (
            [1234.2, 1235.1],
            ["1234.2", "1234.4", "1234.6", "1234.8", "1235.0", "1235.2"],
        ),  # neighbours never print alike
        ([2e20, 3e20], ["2e+20", "2.2e+20", "2.4e+20", "2.6e+20", "2.8e+20", "3e+20"]),
    ],
)
def test_linear_axis_steps_are_one_two_or_five_times_a_power_of_ten(values, labels):
    axis = head_chart.linear_axis(np.array(values))
    assert [label for _, label in axis.ticks] == labels
    assert axis.low <= min(values) and axis.high >= max(values)


def test_markers_carry_the_exact_values_and_leave_out_what_the_axis_cannot_draw():
    values = np.array([0.1 + 0.2, 0.0, np.nan, np.inf, 1e-300, -1.0])
    root = _chart([Series("a", values, "#123456")])
    assert {int(g.get("data-head")): float(g.get("data-value")) for g in _points(root)} == {0: 0.1 + 0.2, 4: 1e-300}
    assert "0.30000000000000004" in "".join(next(g.iter("title")).text for g in _points(root))
    linear = _chart([Series("a", values, "#123456")], log=False)
    assert [int(g.get("data-head")) for g in _points(linear)] == [0, 1, 4, 5]


def test_lines_join_only_neighbouring_drawn_heads_and_the_floor_is_dashed():
    values = np.array([1e-3, 2e-3, np.nan, 4e-3, 5e-3, 6e-3])
    root = _chart([Series("a", values, "#123456", line="solid"), Series("f", values / 10, "#777777", None, "dashed")])
    lines = [line for line in root.iter("line") if line.get("stroke") in ("#123456", "#777777")]
    assert len(lines) == 2 * 3  # 0-1, 3-4, 4-5 for each series; no line across the null head 2
    assert all((line.get("stroke-dasharray") is not None) == (line.get("stroke") == "#777777") for line in lines)


def test_nothing_drawable_says_so_instead_of_an_empty_frame():
    root = _chart([Series("a", np.array([0.0, np.nan]), "#123456")])
    assert not list(root.iter("svg"))
    assert "No value of linf can be drawn on a log axis" in "".join(root.itertext())


def test_every_head_is_labelled_and_vertical_labels_stand_up():
    root = _chart([Series("a", np.full(16, 1e-3), "#123456")], vertical=True)
    plot = next(s for s in root.iter("svg") if s.get("class") == "head-chart-plot")
    labels = list(plot.findall("text"))[:-1]
    assert [t.text for t in labels] == [str(h) for h in range(16)]
    assert all("vertical-rl" in t.get("style") for t in labels)


@settings(max_examples=200, deadline=None)
@example([5e-324], True)
@example([0.0, 5e-324], False)  # a span of one subnormal: the tick step underflowed to 0 (math domain error)
@example([-1e300, 1e300], False)
@given(
    st.lists(st.one_of(st.floats(min_value=-1e300, max_value=1e300), st.just(float("nan"))), min_size=1, max_size=40),
    st.booleans(),
)
def test_every_marker_lies_inside_the_frame_and_ticks_rise(values, log):
    values = np.array(values, dtype=np.float64)
    if not head_chart.drawable(values, log).any():
        return
    root = _chart([Series("a", values, "#123456")], log=log)
    top, bottom = _frame(root)
    for g in _points(root):
        place = next(g.iter("svg"))
        assert top <= float(place.get("y")) <= bottom
        assert 0 < float(re.fullmatch(r"([0-9.]+)%", place.get("x")).group(1)) < 100
    axis = next(s for s in root.iter("svg") if s.get("class") == "head-chart-axis")
    ys = [float(t.get("y")) for t in axis.findall("text")[:-1]]
    assert ys == sorted(ys, reverse=True) and len(ys) <= head_chart.MAX_Y_TICKS
