"""`panel serve --num-procs 2`: pages served by two processes, each session live, the same answers.

Several pages open one after another in chromium against two forked server processes sharing one port. Each
page shows its packet's status line and drawn Overview, and a tab click builds another view (its websocket
reached a process holding its session). The log names the process of every session it built; pages land on
both processes, and both show the same status and score for the same packet, though each process analyzed it
for itself (docs/triage-and-app.md, Serving more users). A session is built once, or once more by the other
process when its page's websocket reached that one (which of the two happens is the kernel's choice).
"""

from __future__ import annotations

import os
import re

import pytest

import explorer
from explorer.export.files import EXPORT_DIR_ENV
from explorer.ui import catalog
from explorer.ui.catalog import ROOT_ENV

from app_support import (
    APP_PATH,
    ARTIFACTS,
    LOCAL_HOST,
    PAGE_TIMEOUT_MS,
    VIEWPORT,
    child_pids,
    click_tab,
    free_port,
    running,
    start_server,
    stop_server,
    wait_until_serving,
    wait_view,
)

PROCESSES = 2
LOG_NAME = "panel-serve-num-procs.log"
PACKET = "injected-error-head5"  # analyzed, all finite: its Overview draws plots
SECOND_SLUG = "errors"
MIN_PAGES = 6
MAX_PAGES = 12  # pages opened at most while waiting for sessions in both processes
BUILT = re.compile(r"session (\S+): document built [0-9.]+ s after the page request in process (\d+)")
STARTED = re.compile(r"Starting Bokeh server with process id: (\d+)")


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """(base URL, log path, the server processes' ids) of `panel serve explorer/app.py --num-procs 2` on the
    bundled samples."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log_path = ARTIFACTS / LOG_NAME
    env = {key: value for key, value in os.environ.items() if key not in (ROOT_ENV, EXPORT_DIR_ENV)}
    port = free_port()
    export_dir = tmp_path_factory.mktemp("exports-num-procs")
    process = start_server(
        port, log_path, ["--export-dir", str(export_dir)], env=env, serve_args=("--num-procs", str(PROCESSES))
    )
    base_url = f"http://{LOCAL_HOST}:{port}"
    try:
        wait_until_serving(process, base_url + APP_PATH, log_path)
        servers = child_pids(process.pid)
        yield base_url, log_path, servers
    finally:
        stop_server(process)
    assert not any(running(server) for server in servers)  # stopping the parent stopped the forked servers


def _live_process(log: str, session: str) -> int:
    """The process holding `session` now: the last one that built it (a websocket reaching another process than
    the page request's makes that process build the session again, from its id)."""
    return [int(pid) for built, pid in BUILT.findall(log) if built == session][-1]


def _open(browser, base_url: str, log_path) -> tuple[int, str, str]:
    """Open the packet in a fresh page, wait for its drawn Overview, click a second tab and wait for that view;
    (the process holding the session, the status line's text, its badge's status)."""
    before = {session for session, _ in BUILT.findall(log_path.read_text())}
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(f"{base_url}{APP_PATH}?packet={PACKET}", timeout=PAGE_TIMEOUT_MS)
        wait_view(page, PACKET, "overview")
        click_tab(page, SECOND_SLUG)
        wait_view(page, PACKET, SECOND_SLUG)
        line = page.locator(f".status-line[data-packet='{PACKET}']").first
        text, status = line.inner_text(), line.locator(".status-badge").first.get_attribute("data-status")
    finally:
        context.close()
    log = log_path.read_text()
    sessions = {session for session, _ in BUILT.findall(log)} - before
    assert len(sessions) == 1, sessions  # this page's, logged before its document was sent
    return _live_process(log, sessions.pop()), text, status


def test_pages_land_on_both_processes_each_live_with_the_same_answers(browser, two_processes):
    base_url, log_path, servers = two_processes
    assert len(servers) == PROCESSES and set(map(int, STARTED.findall(log_path.read_text()))) == set(servers)
    opened = []
    while len(opened) < MIN_PAGES or (len({pid for pid, _, _ in opened}) < PROCESSES and len(opened) < MAX_PAGES):
        opened.append(_open(browser, base_url, log_path))
    assert {pid for pid, _, _ in opened} == set(servers), opened  # every process served pages, no other did
    assert len({(text, status) for _, text, status in opened}) == 1, opened  # one answer, whichever process
    builds: dict[str, list[str]] = {}
    for session, pid in BUILT.findall(log_path.read_text()):
        builds.setdefault(session, []).append(pid)
    # A session is built once, or again by the other process when its page's websocket reached that one.
    assert all(len(pids) == len(set(pids)) <= PROCESSES for pids in builds.values()), builds
    assert opened[0][2] == explorer.analyze(catalog.default_root() / PACKET).status
