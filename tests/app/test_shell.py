"""The app shell without a browser: opening from a URL query, unknown names, lazy tabs, heads and Export."""

from __future__ import annotations

import json

import pytest

import explorer
from explorer.analysis.summary import summarize, triage_order
from explorer.ui import catalog
from explorer.ui.shell import SLUGS, Shell

ROOT = catalog.default_root()
ANALYZED_SAMPLE = "injected-error-head5"
REFUSED_SAMPLE = "refused-hash-mismatch"


@pytest.fixture
def shell(tmp_path) -> Shell:
    return Shell(ROOT, tmp_path / "exports")


def _first_by_status_and_ratio() -> str:
    """The analyzed sample with the largest noise-floor ratio: what the app opens without ?packet=."""
    names = [entry.name for entry in catalog.discover(ROOT)]
    return min(names, key=lambda name: triage_order(name, summarize(ROOT / name)))


def _built(shell: Shell) -> list[str]:
    return [slug for slug in SLUGS if shell._placeholders[slug].objects]


def _message(shell: Shell) -> str:
    return shell._message.object if shell._message.visible else ""


def test_opens_the_first_packet_by_status_and_ratio_with_only_the_first_tab_built(shell):
    assert shell.packet == _first_by_status_and_ratio() == ANALYZED_SAMPLE
    assert (shell.tab, shell.head) == (SLUGS[0], 0)
    assert _built(shell) == [SLUGS[0]]
    assert _message(shell) == ""


def test_query_opens_packet_tab_and_head(shell):
    shell._open_from_query(f"?packet={ANALYZED_SAMPLE}&tab={SLUGS[1]}&head=3")
    assert (shell.packet, shell.tab, shell.head) == (ANALYZED_SAMPLE, SLUGS[1], 3)
    assert shell._tabs.active == 1
    assert _built(shell) == [SLUGS[1]]
    assert shell._selection.head == 3


def test_unknown_query_values_are_ignored_with_an_escaped_message(shell):
    shell._open_from_query("?packet=../../etc/passwd&tab=<b>x</b>&head=-1")
    assert shell.packet == _first_by_status_and_ratio()
    assert (shell.tab, shell.head) == (SLUGS[0], 0)
    message = _message(shell)
    assert "../../etc/passwd" in message and "not listed" in message
    assert "&lt;b&gt;x&lt;/b&gt;" in message and "<b>x" not in message
    assert "-1" in message


def test_a_head_beyond_the_packet_falls_back_to_head_zero(shell):
    shell._open_from_query(f"?packet={ANALYZED_SAMPLE}&head=999")
    assert shell.head == 0 and shell._selection.head == 0
    assert "999" in _message(shell)


def test_choosing_an_unlisted_name_keeps_the_open_packet(shell):
    before = shell.packet
    shell.packet = "/etc"
    assert shell.packet == before
    assert "not listed" in _message(shell)


def test_switching_tabs_builds_each_view_once_and_packets_start_afresh(shell):
    for slug in SLUGS:
        shell.tab = slug
    assert _built(shell) == list(SLUGS)
    views = [shell._placeholders[slug].objects[0] for slug in SLUGS]
    shell.tab = SLUGS[0]
    assert shell._placeholders[SLUGS[0]].objects[0] is views[0]
    shell._choose(REFUSED_SAMPLE)
    assert shell.packet == REFUSED_SAMPLE
    assert _built(shell) == [SLUGS[0]]


def test_every_view_builds_for_every_sample(shell):
    for entry in shell.entries:
        shell._choose(entry.name)
        for slug in SLUGS:
            shell.tab = slug
        assert _built(shell) == list(SLUGS)
        assert not any("view-error" in str(getattr(shell._placeholders[slug].objects[0], "object", ""))
                       for slug in SLUGS)


def test_head_follows_the_views_selection(shell):
    shell._choose(ANALYZED_SAMPLE)
    shell._selection.head = 2
    assert shell.head == 2
    shell.head = 4
    assert shell._selection.head == 4


def test_export_writes_html_and_report_and_offers_them(shell, tmp_path):
    shell._choose(ANALYZED_SAMPLE)
    shell._on_export(None)
    html_path = tmp_path / "exports" / f"{ANALYZED_SAMPLE}.html"
    report_path = tmp_path / "exports" / f"{ANALYZED_SAMPLE}.report.json"
    assert html_path.is_file() and report_path.is_file()
    assert json.loads(report_path.read_text()) == explorer.analyze(ROOT / ANALYZED_SAMPLE).report()
    assert shell._html_download.visible and shell._html_download.file == str(html_path)
    assert shell._json_download.visible and shell._json_download.file == str(report_path)
    assert str(html_path) in shell._export_note.object


def test_export_into_an_unwritable_place_says_so(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    shell = Shell(ROOT, blocker / "exports")
    shell._on_export(None)
    assert "could not write" in shell._export_note.object
    assert not shell._html_download.visible
