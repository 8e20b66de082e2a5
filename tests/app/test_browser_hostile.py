"""The app survives its root, in chromium: odd names, changing packets, hostile URLs.

The app survives its root, in chromium: a directory name that is not UTF-8 is listed, opened, kept in the URL
and exported; a packet of 8,388,000 tokens draws its attention tab with a bounded websocket payload; an
unreadable or unsearchable directory in the root, served without root's privileges, never leaves the page
blank.
"""

from __future__ import annotations

import os
import re
import shutil
import stat

import pytest

from explorer.samples.packets import injected_error_spec, synthetic_spec, write_packet
from explorer.ui.catalog import ROOT_ENV
from explorer.views.packet.attention import MAX_CURVE_POINTS

from app_support import APP_PATH, PAGE_TIMEOUT_MS, artifact, deep_text, serve_app, wait_statuses, wait_view

UNDECODABLE_NAME = os.fsdecode(b"bad\xffname")  # a tar archive can carry such a directory name
SHOWN_NAME = "bad\\xffname"  # how the app writes it (the browser can take UTF-8 text only)
URL_NAME = "bad%FFname"  # the byte itself, percent-encoded
EXPORT_STEM = "bad_name"
HUGE_TOKENS = 8_388_000  # float16, D 1: a 33 MB packet
HUGE_NAME = "huge-t"
MAX_VIEW_BYTES = 4 * 1024 * 1024  # websocket bytes a page with one open view may receive; 64 MiB before the bound
UNPRIVILEGED = ("setpriv", "--bounding-set=-dac_override,-dac_read_search")  # root without its file-access override


def _css_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _status_line(name_shown: str) -> str:
    return f".status-line[data-packet='{_css_string(name_shown)}']"


@pytest.fixture(scope="module")
def undecodable_server(tmp_path_factory, export_dir):
    root = tmp_path_factory.mktemp("undecodable-root")
    write_packet(root / UNDECODABLE_NAME, injected_error_spec())
    write_packet(root / "plain-packet", synthetic_spec())
    yield from serve_app("panel-serve-undecodable.log", {**os.environ, ROOT_ENV: str(root)}, export_dir)


def _websocket_bytes(page) -> list[int]:
    """A one-item list counting every websocket byte the page receives from now on."""
    received = [0]

    def count(payload) -> None:
        received[0] += len(payload.encode("utf-8") if isinstance(payload, str) else payload)

    page.on("websocket", lambda socket: socket.on("framereceived", count))
    return received


def test_a_non_utf8_directory_name_is_listed_opened_kept_in_the_url_and_exported(page, undecodable_server, export_dir):
    page.goto(f"{undecodable_server}{APP_PATH}?packet={URL_NAME}&tab=overview", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(_status_line(SHOWN_NAME), timeout=PAGE_TIMEOUT_MS)
    page.wait_for_url(re.compile(f"packet={URL_NAME}&"), timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    cells = page.locator(".packet-cell[data-field='packet']")
    assert cells.count() == 2 and any(text.startswith("bad") for text in cells.all_inner_texts())

    page.goto(f"{undecodable_server}{APP_PATH}?packet=plain-packet", timeout=PAGE_TIMEOUT_MS)  # then from the list
    page.wait_for_selector(_status_line("plain-packet"), timeout=PAGE_TIMEOUT_MS)
    wait_statuses(page)
    page.locator(".packet-cell[data-field='packet']", has_text=re.compile("^bad")).click()
    page.wait_for_selector(_status_line(SHOWN_NAME), timeout=PAGE_TIMEOUT_MS)
    page.wait_for_url(re.compile(f"packet={URL_NAME}&"), timeout=PAGE_TIMEOUT_MS)
    wait_view(page, SHOWN_NAME.replace("\\", "\\\\"), "overview")

    before = set(os.listdir(export_dir))
    page.get_by_role("button", name="Export HTML + PNG + JSON").click()
    page.locator(".export-html").first.wait_for(timeout=PAGE_TIMEOUT_MS)  # the note lists the files once written
    written = set(os.listdir(export_dir)) - before
    pngs = {name for name in written if name.endswith(".png")}  # the app's Export writes the PNGs too
    assert written - pngs == {f"{EXPORT_STEM}.html", f"{EXPORT_STEM}.report.json", f"{EXPORT_STEM}.findings.md"}
    assert pngs and all(name.startswith(f"{EXPORT_STEM}-") for name in pngs)
    assert SHOWN_NAME in (export_dir / f"{EXPORT_STEM}.html").read_text(encoding="utf-8")
    page.screenshot(path=artifact("undecodable-name.png"), full_page=True)


@pytest.fixture(scope="module")
def huge_server(tmp_path_factory, export_dir):
    root = tmp_path_factory.mktemp("huge-root")
    write_packet(
        root / HUGE_NAME,
        synthetic_spec(
            qh=1,
            kvh=1,
            tokens=HUGE_TOKENS,
            head_dim=1,
            query_dtype="float16",
            kv_dtype="float16",
            output_dtype="float16",
        ),
    )
    yield from serve_app("panel-serve-huge.log", {**os.environ, ROOT_ENV: str(root)}, export_dir)


def test_the_attention_tab_of_8388000_tokens_draws_a_bounded_curve_and_says_so(page, huge_server):
    received = _websocket_bytes(page)
    page.goto(f"{huge_server}{APP_PATH}?packet={HUGE_NAME}&tab=attention", timeout=PAGE_TIMEOUT_MS)
    view = wait_view(page, HUGE_NAME, "attention")
    assert received[0] < MAX_VIEW_BYTES, received[0]
    caption = deep_text(view.locator(".thinned-curve").first)
    assert f"draws {MAX_CURVE_POINTS} of {HUGE_TOKENS} tokens" in caption
    assert view.locator("canvas").count() > 0
    page.screenshot(path=artifact("huge-t-attention.png"), full_page=True)


def _unprivileged_wrapper() -> tuple[str, ...] | None:
    """The command prefix that serves without root's file-access override (None: the tests do not run as root, the
    server is unprivileged as it is). The interpreter lives under /root here, so `nobody` could not start it."""
    if os.geteuid() != 0:
        return ()
    return UNPRIVILEGED if shutil.which(UNPRIVILEGED[0]) else None


@pytest.fixture(scope="module")
def locked_root(tmp_path_factory):
    """A readable packet beside a directory that cannot be read and one that can be read but not searched."""
    root = tmp_path_factory.mktemp("locked-root")
    write_packet(root / "readable-packet", synthetic_spec())
    write_packet(root / "searchless" / "inner-packet", synthetic_spec(seed=1))
    (root / "closed").mkdir()
    for name, mode in (("searchless", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH), ("closed", 0)):
        if os.geteuid() == 0:
            shutil.chown(root / name, user="nobody")  # root without its override is then an 'other' user
        (root / name).chmod(mode)
    yield root
    for name in ("searchless", "closed"):
        (root / name).chmod(stat.S_IRWXU)


@pytest.fixture(scope="module")
def locked_server(locked_root, export_dir):
    wrapper = _unprivileged_wrapper()
    if wrapper is None:
        pytest.skip("running as root without setpriv: the server cannot be started without root's privileges")
    yield from serve_app("panel-serve-locked.log", {**os.environ, ROOT_ENV: str(locked_root)}, export_dir, wrapper)


def test_an_unreadable_or_unsearchable_directory_never_leaves_the_page_blank(page, locked_server, locked_root):
    page.goto(f"{locked_server}{APP_PATH}", timeout=PAGE_TIMEOUT_MS)
    shown = page.locator(".status-line, .session-failed").first
    shown.wait_for(timeout=PAGE_TIMEOUT_MS)
    text = deep_text(shown)
    page.screenshot(path=artifact("locked-root.png"), full_page=True)
    if "session-failed" in (shown.get_attribute("class") or ""):  # the root could not be listed: it says why
        assert str(locked_root) in text and "Permission denied" in text
    else:
        assert "readable-packet" in deep_text(page.locator(".packet-table").first)
