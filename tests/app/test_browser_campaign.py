"""The served app's Campaign view in Debian's chromium.

The served app's Campaign view in Debian's chromium: listed in the sidebar, the grid drawn with the origin sentence
above it, a click on a cell opens that cell's pair (campaign= and cell= in the URL), `cell=` opens a pair directly,
and the first screen fits 1280 x 800 (also for 32 layers x 16 steps, by the grid's own sizing); from a cell's pair the
way back to the grid and the browser's Back both return to it, a missing cell answered beside the grid."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.export.browser import wait_drawn
from explorer.samples.campaigns import BACKENDS, CURATED_NAME, CURATED_SHAPE, OUTPUT_INDEX
from explorer.ui import catalog
from explorer.views.campaign.view import GRID_CLASS, grid_size

from app_support import APP_PATH, CELL_POINT_JS, PAGE_TIMEOUT_MS, artifact, deep_text, open_packet, outside_requests

ROOT = catalog.default_root()
FIRST_SCREEN = {"width": 1280, "height": 800}
LARGEST_FIRST_SCREEN = (16, 32)  # steps x layers the first screen holds


@pytest.fixture(scope="module")
def campaign():
    report = build_campaign_report(run_campaigns(ROOT / CURATED_NAME, jobs=1))
    return report["campaigns"][0]


def _query(page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}


def _open_campaign(page, server, campaign, query=""):
    """Open the app on the campaign; wait for the status line (of a cell's pair) or the grid's own header."""
    page.goto(f"{server}{APP_PATH}?campaign={campaign['id']}{query}", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(".status-line:visible, .campaign-status-line:visible", timeout=PAGE_TIMEOUT_MS)


def _wait_grid(page, campaign):
    page.wait_for_selector(f".campaign-status-line[data-campaign='{campaign['id']}']", timeout=PAGE_TIMEOUT_MS)
    wait_drawn(page, GRID_CLASS, PAGE_TIMEOUT_MS)


def test_the_grid_is_listed_drawn_fits_the_first_screen_and_a_click_opens_the_pair(browser, server, campaign):
    context = browser.new_context(viewport=FIRST_SCREEN)
    page = context.new_page()
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    try:
        _open_campaign(page, server, campaign)
        _wait_grid(page, campaign)
        page.wait_for_selector(".campaign-button", timeout=PAGE_TIMEOUT_MS)
        assert any("synthetic campaign" in label for label in page.locator(".campaign-button button").all_inner_texts())
        origin = page.locator(f".campaign-origin[data-campaign='{campaign['id']}']").first
        assert deep_text(origin).strip() == campaign["originSentence"]
        page.screenshot(path=artifact("campaign-first-screen-1280x800.png"))
        grid = page.locator(f".{GRID_CLASS}").first.bounding_box()
        assert (
            grid["y"] + grid["height"] <= FIRST_SCREEN["height"] and grid["x"] + grid["width"] <= FIRST_SCREEN["width"]
        )
        # the largest grid of the first screen: the same top left, the grid's own size for 16 steps x 32 layers
        width, height = grid_size(*LARGEST_FIRST_SCREEN)
        assert grid["y"] + height <= FIRST_SCREEN["height"] and grid["x"] + width <= FIRST_SCREEN["width"]
        assert page.locator(".packet-badge").count() > 0  # the sidebar's packet list is still there
        step, layer = CURATED_SHAPE.origin
        column, row = step, campaign["coverage"]["layers"].index(layer)
        x, y = page.evaluate(CELL_POINT_JS, {"cssClass": GRID_CLASS, "x": column, "y": row})
        page.mouse.click(x, y)
        names = {backend: f"{CURATED_NAME}/{backend}-o{OUTPUT_INDEX + step}-l{layer}" for backend in BACKENDS}
        page.wait_for_selector(
            f".pair-status-line[data-a='{names[BACKENDS[0]]}'][data-b='{names[BACKENDS[1]]}']", timeout=PAGE_TIMEOUT_MS
        )
        page.wait_for_url(lambda url: "cell=" in url, timeout=PAGE_TIMEOUT_MS)
        query = _query(page)
        assert (query["campaign"], query["cell"]) == (campaign["id"], f"{OUTPUT_INDEX + step},{layer}")
        assert (query["packet"], query["compare"]) == (names[BACKENDS[0]], names[BACKENDS[1]])
        assert not page.locator(".campaign-area").first.is_visible()
        page.screenshot(path=artifact("campaign-origin-pair-1280x800.png"))
        assert outside_requests(requested) == []
    finally:
        context.close()


def test_cell_in_the_url_opens_that_pair_and_unknown_values_are_noted(page, server, campaign):
    _open_campaign(page, server, campaign, f"&cell={OUTPUT_INDEX},1")
    a, b = (f"{CURATED_NAME}/{backend}-o{OUTPUT_INDEX}-l1" for backend in BACKENDS)
    page.wait_for_selector(f".pair-status-line[data-a='{a}'][data-b='{b}']", timeout=PAGE_TIMEOUT_MS)
    open_packet(page, server, "?campaign=c000000000000")
    page.wait_for_selector(".shell-message", timeout=PAGE_TIMEOUT_MS)
    assert "is not listed under this root" in deep_text(page.locator(".shell-message").first)
    missing_step, missing_layer = CURATED_SHAPE.missing
    _open_campaign(page, server, campaign, f"&cell={OUTPUT_INDEX + missing_step},{missing_layer}")
    page.wait_for_selector(".shell-message", timeout=PAGE_TIMEOUT_MS)
    assert "missing: it has no pair to open" in deep_text(page.locator(".shell-message").first)


def test_back_from_a_cell_returns_to_the_grid_and_a_missing_cell_is_answered_beside_it(page, server, campaign):
    step, layer = CURATED_SHAPE.origin
    _open_campaign(page, server, campaign)
    _wait_grid(page, campaign)
    assert not page.locator(".status-line").first.is_visible()  # the header names the campaign, not a packet
    assert "Campaign of request" in deep_text(page.locator(".campaign-status-line").first)
    grid_url = page.url
    point = {"cssClass": GRID_CLASS, "x": step, "y": campaign["coverage"]["layers"].index(layer)}
    page.mouse.click(*page.evaluate(CELL_POINT_JS, point))
    page.wait_for_url(lambda url: "cell=" in url, timeout=PAGE_TIMEOUT_MS)
    page.locator(".campaign-back button").click()  # Back to the campaign grid
    _wait_grid(page, campaign)
    page.wait_for_url(lambda url: "cell=" not in url and f"campaign={campaign['id']}" in url, timeout=PAGE_TIMEOUT_MS)
    shown = []  # every URL the page shows from here on (the app rewrites the entry Back went to, at most once)
    page.on("framenavigated", lambda frame: shown.append(frame.url) if frame == page.main_frame else None)
    page.go_back()  # the browser's Back: the cell's pair again, with the way back to its grid
    page.wait_for_selector(".pair-status-line", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(f".campaign-back-line[data-campaign='{campaign['id']}']", timeout=PAGE_TIMEOUT_MS)
    assert "cell=" in page.url and all("cell=" in url for url in shown), shown
    page.go_back()  # and the grid before it
    _wait_grid(page, campaign)
    assert _query(page)["campaign"] == campaign["id"] and "cell" not in _query(page)
    assert urlparse(page.url).path == urlparse(grid_url).path
    missing_step, missing_layer = CURATED_SHAPE.missing
    column, row = missing_step, campaign["coverage"]["layers"].index(missing_layer)
    page.mouse.click(*page.evaluate(CELL_POINT_JS, {"cssClass": GRID_CLASS, "x": column, "y": row}))
    page.wait_for_selector(".campaign-cell-problem", timeout=PAGE_TIMEOUT_MS)
    assert "missing: it has no pair to open" in deep_text(page.locator(".campaign-cell-problem").first)
    assert page.locator(".campaign-problem").count() == 0  # not in the sidebar
