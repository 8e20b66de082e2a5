"""Six browsers opening one uncomputed campaign of over 16 packets at once on a fresh server (41.2).

Each page must end on the campaign's grid with `campaign=` kept in its address, and no page may log that a
Bokeh reference is unknown (the dead pages that stayed "reading ..." with the query erased).
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

import pytest

from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.catalog.index import INLINE_PACKETS
from explorer.export.browser import wait_drawn
from explorer.samples.campaigns import SAMPLE_NAME, SAMPLE_SHAPE, write_campaign
from explorer.ui.catalog import ROOT_ENV
from explorer.views.campaign.view import GRID_CLASS

from app_support import APP_PATH, PAGE_TIMEOUT_MS, VIEWPORT, serve_app

pytestmark = pytest.mark.browser

SESSIONS = 6
# Six documents built one after another by one server interpreter, then the campaign in worker processes started
# afresh: on a loaded 2-core machine more than the usual page bound (a bound on the wait, not on the time it took).
BURST_TIMEOUT_MS = 4 * PAGE_TIMEOUT_MS
UNKNOWN_REFERENCE = "isn't known"  # BokehJS's console error for a model the page was never sent


@pytest.fixture(scope="module")
def burst_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("burst")
    write_campaign(root / SAMPLE_NAME, SAMPLE_SHAPE)
    return root


@pytest.fixture(scope="module")
def fresh_server(burst_root, export_dir):
    """A server of its own: nothing of the campaign is computed before the six pages ask for it."""
    yield from serve_app("panel-serve-burst.log", {**os.environ, ROOT_ENV: str(burst_root)}, export_dir)


def test_six_sessions_opening_one_uncomputed_campaign_each_end_on_its_grid(browser, fresh_server, burst_root):
    (campaign,) = build_campaign_report(run_campaigns(burst_root, jobs=1))["campaigns"]  # here, not in the server
    assert len(list((burst_root / SAMPLE_NAME).iterdir())) > INLINE_PACKETS  # the server computes it in workers
    ident = campaign["id"]
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(SESSIONS)]
    pages = [context.new_page() for context in contexts]
    logged: list[str] = []
    for page in pages:
        page.on("console", lambda message: logged.append(message.text))
    try:
        for page in pages:
            page.goto(f"{fresh_server}{APP_PATH}?campaign={ident}", wait_until="commit")
        for page in pages:
            page.wait_for_selector(f".campaign-status-line[data-campaign='{ident}']", timeout=BURST_TIMEOUT_MS)
            wait_drawn(page, GRID_CLASS, BURST_TIMEOUT_MS)
        addresses = [parse_qs(urlparse(page.url).query).get("campaign") for page in pages]
    finally:
        for context in contexts:
            context.close()
    assert addresses == [[ident]] * SESSIONS
    assert not [line for line in logged if UNKNOWN_REFERENCE in line], logged
