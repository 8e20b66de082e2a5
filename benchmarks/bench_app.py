"""Benchmark of the served app on the Qwen3.6-size packet in Debian's chromium.

Prints numbers only, asserts nothing, writes only a temp dir.

It writes the full-size all-bfloat16 packet (QH16/KVH2/D256/T5585) and one small
sample into a temporary root, starts `panel serve explorer/app.py --args --root
ROOT`, and for a cold server (first session: analysis not cached) and a warm one
prints: seconds from navigation (no `tab=`: the default view, the first of the
views registry) until the status line is shown and every plot of that tab is
drawn, with the bytes that crossed the websocket until then (both directions)
beside the HTML page and the static JS/CSS/font/image bytes; seconds and
websocket bytes of each other tab after its click; seconds to switch packets
(both ways) with each tab open, until the tab shows the new packet's view
drawn; and a navigation straight to the errors tab.
Targets on the 2-core machine: default view <= 2.5 s, tab switch <= 1 s,
packet switch <= 1.2 s. On a shared machine the numbers move with the load.

    python benchmarks/bench_app.py

Reuses the browser-test helpers of tests/app/app_support.py (server subprocess,
free port) and explorer.export.browser's drawn-view check.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "app"))

from explorer.export.browser import CHROMIUM, CHROMIUM_ARGS, DRAWN_JS  # noqa: E402
from explorer.samples.packets import CURATED, FULL_SAMPLE_NAME, qwen_full_spec, write_packet  # noqa: E402
from explorer.views import VIEWS  # noqa: E402

from app_support import (  # noqa: E402
    APP_PATH,
    LOCAL_HOST,
    OPEN_VIEW_JS,
    PAGE_TIMEOUT_MS,
    VIEWPORT,
    click_packet,
    click_tab,
    free_port,
    start_server,
    stop_server,
    wait_until_serving,
)

OTHER_SAMPLE = "clean-fp32q-bf16kv"
TITLES = {slug: title for slug, title, _ in VIEWS}
DEFAULT_TAB = VIEWS[0][0]  # what a link without tab= opens
DIRECT_TAB = "errors"  # also opened by a link straight to it
OTHER_TABS = tuple(slug for slug in TITLES if slug != DEFAULT_TAB)
STATIC_TYPES = ("script", "stylesheet", "font", "image")
READY_PATH = "/static/js/bokeh.min.js"  # answers once the server is up, without opening a session
MB = 1_000_000
TARGET_DEFAULT_S, TARGET_TAB_S, TARGET_SWITCH_S = 2.5, 1.0, 1.2


class Traffic:
    """Websocket frame bytes, the HTML document and the static HTTP resources seen by one page."""

    def __init__(self, page):
        self.websocket_bytes = 0
        self.documents = []
        self.static = []
        page.on("websocket", self._websocket)
        page.on("response", self._response)

    def _websocket(self, websocket) -> None:
        websocket.on("framereceived", self._frame)
        websocket.on("framesent", self._frame)

    def _frame(self, payload) -> None:
        self.websocket_bytes += len(payload)

    def _response(self, response) -> None:
        if response.request.resource_type in STATIC_TYPES:
            self.static.append(response)
        elif response.request.resource_type == "document":
            self.documents.append(response)

    def static_bytes(self) -> int:
        return sum(len(response.body()) for response in self.static)

    def document_bytes(self) -> int:
        return sum(len(response.body()) for response in self.documents)


def _drawn(page, slug: str, packet: str) -> None:
    page.wait_for_selector(f".status-line[data-packet='{packet}']", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(f".view-built-{slug}", state="visible", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(DRAWN_JS, arg=f"view-built-{slug}", timeout=PAGE_TIMEOUT_MS)


def _navigate(context, base_url: str, slug: str | None, label: str):
    """Open a fresh page on the full packet (its `slug` tab, or the default), print drawing time and bytes."""
    page = context.new_page()
    traffic = Traffic(page)
    shown = slug or DEFAULT_TAB
    query = f"?packet={FULL_SAMPLE_NAME}" + (f"&tab={slug}" if slug else "")
    started = time.perf_counter()
    page.goto(f"{base_url}{APP_PATH}{query}", timeout=PAGE_TIMEOUT_MS)
    _drawn(page, shown, FULL_SAMPLE_NAME)
    target = f" (target <= {TARGET_DEFAULT_S} s)" if slug is None else ""
    print(
        f"[{label}] navigation to the {'default ' if slug is None else ''}{shown} tab drawn in "
        f"{time.perf_counter() - started:.2f} s{target}; websocket {traffic.websocket_bytes / MB:.2f} MB; "
        f"HTML page {traffic.document_bytes() / MB:.2f} MB; static JS/CSS/fonts/images "
        f"{traffic.static_bytes() / MB:.2f} MB"
    )
    return page, traffic


def _session(browser, base_url: str, label: str) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    page, traffic = _navigate(context, base_url, None, label)
    for slug in OTHER_TABS:
        before, started = traffic.websocket_bytes, time.perf_counter()
        click_tab(page, slug)
        _drawn(page, slug, FULL_SAMPLE_NAME)
        print(
            f"[{label}]   tab {slug:<10} drawn {time.perf_counter() - started:.2f} s after the click "
            f"(target <= {TARGET_TAB_S} s); websocket {(traffic.websocket_bytes - before) / MB:.2f} MB"
        )
    for slug in TITLES:
        click_tab(page, slug)
        _drawn(page, slug, FULL_SAMPLE_NAME)
        _switch(page, label, slug)
    page.close()
    _navigate(context, base_url, DIRECT_TAB, label)
    context.close()


def _switch(page, label: str, slug: str) -> None:
    """Switch packets both ways with `slug` open; each time counts until the tab shows the new packet's view,
    drawn (the status line may change before the view does, and the old view is drawn meanwhile)."""
    for packet in (OTHER_SAMPLE, FULL_SAMPLE_NAME):
        shown = page.evaluate(OPEN_VIEW_JS)
        started = time.perf_counter()
        click_packet(page, packet, shown)  # both packets are on the list's first page
        print(
            f"[{label}] switch to {packet} with the {slug} tab open: {time.perf_counter() - started:.2f} s "
            f"(target <= {TARGET_SWITCH_S} s)"
        )


def main() -> None:
    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="bench-app-"))
    root = workdir / "packets"
    write_packet(root / FULL_SAMPLE_NAME, qwen_full_spec())
    CURATED[OTHER_SAMPLE][1](root / OTHER_SAMPLE)
    port = free_port()
    log_path = workdir / "panel-serve.log"
    server = start_server(port, log_path, ["--root", str(root), "--export-dir", str(workdir / "exports")])
    base_url = f"http://{LOCAL_HOST}:{port}"
    try:
        wait_until_serving(server, base_url + READY_PATH, log_path)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            try:
                _session(browser, base_url, "cold")
                _session(browser, base_url, "warm")
            finally:
                browser.close()
    finally:
        stop_server(server)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
