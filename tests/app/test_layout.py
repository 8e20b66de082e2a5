"""Every tab of an analyzed, an inconclusive and a refused sample at 1280 and 1920 px.

No canvas past its column or the viewport, no two visible boxes overlapping, no text cut by its box.
"""

from __future__ import annotations

import pytest

from explorer.views import VIEWS

from app_support import PAGE_TIMEOUT_MS, artifact, click_tab, layout_offenders, open_packet, wait_view

WIDTHS = (1280, 1920)
HEIGHT = 900
SAMPLES = ("injected-error-head5", "nan-stored-values", "refused-hash-mismatch")  # analyzed, inconclusive, refused


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("sample", SAMPLES)
def test_no_tab_clips_or_overlaps(browser, server, sample, width):
    context = browser.new_context(viewport={"width": width, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    offenders = {}
    try:
        open_packet(page, server, f"?packet={sample}&tab={VIEWS[0][0]}")
        for slug, _, _ in VIEWS:  # one page, each tab clicked: a page load per tab was most of the test's time
            click_tab(page, slug)
            wait_view(page, sample, slug)
            found = layout_offenders(page)
            assert found["leaves"] > 0, slug
            problems = found["overlaps"] + found["outside"] + found["clipped"]
            if problems:  # the evidence of a failure only: a full-page PNG per tab is most of the test's time
                page.screenshot(path=artifact(f"layout-{width}-{sample}-{slug}.png"), full_page=True)
                offenders[slug] = problems
        assert page.evaluate("document.documentElement.scrollHeight") > HEIGHT  # the page scrolls, not a pane
    finally:
        context.close()
    assert offenders == {}
