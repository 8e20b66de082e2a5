"""In the browser: a packet whose files change is re-read on every open and export.

In the browser, on a root of the test's own: a packet whose files change is re-read on every open and export,
and no URL parameter blanks the page.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

import explorer
from explorer.export.files import EXPORT_DIR_ENV
from explorer.export.kinds import shown_emulations
from explorer.samples.packets import synthetic_spec, write_packet
from explorer.ui.catalog import ROOT_ENV

from app_support import ARTIFACTS, PAGE_TIMEOUT_MS, choose_packet, open_packet, serve_app

PACKETS = ("a", "b")
CHANGED_FILE = "stored-values.bin"
HUGE_VALUE_DIGITS = 4_400


@pytest.fixture(scope="module")
def changing_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("changing") / "root"
    for name in PACKETS:
        write_packet(root / name, synthetic_spec())
    return root


@pytest.fixture(scope="module")
def changing_exports(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("changing-exports")


@pytest.fixture(scope="module")
def changing_server(changing_root, changing_exports):
    """`panel serve explorer/app.py` on the test's own root (its files are changed by the tests)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key != EXPORT_DIR_ENV}
    yield from serve_app("panel-serve-changing.log", {**env, ROOT_ENV: str(changing_root)}, changing_exports)


def _flip_first_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))


def _status(page, packet: str):
    return page.locator(f".status-line[data-packet='{packet}'] .status-badge")


def _export(page, previous: str | None = None) -> tuple[str, dict]:
    """Click Export and read the report it wrote (once its path differs from the `previous` export's)."""
    page.get_by_role("button", name="Export HTML + PNG + JSON").click()
    written = page.locator(".export-json")
    if previous is not None:
        expect(written).not_to_have_text(previous, timeout=PAGE_TIMEOUT_MS)
    written.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    path = written.inner_text()
    return path, json.loads(Path(path).read_text())


def test_a_packet_changed_on_disk_shows_its_new_status_and_exports_it(page, changing_server, changing_root):
    changed = changing_root / "a" / CHANGED_FILE
    open_packet(page, changing_server, "?packet=a")
    assert _status(page, "a").get_attribute("data-status") == "analyzed"
    _flip_first_byte(changed)
    choose_packet(page, "b")
    choose_packet(page, "a")
    page.wait_for_selector(
        ".status-line[data-packet='a'] .status-badge[data-status='refused']", timeout=PAGE_TIMEOUT_MS
    )
    assert "changed" in page.locator(".shell-message").inner_text()
    first, report = _export(page)
    assert report["status"] == "refused" and [r["code"] for r in report["refusals"]] == ["sha256_mismatch"]
    assert hashlib.sha256(changed.read_bytes()).hexdigest() in report["refusals"][0]["message"]

    _flip_first_byte(changed)  # back to the declared bytes, and exported without re-opening first
    _, report = _export(page, previous=first)
    shown = shown_emulations(explorer.analyze(changing_root / "a"))  # the export's JSON holds what its page shows
    assert report["status"] == "analyzed" and report == shown.report()
    page.wait_for_selector(
        ".status-line[data-packet='a'] .status-badge[data-status='analyzed']", timeout=PAGE_TIMEOUT_MS
    )


@pytest.mark.parametrize(
    "query, note",
    [
        ("?head=%C2%B2", "not a head number"),
        ("?x=%C2%B2", None),
        ("?head=" + "9" * HUGE_VALUE_DIGITS, "not a head number"),
        ("?x=" + "9" * HUGE_VALUE_DIGITS, None),
        ("?%C2%B2=%C2%B2&tab=%C2%B2", "does not exist"),
    ],
)
def test_no_url_parameter_blanks_the_page(page, changing_server, query, note):
    open_packet(page, changing_server, query)
    assert _status(page, "a").is_visible()
    message = page.locator(".shell-message")
    if note is None:
        assert message.count() == 0 or not message.is_visible()
    else:
        assert note in message.inner_text()
