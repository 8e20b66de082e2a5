"""The first screen in Debian's chromium at 1280 x 800.

The overview's four cells inside the first viewport, a click on a map cell leaves the map where it was and
outlines the cell, per-head markers never overlap, and no tab widens the page beyond the window.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app_support import PAGE_TIMEOUT_MS, artifact, open_packet, wait_view

FIRST_SCREEN = {"width": 1280, "height": 800}
OVERVIEW_PACKETS = ("injected-error-head5", "qwen36-bf16-t64")  # float32 output with a chart; 16 heads, bfloat16
MARKER_PACKET = "injected-error-head5"  # head 5: the primary and the counterfactual nearly equal, far above the rest
WIDE_TABS = ("summary", "raw", "errors", "attention")

def _first_screen(page, base_url: str, query: str) -> None:
    page.set_viewport_size(FIRST_SCREEN)
    open_packet(page, base_url, query)


@pytest.mark.parametrize("packet", OVERVIEW_PACKETS)
def test_every_overview_cell_is_inside_the_first_viewport(page, server, packet):
    _first_screen(page, server, f"?packet={packet}&tab=overview")
    view = wait_view(page, packet, "overview")
    cells = view.locator(".overview-cell")
    assert cells.count() == 4
    page.screenshot(path=artifact(f"first-screen-{packet}-1280x800.png"))
    for index in range(4):
        box = cells.nth(index).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= FIRST_SCREEN["height"], (index, box)
        assert box["x"] >= 0 and box["x"] + box["width"] <= FIRST_SCREEN["width"], (index, box)


def test_clicking_a_map_cell_leaves_the_map_where_it_was_and_outlines_the_cell(page, server):
    _first_screen(page, server, f"?packet={MARKER_PACKET}&tab=overview")
    view = wait_view(page, MARKER_PACKET, "overview")
    canvas = view.locator(".overview-error-map canvas").first
    before = canvas.bounding_box()
    pixels_before = canvas.screenshot()
    page.mouse.click(before["x"] + before["width"] * 0.45, before["y"] + before["height"] * 0.45)
    panel = page.locator(".element-panel")
    panel.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(500)  # the outline is drawn by the next paint of the map's own overlay
    assert canvas.bounding_box() == before, "the element panel moved the map"
    outlined = canvas.screenshot()
    assert outlined != pixels_before, "the clicked cell is not marked on the map"
    first = panel.get_attribute("data-element")
    page.mouse.click(before["x"] + before["width"] * 0.6, before["y"] + before["height"] * 0.3)  # another cell
    expect(panel).not_to_have_attribute("data-element", first, timeout=PAGE_TIMEOUT_MS)  # a second click selects too
    page.wait_for_timeout(500)
    assert canvas.screenshot() not in (outlined, pixels_before), "the outline did not move to the second cell"
    page.screenshot(path=artifact("first-screen-element-1280x800.png"))


def test_no_per_head_marker_overlaps_another(page, server):
    page.set_viewport_size(FIRST_SCREEN)
    for slug in ("overview", "errors", "narrowed"):
        open_packet(page, server, f"?packet={MARKER_PACKET}&tab={slug}")
        view = wait_view(page, MARKER_PACKET, slug)
        points = view.locator("g.head-point")
        boxes = []
        for index in range(points.count()):
            point = points.nth(index)
            box = point.locator("path").bounding_box()
            boxes.append((point.get_attribute("data-series"), point.get_attribute("data-head"), box["x"], box["y"],
                          box["x"] + box["width"], box["y"] + box["height"]))
        assert boxes, slug
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                apart = a[4] <= b[2] or b[4] <= a[2] or a[5] <= b[3] or b[5] <= a[3]
                assert apart, f"{slug}: {a} overlaps {b}"


@pytest.mark.parametrize("slug", WIDE_TABS)
def test_no_tab_widens_the_page_beyond_the_window(page, server, slug):
    _first_screen(page, server, f"?packet={MARKER_PACKET}&tab={slug}")
    wait_view(page, MARKER_PACKET, slug)
    assert page.evaluate("document.documentElement.scrollWidth") <= FIRST_SCREEN["width"]
