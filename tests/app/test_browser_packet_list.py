"""The packet list in chromium: sorting, the default order, paging and a root being written.

The packet list in chromium: every column sorts both ways, the default order puts refused and inconclusive
first then the largest score, the columns fit the sidebar at 1280 px, and packets written or deleted under the
root while the page is open appear and disappear without a reload.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import time

import pytest

from explorer.catalog.discovery import ROOT_ENV
from explorer.catalog.summary import summarize
from explorer.samples.packets import injected_error_spec, synthetic_spec, write_packet, write_refused
from explorer.ui.packets import LIST_ORDER, NUMBER_COLUMNS, RESCAN_MS

from app_support import (
    APP_PATH,
    ARTIFACTS,
    PAGE_TIMEOUT_MS,
    POLL_INTERVAL_S,
    artifact,
    packet_cell,
    serve_app,
    wait_statuses,
)

# A rescan starts every RESCAN_MS and checks the new packet (a few hundred ms); the list shows it on the next flush.
WITHIN_MS = 3 * RESCAN_MS
NARROW = {"width": 1280, "height": 800}
LIVE_LOG = "panel-serve-live.log"
HOSTILE_NAME = "<img src=x onerror=\"window.hostile=1\">&amp; 'q'"  # a directory name is text, never HTML
MAX_TABS = 40  # Tab presses from the search box through the headers to any row of the first page
FOCUSED_JS = """() => {
  let el = document.activeElement
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement
  return el ? [el.className, el.textContent] : null
}"""
# A header's sort arrow shares no pixel with any line of its title (a title may wrap) and stays inside its column.
ARROW_BESIDE_JS = """(header) => {
  const arrow = header.querySelector(".packet-sort-arrow").getBoundingClientRect()
  const lines = [...header.querySelector(".packet-header-title").getClientRects()]
  const across = (a0, a1, b0, b1) => Math.min(a1, b1) - Math.max(a0, b0) > 1
  const over = lines.some(
    (r) => across(r.left, r.right, arrow.left, arrow.right) && across(r.top, r.bottom, arrow.top, arrow.bottom)
  )
  return arrow.width > 0 && !over && arrow.right <= header.getBoundingClientRect().right + 1
}"""


@pytest.fixture(scope="module")
def live_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("live-root")
    write_packet(root / "injected", injected_error_spec())
    write_packet(root / "plain", synthetic_spec(seed=1))
    write_refused(root / "refused")
    write_refused(root / HOSTILE_NAME)
    return root


@pytest.fixture(scope="module")
def live_server(live_root, export_dir):
    yield from serve_app(LIVE_LOG, {**os.environ, ROOT_ENV: str(live_root)}, export_dir)


def _column(page, field: str) -> list[str]:
    return page.locator(f".packet-cell[data-field='{field}']").all_inner_texts()


def _numbers(texts: list[str]) -> list[float]:
    return [float(text) for text in texts if text.strip()]


def _wait_sorted(page, field: str, previous: list[str]) -> list[float]:
    """The column's numbers once they differ from `previous` and run one way (the server's sorted page arrived)."""
    deadline = time.monotonic() + PAGE_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        texts = _column(page, field)
        values = _numbers(texts)
        if texts != previous and values in (sorted(values), sorted(values, reverse=True)):
            return values
        time.sleep(POLL_INTERVAL_S)
    raise AssertionError(f"the {field} column did not sort: {texts}")


def test_the_default_order_and_sorting_each_numeric_column_both_ways(page, server):
    page.goto(server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    statuses = [badge.get_attribute("data-status") for badge in page.locator(".packet-badge").all()]
    ranks = [LIST_ORDER.index(status) for status in statuses]
    assert ranks == sorted(ranks) and statuses[0] == "analyzed"  # triage's order: analyzed first
    analyzed = [
        float(text) for status, text in zip(statuses, _column(page, "score"), strict=True) if status == "analyzed"
    ]
    assert analyzed == sorted(analyzed, reverse=True)  # then the largest score first
    for field in NUMBER_COLUMNS:
        seen = []
        for _ in range(2):  # the first click sorts one way, the second the other
            previous = _column(page, field)
            page.locator(f".packet-header[data-field='{field}'] .packet-header-title").click()
            seen.append(_wait_sorted(page, field, previous))
            sort = page.locator(f".packet-header[data-field='{field}']").get_attribute("data-sort")
            assert sort == ("ascending" if seen[-1] == sorted(seen[-1]) else "descending")
        ascending, descending = sorted(seen, key=lambda values: values[0])
        assert len(ascending) >= 2 and all(math.isfinite(v) for v in ascending + descending)
        assert ascending == sorted(ascending) and descending == sorted(descending, reverse=True), field
        assert sorted(ascending) == sorted(descending)


def test_the_columns_fit_the_sidebar_at_1280_px(browser, server):
    context = browser.new_context(viewport=NARROW)
    page = context.new_page()
    try:
        page.goto(server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
        wait_statuses(page)
        page.screenshot(path=artifact("packet-list-1280.png"))
        table = page.locator(".packet-table .packet-rows").bounding_box()
        for header in page.locator(".packet-header").all():
            if header.is_visible():
                box = header.bounding_box()
                assert box["x"] >= table["x"] - 1 and box["x"] + box["width"] <= table["x"] + table["width"] + 1
        page.locator(".packet-header[data-field='worst ULP'] .packet-header-title").click()  # the last column's arrow
        page.wait_for_selector(".packet-header[data-field='worst ULP'][data-sort='ascending']", timeout=PAGE_TIMEOUT_MS)
        for header in page.locator(".packet-header").all():
            assert header.evaluate(ARROW_BESIDE_JS), header.get_attribute("data-field")
            box = header.bounding_box()
            assert box["x"] + box["width"] <= table["x"] + table["width"] + 1
        for cell in page.locator(".packet-cell, .packet-header").all():  # nothing cut off inside its cell
            assert cell.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1"), cell.inner_text()
    finally:
        context.close()


def test_a_packet_written_and_one_deleted_after_the_page_opened_show_without_a_reload(page, live_server, live_root):
    page.goto(live_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    packet_cell(page, "plain").wait_for(state="visible")
    marker = page.evaluate("() => { window.notReloaded = true; return window.notReloaded }")
    write_packet(live_root / "late", synthetic_spec(seed=9))
    shutil.rmtree(live_root / "plain")
    packet_cell(page, "late").wait_for(state="visible", timeout=WITHIN_MS)
    packet_cell(page, "plain").wait_for(state="detached", timeout=WITHIN_MS)
    row = page.locator(".packet-row[data-name='late']")
    row.locator(f".packet-badge[data-status='{summarize(live_root / 'late').status}']").wait_for(timeout=WITHIN_MS)
    assert marker and page.evaluate("() => window.notReloaded === true")  # the same page, never reloaded


def _focused(page) -> list[str] | None:
    """[class, text] of the element holding the keyboard focus, inside shadow roots too."""
    return page.evaluate(FOCUSED_JS)


def test_a_packet_is_chosen_with_the_keyboard_and_the_page_holds_no_tabulator(page, server):
    page.goto(server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    opened = page.locator(".status-line").get_attribute("data-packet")
    page.locator(f".packet-row.packet-row-open[data-name='{opened}']").wait_for(timeout=PAGE_TIMEOUT_MS)
    assert page.locator(".tabulator").count() == 0 and page.locator(".packet-row-open").count() == 1
    target = next(name for name in _column(page, "packet") if name != opened)
    page.locator(".packet-search input").focus()
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if _focused(page) == ["packet-name", target]:
            break
    assert _focused(page) == ["packet-name", target]
    page.keyboard.press("Enter")
    page.wait_for_selector(f".status-line[data-packet='{target}']", timeout=PAGE_TIMEOUT_MS)
    page.locator(f".packet-row.packet-row-open[data-name='{target}']").wait_for(timeout=PAGE_TIMEOUT_MS)
    assert page.locator(".packet-row-open").count() == 1
    assert _focused(page) == ["packet-name", target]  # the redrawn page keeps the focus on the chosen name


def test_a_name_that_looks_like_html_is_shown_as_its_text(page, live_server):
    page.goto(live_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    page.locator(".packet-search input").fill("onerror")  # the hostile row on the page shown, whatever its place
    page.locator(".packet-count-text", has_text="showing 1 of").wait_for(timeout=PAGE_TIMEOUT_MS)
    packet_cell(page, HOSTILE_NAME).wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    assert page.locator(".packet-row").count() == 1
    assert page.locator(".packet-table img").count() == 0 and page.evaluate("() => window.hostile === undefined")
    row = page.locator(".packet-row", has=packet_cell(page, HOSTILE_NAME))
    assert row.get_attribute("data-name") == HOSTILE_NAME
    assert row.locator(".packet-badge[data-status='refused']").count() == 1  # the server's badge is HTML


def test_the_server_logs_each_sessions_timings_once(page, live_server):
    page.goto(live_server + APP_PATH, timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(".status-line", timeout=PAGE_TIMEOUT_MS)
    log = (ARTIFACTS / LIVE_LOG).read_text()
    built = re.findall(r"session (\S+): document built [0-9.]+ s after the page request", log)
    pushed = re.findall(
        r"session (\S+): status line of '[^']+' (?:sent with the document|pushed to the open page) "
        r"[0-9.]+ s after the page request",
        log,
    )
    assert built and sorted(built) == sorted(set(built)) and set(pushed) <= set(built)
