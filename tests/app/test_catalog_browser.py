"""The packet list at scale in chromium.

A root larger than one page says "showing N of M" and pages through its rows (the browser holds one page),
search reaches any packet, a packet added later appears on reload.
"""

from __future__ import annotations

import os

import pytest

from explorer.catalog.discovery import ROOT_ENV, discover
from explorer.catalog.summary import list_order, summarize
from explorer.samples.packets import injected_error_spec, synthetic_spec, write_packet
from explorer.ui.packets import PAGE_ROWS

from app_support import (
    APP_PATH,
    PAGE_TIMEOUT_MS,
    artifact,
    choose_packet,
    deep_text,
    outside_requests,
    packet_cell,
    serve_app,
    wait_statuses,
)

PACKETS = 3 * PAGE_ROWS + 5
LATE_PACKET = "zz-added-after-startup"


@pytest.fixture(scope="module")
def large_root(tmp_path_factory):
    """More packets than one page of the list, two levels deep in part, one with a visibly large error."""
    root = tmp_path_factory.mktemp("large-root")
    for index in range(PACKETS - 1):
        group = root / f"group-{index % 3}" if index % 2 else root
        write_packet(group / f"packet-{index:03d}", synthetic_spec(seed=index))
    write_packet(root / "packet-injected", injected_error_spec())
    return root


@pytest.fixture(scope="module")
def large_server(large_root, export_dir):
    yield from serve_app("panel-serve-large.log", {**os.environ, ROOT_ENV: str(large_root)}, export_dir)


def _count_text(page) -> str:
    return deep_text(page.locator(".packet-count-text")).strip()


def test_a_root_larger_than_the_list_says_showing_n_of_m_and_opens_the_first_by_ratio(
    page, large_server, large_root, requested
):
    page.goto(large_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(".packet-row", timeout=PAGE_TIMEOUT_MS)
    assert f"showing {PAGE_ROWS} of {PACKETS}" in _count_text(page)
    wait_statuses(page)
    names = [entry.name for entry in discover(large_root)]
    first = min(names, key=lambda name: list_order(name, summarize(large_root / name)))
    assert first == "packet-injected"
    page.wait_for_selector(f".status-line[data-packet='{first}']", timeout=PAGE_TIMEOUT_MS)
    assert page.locator(".packet-row").count() == PAGE_ROWS
    assert packet_cell(page, first).is_visible()  # the default order: analyzed, largest ratio first
    page.screenshot(path=artifact("large-root.png"), full_page=True)
    assert outside_requests(requested) == []


def _names_shown(page) -> list[str]:
    return [text.strip() for text in page.locator(".packet-cell[data-field='packet']").all_inner_texts()]


def test_the_pager_walks_every_page_and_stops_at_both_ends(page, large_server):
    page.goto(large_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    pages = -(-PACKETS // PAGE_ROWS)
    previous, place, following = (
        page.locator(f".packet-pager .{name}") for name in ("packet-previous", "packet-page", "packet-next")
    )
    assert place.inner_text() == f"page 1 of {pages}" and previous.is_disabled() and following.is_enabled()
    seen = _names_shown(page)
    for number in range(2, pages + 1):
        following.click()
        place.filter(has_text=f"page {number} of {pages}").wait_for(timeout=PAGE_TIMEOUT_MS)
        seen += _names_shown(page)
        assert page.locator(".packet-row").count() == min(PAGE_ROWS, PACKETS - (number - 1) * PAGE_ROWS)
    assert following.is_disabled() and previous.is_enabled()
    assert len(seen) == PACKETS and len(set(seen)) == PACKETS  # every packet once, one page at a time
    previous.click()
    place.filter(has_text=f"page {pages - 1} of {pages}").wait_for(timeout=PAGE_TIMEOUT_MS)


def test_search_finds_a_packet_beyond_the_first_page_and_opens_it(page, large_server, large_root):
    page.goto(large_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    on_first_page = {deep_text(cell).strip() for cell in page.locator(".packet-cell[data-field='packet']").all()}
    target = next(entry.name for entry in reversed(discover(large_root)) if entry.name not in on_first_page)
    page.locator(".packet-search input").fill(target)
    page.locator(".packet-count-text", has_text="showing 1 of 1 matching").wait_for(timeout=PAGE_TIMEOUT_MS)
    packet_cell(page, target).wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    packet_cell(page, target).click()
    page.wait_for_selector(f".status-line[data-packet='{target}']", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_url(lambda url: "packet=" in url, timeout=PAGE_TIMEOUT_MS)
    assert (
        page.locator(f".status-line[data-packet='{target}'] .status-badge").get_attribute("data-status")
        == summarize(large_root / target).status
    )


def test_a_packet_added_after_startup_appears_on_reload(page, large_server, large_root):
    page.goto(large_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(".packet-row", timeout=PAGE_TIMEOUT_MS)
    assert f"{PACKETS} packets" in _count_text(page)
    write_packet(large_root / LATE_PACKET, synthetic_spec(seed=999))
    try:
        page.reload(timeout=PAGE_TIMEOUT_MS)
        page.wait_for_selector(".packet-row", timeout=PAGE_TIMEOUT_MS)
        assert f"{PACKETS + 1} packets" in _count_text(page)
        wait_statuses(page)
        choose_packet(page, LATE_PACKET)
    finally:
        for path in sorted((large_root / LATE_PACKET).iterdir()):
            path.unlink()
        (large_root / LATE_PACKET).rmdir()
