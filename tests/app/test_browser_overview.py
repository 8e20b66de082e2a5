"""The Overview and the element drill-down in Debian's chromium.

The default page draws the overview's plots, a click on a map cell opens the element panel with
result.element's values, and `&element=` round-trips through the URL.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import explorer
from explorer.catalog.summary import list_order, summarize
from explorer.foundations.formatting import short_number
from explorer.ui import catalog

from app_support import MIN_PIXEL_STD, PAGE_TIMEOUT_MS, artifact, deep_text, open_packet, pixel_std, wait_view

ROOT = catalog.default_root()
OVERVIEW_WIDTH = 1280
MAP_PACKET = "injected-error-head5"  # float32 output: the overview map is |output - primary| over 8 x 64 cells
ROUND_TRIP_PACKET, ROUND_TRIP_ELEMENT = "qwen36-bf16-t64", (4, 155)  # flat 1179 at D 256


def _query(page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}


def _narrow(page) -> None:
    page.set_viewport_size({"width": OVERVIEW_WIDTH, "height": 1000})


def _panel_values(page) -> dict[str, str]:
    """quantity -> exact value of the element panel's table."""
    rows = page.locator(".element-table tbody tr")
    return {row.locator("td").nth(0).inner_text(): row.locator("td").nth(2).inner_text() for row in rows.all()}


def _assert_panel_shows(page, packet: str, head: int, channel: int) -> None:
    panel = page.locator(f".element-panel[data-element='{head},{channel}']")
    panel.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    record = explorer.analyze(ROOT / packet).element(head, channel)
    shown = _panel_values(page)
    for label, value in record.fields():
        expected = explorer.foundations.formatting.full_number(value)
        assert shown[label] == expected, label
    text = deep_text(panel)
    assert record.output_hex in text and short_number(record.output) in text


def test_the_default_page_draws_the_overview(page, server):
    _narrow(page)
    open_packet(page, server)
    first = min(
        (entry.name for entry in catalog.discover(ROOT)), key=lambda name: list_order(name, summarize(ROOT / name))
    )  # the list's first row
    view = wait_view(page, first, "overview")
    canvases = view.locator("canvas")
    assert canvases.count() >= 1  # the error map (last-row maps only when bits differ)
    for index in range(canvases.count()):
        assert pixel_std(canvases.nth(index).screenshot()) > MIN_PIXEL_STD, index
    chart = view.locator("svg.head-chart-plot")  # the narrowed-Q chart, inline SVG
    assert chart.locator("g.head-point").count() > 0 and pixel_std(chart.screenshot()) > MIN_PIXEL_STD
    for title in ("Per-head error", "Last-row bits", "Nonfinite", "Narrowed-Q counterfactual"):
        assert title in deep_text(view)
    page.screenshot(path=artifact("overview-default-1280.png"))
    page.wait_for_url(lambda url: "tab=overview" in url, timeout=PAGE_TIMEOUT_MS)


def test_clicking_a_map_cell_shows_the_element_panel(page, server):
    _narrow(page)
    open_packet(page, server, f"?packet={MAP_PACKET}")
    view = wait_view(page, MAP_PACKET, "overview")
    canvas = view.locator(".overview-error-map canvas").first
    box = canvas.bounding_box()
    # Bokeh's event layer lies over the canvas: click the page at the point inside the map's frame.
    page.mouse.click(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.45)
    panel = page.locator(".element-panel")
    panel.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    head, channel = map(int, panel.get_attribute("data-element").split(","))
    assert 0 <= head < 8 and 0 <= channel < 64
    _assert_panel_shows(page, MAP_PACKET, head, channel)
    page.wait_for_url(lambda url: "element=" in url, timeout=PAGE_TIMEOUT_MS)
    assert _query(page)["element"] == f"{head},{channel}"
    page.screenshot(path=artifact("overview-element-panel-1280.png"), full_page=True)


def test_the_element_query_round_trips(page, server, browser):
    head, channel = ROUND_TRIP_ELEMENT
    _narrow(page)
    open_packet(page, server, f"?packet={ROUND_TRIP_PACKET}&element=1179")  # a flat index is accepted
    _assert_panel_shows(page, ROUND_TRIP_PACKET, head, channel)
    page.wait_for_url(lambda url: re.search(r"element=4(,|%2C)155", url) is not None, timeout=PAGE_TIMEOUT_MS)
    reopened = browser.new_page(viewport={"width": OVERVIEW_WIDTH, "height": 1000})
    try:
        reopened.set_default_timeout(PAGE_TIMEOUT_MS)
        reopened.goto(page.url, timeout=PAGE_TIMEOUT_MS)
        _assert_panel_shows(reopened, ROUND_TRIP_PACKET, head, channel)
        assert _query(reopened)["element"] == f"{head},{channel}"
    finally:
        reopened.close()


def test_an_invalid_element_query_gets_a_note(page, server):
    open_packet(page, server, f"?packet={ROUND_TRIP_PACKET}&element=4%3B155")
    message = page.locator(".shell-message").inner_text()
    assert "4;155" in message and "is not H,C" in message
    assert page.locator(".element-panel").count() == 0
