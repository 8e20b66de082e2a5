"""A page whose server went away says so: `panel serve --num-procs 2` with its server processes killed.

Issue 41.8: a child killed mid-session left a page that looked alive (a clicked tab marked and never opened, an
export note spinning for good). Bokeh's client fires `connection_lost` when the websocket closes; the app's page
(explorer/app.py) then shows a notice saying so.
"""

from __future__ import annotations

import os
import signal

import pytest

from explorer.export.files import EXPORT_DIR_ENV
from explorer.ui.catalog import ROOT_ENV

from app_support import (
    APP_PATH,
    ARTIFACTS,
    LOCAL_HOST,
    PAGE_TIMEOUT_MS,
    VIEWPORT,
    child_pids,
    free_port,
    start_server,
    stop_server,
    wait_until_serving,
    wait_view,
)

PROCESSES = 2
LOG_NAME = "panel-serve-server-gone.log"
PACKET = "fp16-kv"


@pytest.fixture
def two_processes(tmp_path):
    """(base URL, the forked server processes' ids) of `panel serve explorer/app.py --num-procs 2`."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log_path = ARTIFACTS / LOG_NAME
    env = {key: value for key, value in os.environ.items() if key not in (ROOT_ENV, EXPORT_DIR_ENV)}
    port = free_port()
    process = start_server(
        port, log_path, ["--export-dir", str(tmp_path)], env=env, serve_args=("--num-procs", str(PROCESSES))
    )
    base_url = f"http://{LOCAL_HOST}:{port}"
    try:
        wait_until_serving(process, base_url + APP_PATH, log_path)
        yield base_url, child_pids(process.pid)
    finally:
        stop_server(process)


def test_a_page_whose_server_was_killed_says_so(browser, two_processes):
    base_url, servers = two_processes
    assert len(servers) == PROCESSES
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(f"{base_url}{APP_PATH}?packet={PACKET}", timeout=PAGE_TIMEOUT_MS)
        wait_view(page, PACKET, "overview")
        assert page.locator(".server-gone").count() == 0  # a live page shows no notice
        for server in servers:  # whichever holds the session: killed mid-session (the parent restarts them)
            os.kill(server, signal.SIGKILL)
        notice = page.locator(".server-gone")
        notice.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
        # explorer/app.py's SERVER_GONE_NOTICE (the app script is not imported here: importing it serves a page)
        assert "lost its connection to the explorer's server" in notice.inner_text()
        assert "Reload the page" in notice.inner_text() and notice.get_attribute("role") == "alert"
    finally:
        context.close()
