"""An action taken while the page is still loading is never lost, over LOADS page loads.

Each load opens a link naming a packet, a tab and a head (the URL parameters); as soon as the page shows
them, it clicks another tab, and on every other load first another packet in the list, before the first view
is drawn. Every load must end showing what was asked last: the packet, the tab, its view drawn, the tab
label marked open, and the address bar saying so.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlparse

import pytest

from explorer.views import VIEWS

from app_support import APP_PATH, VIEWPORT, click_tab, packet_cell, wait_view

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


def _load(browser, server: str, load: int) -> tuple[dict, float]:
    """One page load with its early actions; returns (what the page ends showing, seconds from navigation to the
    last click)."""
    link_tab = SLUGS[load % len(SLUGS)]
    clicked_tab = SLUGS[(load + 1 + load // len(SLUGS)) % len(SLUGS)]
    switch = load % 2 == 1
    context = browser.new_context(viewport=VIEWPORT)
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
        context.close()


def test_no_early_action_is_lost_over_twenty_loads(browser, server):
    lost, seconds = [], []
    for load in range(LOADS):
        switch = load % 2 == 1
        clicked_tab = SLUGS[(load + 1 + load // len(SLUGS)) % len(SLUGS)]
        packet = OTHER_PACKET if switch else FIRST_PACKET
        shown, clicked = _load(browser, server, load)
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
