"""The first screen at 1280 x 800.

The first screen at 1280 x 800: every tab and overview cell in view, head labels, nonfinite maps, the top bar.

Also: a click on a map cell leaves the map where it was, markers never overlap, no tab widens the page.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from explorer.export.browser import FIND_VIEW_JS
from explorer.views import VIEWS

from app_support import MIN_PIXEL_STD, PAGE_TIMEOUT_MS, artifact, open_packet, pixel_std, wait_view

FIRST_SCREEN = {"width": 1280, "height": 800}
OVERVIEW_PACKETS = ("injected-error-head5", "qwen36-bf16-t64")  # float32 output with a chart; 16 heads, bfloat16
MARKER_PACKET = "injected-error-head5"  # head 5: the primary and the counterfactual nearly equal, far above the rest
WIDE_TABS = ("summary", "raw", "errors", "attention")
NONFINITE_PACKET = "nan-stored-values"  # NaN in storedValues and in the output
HEADER_RGB = (0x2F, 0x3E, 0x4E)  # the app's top bar (app.HEADER_BACKGROUND)
# The tick values of the y axis of the first figure inside the view carrying a CSS class (a Bokeh model's own).
Y_TICKS_JS = f"""(cssClass) => {{
  {FIND_VIEW_JS}
  const figure = (view) => {{
    if (view.model.left !== undefined && view.model.left.length) return view
    for (const child of view.children()) {{ const found = figure(child); if (found !== null) return found }}
    return null
  }}
  const found = figure(findView(cssClass))
  return Array.from(found.model.left[0].ticker.ticks)
}}"""


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
            boxes.append(
                (
                    point.get_attribute("data-series"),
                    point.get_attribute("data-head"),
                    box["x"],
                    box["y"],
                    box["x"] + box["width"],
                    box["y"] + box["height"],
                )
            )
        assert boxes, slug
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                apart = a[4] <= b[2] or b[4] <= a[2] or a[5] <= b[3] or b[5] <= a[3]
                assert apart, f"{slug}: {a} overlaps {b}"


@pytest.mark.parametrize("slug", WIDE_TABS)
def test_no_tab_widens_the_page_beyond_the_window(page, server, slug):
    _first_screen(page, server, f"?packet={MARKER_PACKET}&tab={slug}")
    wait_view(page, MARKER_PACKET, slug)
    assert page.evaluate("document.documentElement.scrollWidth") <= FIRST_SCREEN["width"]


def test_every_tab_is_in_view_at_1280_by_800(page, server):
    _first_screen(page, server, f"?packet={MARKER_PACKET}&tab=overview")
    wait_view(page, MARKER_PACKET, "overview")
    tabs = page.locator(".view-tab")
    assert tabs.count() == len(VIEWS)
    for index, (_, title, _) in enumerate(VIEWS):
        tab = tabs.nth(index)
        box = tab.bounding_box()
        assert tab.inner_text().strip() == title
        assert box["x"] >= 0 and box["x"] + box["width"] <= FIRST_SCREEN["width"], (title, box)
        assert box["y"] + box["height"] <= FIRST_SCREEN["height"], (title, box)
    tabs.nth(len(VIEWS) - 1).click()  # Raw, the last, is clickable where it is
    wait_view(page, MARKER_PACKET, VIEWS[-1][0])


@pytest.mark.parametrize("packet, heads", [("injected-error-head5", 8), ("qwen36-bf16-t64", 16)])
def test_the_overview_map_labels_every_head_and_names_the_largest_score_head(page, server, packet, heads):
    _first_screen(page, server, f"?packet={packet}&tab=overview")
    view = wait_view(page, packet, "overview")
    assert page.evaluate(Y_TICKS_JS, "overview-error-map") == list(range(heads))
    worst = view.locator(".overview-worst-head")
    assert "Largest score: query head" in worst.inner_text()
    box = worst.bounding_box()
    assert box["y"] + box["height"] <= FIRST_SCREEN["height"]  # in words, on the first screen
    if packet == MARKER_PACKET:
        assert "query head 5" in worst.inner_text()


def test_the_nonfinite_cell_draws_the_maps_of_the_tensors_holding_nan_side_by_side(page, server):
    _first_screen(page, server, f"?packet={NONFINITE_PACKET}&tab=overview")
    view = wait_view(page, NONFINITE_PACKET, "overview")
    canvases = view.locator(".overview-nonfinite-maps canvas")
    boxes = {}  # a figure may draw on several stacked canvases: one box per left edge
    for index in range(canvases.count()):
        box = canvases.nth(index).bounding_box()
        boxes.setdefault(round(box["x"]), (box, canvases.nth(index)))
    assert len(boxes) == 2, "storedValues and output, side by side"
    (left, left_canvas), (right, right_canvas) = (boxes[x] for x in sorted(boxes))
    assert abs(left["y"] - right["y"]) < 2 and left["x"] + left["width"] <= right["x"] + 1
    for box, canvas in ((left, left_canvas), (right, right_canvas)):
        assert box["y"] + box["height"] <= FIRST_SCREEN["height"]
        assert pixel_std(canvas.screenshot()) > MIN_PIXEL_STD / 4
    page.screenshot(path=artifact("first-screen-nonfinite-1280x800.png"))


def test_a_full_page_screenshot_after_scrolling_has_the_top_bar_only_at_the_top(page, server):
    _first_screen(page, server, f"?packet={MARKER_PACKET}&tab=errors")
    wait_view(page, MARKER_PACKET, "errors")
    page.mouse.wheel(0, 900)
    page.wait_for_timeout(500)
    png = page.screenshot(full_page=True)
    artifact("full-page-scrolled-errors.png").write_bytes(png)
    shot = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    bar_rows = np.flatnonzero((np.abs(shot - HEADER_RGB).sum(axis=2) < 12).mean(axis=1) > 0.5)
    assert bar_rows.size and bar_rows.min() == 0, "the top bar heads the page"
    assert bar_rows.max() < 100, f"the top bar is drawn again at row {bar_rows.max()}, over the content"
