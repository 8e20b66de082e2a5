"""Early actions while the page loads are never lost, over LOADS loads, within and across modes.

Each load opens a link naming a packet, a tab and a head (the URL parameters); as soon as the page shows
them, it clicks another tab, and on every other load first another packet in the list, before the first view
is drawn. Every load must end showing what was asked last: the packet, the tab, its view drawn, the tab
label marked open, and the address bar saying so. Across modes: a packet row then a campaign button at once
ends on the campaign; a grid cell clicked as soon as the grid is drawn ends on that cell's pair.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.export.browser import wait_drawn
from explorer.samples.campaigns import BACKENDS, CURATED_NAME, CURATED_SHAPE, OUTPUT_INDEX
from explorer.ui import catalog
from explorer.views import VIEWS
from explorer.views.campaign.view import GRID_CLASS

from app_support import APP_PATH, CELL_POINT_JS, PAGE_TIMEOUT_MS, VIEWPORT, click_tab, packet_cell, wait_view

pytestmark = pytest.mark.browser

LOADS = 20
FIRST_PACKET, OTHER_PACKET = "injected-error-head5", "clean-fp32q-bf16kv"  # both on the list's first page
LINK_HEAD = 3
# The views that draw from the analysis alone: Attention and Emulations compute when opened, which would only make
# each load longer (a lost action is the shell's, whichever view it asks for).
SLUGS = [slug for slug, _, _ in VIEWS if slug not in ("attention", "emulations")]
ADDRESS_WAIT_MS = 30_000


def _address(page) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlparse(page.url).query).items()}


def _load(context, server: str, load: int) -> tuple[dict, float]:
    """One page load (a page of its own) with its early actions; returns (what the page ends showing, seconds from
    navigation to the last click)."""
    link_tab = SLUGS[load % len(SLUGS)]
    clicked_tab = SLUGS[(load + 1 + load // len(SLUGS)) % len(SLUGS)]
    switch = load % 2 == 1
    page = context.new_page()
    try:
        started = time.perf_counter()
        page.goto(f"{server}{APP_PATH}?packet={FIRST_PACKET}&tab={link_tab}&head={LINK_HEAD}", wait_until="commit")
        if switch:
            packet_cell(page, OTHER_PACKET).click()
        click_tab(page, clicked_tab)
        clicked = time.perf_counter() - started
        packet = OTHER_PACKET if switch else FIRST_PACKET
        wait_view(page, packet, clicked_tab)
        page.wait_for_function(
            "(tab) => new URLSearchParams(location.search).get('tab') === tab", arg=clicked_tab, timeout=ADDRESS_WAIT_MS
        )
        shown = {
            "packet": page.locator(".status-line").get_attribute("data-packet"),
            "label": page.locator(".view-tab.active").get_attribute("data-tab"),
            "views": page.locator("[class*='view-built-']").count(),
            "address": _address(page),
        }
        return shown, clicked
    finally:
        page.close()


@pytest.fixture
def context(browser):
    """One browser context for a test's loads, each load a page of its own (the scripts parsed once, not per load)."""
    context = browser.new_context(viewport=VIEWPORT)
    yield context
    context.close()


def test_no_early_action_is_lost_over_twenty_loads(context, server):
    lost, seconds = [], []
    for load in range(LOADS):
        switch = load % 2 == 1
        clicked_tab = SLUGS[(load + 1 + load // len(SLUGS)) % len(SLUGS)]
        packet = OTHER_PACKET if switch else FIRST_PACKET
        shown, clicked = _load(context, server, load)
        seconds.append(clicked)
        address = shown["address"]
        expected = {"packet": packet, "label": clicked_tab, "views": 1}
        if {key: shown[key] for key in expected} != expected or (address["packet"], address["tab"]) != (
            packet,
            clicked_tab,
        ):
            lost.append((load, shown))
        if not switch and address.get("head") != str(LINK_HEAD):  # the link's head stays until a packet switch
            lost.append((load, shown))
    assert not lost, lost
    # Where the clicks landed: the last click's time after navigation, for the record (not a limit).
    print(f"last early click after navigation: median {sorted(seconds)[LOADS // 2]:.2f} s, max {max(seconds):.2f} s")


@pytest.fixture(scope="module")
def campaign():
    report = build_campaign_report(run_campaigns(catalog.default_root() / CURATED_NAME, jobs=1))
    return report["campaigns"][0]


def _waited(wait, *args, **options) -> bool:
    """True when `wait(*args, **options)` saw what it waits for, False when it never came."""
    try:
        wait(*args, **options)
    except PlaywrightTimeout:
        return False
    return True


def _row_then_campaign(context, server: str, ident: str) -> dict | None:
    """One load: a packet row, then at once a campaign button; None when it ends on the campaign, else the address."""
    page = context.new_page()
    try:
        page.goto(f"{server}{APP_PATH}?packet={FIRST_PACKET}", wait_until="commit")
        packet_cell(page, OTHER_PACKET).click()
        page.locator(f".campaign-{ident} button").click()
        # the row's packet shown first (opening it would close a campaign opened meanwhile), then the grid
        ended = (
            _waited(
                page.locator(f".status-line[data-packet='{OTHER_PACKET}']").wait_for,
                state="attached",  # hidden once the grid shows: its header names the campaign
                timeout=PAGE_TIMEOUT_MS,
            )
            and _waited(
                page.wait_for_function,
                "(id) => new URLSearchParams(location.search).get('campaign') === id",
                arg=ident,
                timeout=ADDRESS_WAIT_MS,
            )
            and _waited(
                page.locator(f".campaign-status-line[data-campaign='{ident}']").wait_for, timeout=PAGE_TIMEOUT_MS
            )
        )
        return None if ended and page.locator(".campaign-area").first.is_visible() else _address(page)
    finally:
        page.close()


def test_a_campaign_chosen_right_after_a_packet_row_is_where_every_load_ends(context, server, campaign):
    outcomes = [_row_then_campaign(context, server, campaign["id"]) for _ in range(LOADS)]
    lost = [(load, address) for load, address in enumerate(outcomes) if address is not None]
    assert not lost, lost


def _cell_at_once(context, server: str, campaign: dict) -> dict | None:
    """One load: the grid, its origin cell clicked as soon as it is drawn; None when it ends on the cell's pair."""
    step, layer = CURATED_SHAPE.origin
    a, b = (f"{CURATED_NAME}/{backend}-o{OUTPUT_INDEX + step}-l{layer}" for backend in BACKENDS)
    page = context.new_page()
    try:
        page.goto(f"{server}{APP_PATH}?campaign={campaign['id']}", wait_until="commit")
        wait_drawn(page, GRID_CLASS, PAGE_TIMEOUT_MS)
        point = {"cssClass": GRID_CLASS, "x": step, "y": campaign["coverage"]["layers"].index(layer)}
        page.mouse.click(*page.evaluate(CELL_POINT_JS, point))
        pair = page.locator(f".pair-status-line[data-a='{a}'][data-b='{b}']")
        cell = f"cell={OUTPUT_INDEX + step}%2C{layer}"
        ended = _waited(pair.wait_for, timeout=PAGE_TIMEOUT_MS) and _waited(
            page.wait_for_url, lambda url: cell in url, timeout=ADDRESS_WAIT_MS
        )
        return None if ended and pair.first.is_visible() else _address(page)
    finally:
        page.close()


def test_a_grid_cell_clicked_as_soon_as_the_grid_is_drawn_opens_its_pair_on_every_load(context, server, campaign):
    outcomes = [_cell_at_once(context, server, campaign) for _ in range(LOADS)]
    lost = [(load, address) for load, address in enumerate(outcomes) if address is not None]
    assert not lost, lost
