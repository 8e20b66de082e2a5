"""Exports from the served app: concurrent sessions, a page closed mid-update.

Exports from the served app: three sessions exporting at once all get theirs; a page closed mid-update, no traceback."""

from __future__ import annotations

import time

from app_support import ARTIFACTS, PAGE_TIMEOUT_MS, VIEWPORT, open_packet

PACKET = "refused-hash-mismatch"  # its export renders one PNG: the test is about three exports at once
SESSIONS = 3
EXPORT_TIMEOUT_MS = 300_000  # three exports on a contended 2-core machine, one rendering at a time
SERVER_LOG = ARTIFACTS / "panel-serve.log"  # the `server` fixture's log (app_support.serve_app)
SETTLE_S = 3


def _pages(browser, server, count):
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(count)]
    pages = []
    for context in contexts:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        open_packet(page, server, f"?packet={PACKET}")
        pages.append(page)
    return contexts, pages


def _htmls(export_dir) -> set[str]:
    return {path.name for path in export_dir.glob(f"{PACKET}*.html")}


def test_three_sessions_exporting_one_packet_at_once_each_get_their_export(browser, server, export_dir):
    before = _htmls(export_dir)
    contexts, pages = _pages(browser, server, SESSIONS)
    try:
        for page in pages:
            page.locator(".packet-export button").click()
        notes = []
        for page in pages:
            note = page.locator(".export-note")
            note.wait_for(state="visible", timeout=EXPORT_TIMEOUT_MS)
            notes.append(note.locator(".export-html").inner_text().strip())
    finally:
        for context in contexts:
            context.close()
    written = _htmls(export_dir) - before
    assert len(written) == SESSIONS and len(set(notes)) == SESSIONS  # every export, each under its own name
    assert {note.rsplit("/", 1)[-1] for note in notes} == written
    for name in written:
        stem = name.removesuffix(".html")
        assert (export_dir / f"{stem}.report.json").is_file() and (export_dir / f"{stem}-summary.png").is_file()


def test_a_page_closed_while_its_export_runs_leaves_no_traceback_in_the_server_log(browser, server, export_dir):
    before, mark = _htmls(export_dir), SERVER_LOG.stat().st_size
    contexts, pages = _pages(browser, server, 1)
    pages[0].locator(".packet-export button").click()
    pages[0].wait_for_timeout(500)
    contexts[0].close()  # the export goes on; its answer meets a closed page
    deadline = time.monotonic() + EXPORT_TIMEOUT_MS / 1000
    while not (_htmls(export_dir) - before) and time.monotonic() < deadline:
        time.sleep(1)
    assert _htmls(export_dir) - before, "the export of the closed page was still written"
    time.sleep(SETTLE_S)  # the answer's update reaches the closed session
    with open(SERVER_LOG, encoding="utf-8", errors="replace") as log:
        log.seek(mark)
        added = log.read()
    assert "Traceback" not in added and "Task exception was never retrieved" not in added, added[-3000:]
