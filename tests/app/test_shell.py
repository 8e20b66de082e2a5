"""The app shell without a browser: URL query, unknown names, lazy tabs, heads and Export.

The app shell without a browser: opening from a URL query, unknown names, lazy tabs, heads and Export.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from urllib.parse import parse_qsl

import panel as pn
import pytest

import explorer
from explorer.analysis.emulation import normalised_ids, shape_of
from explorer.analysis.ranking import ranked_heads
from explorer.catalog.summary import list_order, summarize
from explorer.export.kinds import shown_emulations
from explorer.samples.packets import synthetic_spec, write_packet
from explorer.ui import catalog
from explorer.ui.packet import SLUGS
from explorer.ui.shell import Shell
from explorer.ui.url import StringQueryLocation, session_query

ROOT = catalog.default_root()
ANALYZED_SAMPLE = "injected-error-head5"
EXPORT_WAIT_S = 300  # the export runs on a thread when Panel has a session pool: wait for it, never time it
INCONCLUSIVE_SAMPLE = "nan-stored-values"
REFUSED_SAMPLE = "refused-hash-mismatch"


@pytest.fixture
def shell(tmp_path) -> Shell:
    return Shell(ROOT, tmp_path / "exports")


def _first_by_status_and_ratio() -> str:
    """The analyzed sample with the largest noise-floor ratio: what the app opens without ?packet=."""
    names = [entry.name for entry in catalog.discover(ROOT)]
    return min(names, key=lambda name: list_order(name, summarize(ROOT / name)))


def _built(shell: Shell) -> list[str]:
    """The slugs of the views on the page: the open tab's only."""
    return [] if shell.single.shown_view is None else [shell.single.shown_view[0]]


def _message(shell: Shell) -> str:
    return shell.single.message


def _export(shell: Shell) -> None:
    """Click Export and wait until the export (on the event loop or a thread) has finished."""
    shell.single.export()
    deadline = time.monotonic() + EXPORT_WAIT_S
    while shell.single.export_button.loading and time.monotonic() < deadline:
        time.sleep(0.1)


def test_opens_the_first_packet_by_status_and_ratio_with_only_the_first_tab_built(shell):
    assert shell.single.packet == _first_by_status_and_ratio() == ANALYZED_SAMPLE
    # no head in the URL: the packet's worst head (largest score)
    assert (shell.single.tab, shell.single.head) == (SLUGS[0], 5)
    assert _built(shell) == [SLUGS[0]]
    assert _message(shell) == ""


def test_query_opens_packet_tab_and_head(shell):
    shell.open_url(f"?packet={ANALYZED_SAMPLE}&tab={SLUGS[1]}&head=3")
    assert (shell.single.packet, shell.single.tab, shell.single.head) == (ANALYZED_SAMPLE, SLUGS[1], 3)
    assert shell.tab_bar.active == SLUGS[1]
    assert _built(shell) == [SLUGS[1]]
    assert shell.single.selection.head == 3


def test_unknown_query_values_are_ignored_with_an_escaped_message(shell):
    shell.open_url("?packet=../../etc/passwd&tab=<b>x</b>&head=-1")
    assert shell.single.packet == _first_by_status_and_ratio()
    worst = ranked_heads(explorer.analyze(ROOT / shell.single.packet).numerics)[0]
    # a head that is no number: the largest-score head
    assert (shell.single.tab, shell.single.head) == (SLUGS[0], worst)
    message = _message(shell)
    assert "../../etc/passwd" in message and "not listed" in message
    assert "&lt;b&gt;x&lt;/b&gt;" in message and "<b>x" not in message
    assert "-1" in message


def test_a_head_beyond_the_packet_falls_back_to_the_largest_score_head(shell):
    shell.open_url(f"?packet={ANALYZED_SAMPLE}&head=999")
    worst = ranked_heads(explorer.analyze(ROOT / ANALYZED_SAMPLE).numerics)[0]
    assert shell.single.head == worst == shell.single.selection.head == 5
    assert "999" in _message(shell) and "largest score" in _message(shell)


def test_choosing_an_unlisted_name_keeps_the_open_packet(shell):
    before = shell.single.packet
    shell.single.packet = "/etc"
    assert shell.single.packet == before
    assert "not listed" in _message(shell)


def test_switching_tabs_builds_each_view_once_and_packets_start_afresh(shell):
    for slug in SLUGS:
        shell.single.tab = slug
        assert _built(shell) == [slug]  # only the open tab holds its view in the page
    assert list(shell.single.built_views) == list(SLUGS)
    views = [shell.single.built_views[slug] for slug in SLUGS]
    shell.single.tab = SLUGS[0]
    assert shell.single.shown_view[1] is views[0]  # kept for the packet, not built again
    shell.choose(REFUSED_SAMPLE)
    assert shell.single.packet == REFUSED_SAMPLE
    assert _built(shell) == [SLUGS[0]] and list(shell.single.built_views) == [SLUGS[0]]
    assert shell.single.built_views[SLUGS[0]] is not views[0]


def test_every_view_builds_in_the_shell_for_each_status(shell):
    """The shell's wiring per status (tests/views/test_views_build.py builds every view of every sample)."""
    for name in (ANALYZED_SAMPLE, INCONCLUSIVE_SAMPLE, REFUSED_SAMPLE):
        shell.choose(name)
        for slug in SLUGS:
            shell.single.tab = slug
        assert sorted(shell.single.built_views) == sorted(SLUGS)  # the open tab of the previous packet first
        assert not any("view-error" in str(getattr(view, "object", "")) for view in shell.single.built_views.values())


def test_head_follows_the_views_selection(shell):
    shell.choose(ANALYZED_SAMPLE)
    shell.single.selection.head = 2
    assert shell.single.head == 2
    shell.single.head = 4
    assert shell.single.selection.head == 4


@pytest.mark.browser  # renders PNGs in chromium
def test_export_carries_the_emulation_set_chosen_in_the_view(shell, tmp_path):
    shell.choose(ANALYZED_SAMPLE)
    shell.single.selection.emulation = {"emulationSet": "builds"}  # as the Emulations view's set choice writes it
    _export(shell)
    report = json.loads((tmp_path / "exports" / f"{ANALYZED_SAMPLE}.report.json").read_text())
    shape = shape_of(explorer.analyze(ROOT / ANALYZED_SAMPLE).admission.tensors)
    assert report["emulationsRequested"] == list(normalised_ids("builds", shape))
    assert report["builds"] is None and "paged" in report["buildsReason"]  # the sample: the paged kernel wrote it


@pytest.mark.browser  # renders PNGs in chromium
def test_export_writes_html_and_report_and_offers_them(shell, tmp_path):
    shell.choose(ANALYZED_SAMPLE)
    _export(shell)
    html_path = tmp_path / "exports" / f"{ANALYZED_SAMPLE}.html"
    report_path = tmp_path / "exports" / f"{ANALYZED_SAMPLE}.report.json"
    assert html_path.is_file() and report_path.is_file()
    # the JSON holds the emulations the exported Emulations view shows (docs/report.md, "Exports")
    assert json.loads(report_path.read_text()) == shown_emulations(explorer.analyze(ROOT / ANALYZED_SAMPLE)).report()
    offered = dict(shell.single.offered_downloads)
    assert {label: offered[label] for label in ("Download HTML", "Download JSON report")} == {
        "Download HTML": str(html_path),
        "Download JSON report": str(report_path),
    }
    assert offered["Download findings.md"] == str(report_path.with_name(f"{ANALYZED_SAMPLE}.findings.md"))
    assert str(html_path) in shell.single.export_note


def test_export_into_an_unwritable_place_says_so(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    shell = Shell(ROOT, blocker / "exports")
    shell.single.export()
    assert "could not write" in shell.single.export_note
    assert not shell.single.offered_downloads


# ---------------------------------------------------------------- hostile queries, changed files


@pytest.mark.parametrize("query", ["?head=%C2%B2", "?head=" + "9" * 5_000, "?head=%EF%BC%91"])
def test_a_head_that_is_not_ascii_digits_gets_a_note(shell, query):
    shell.open_url(query)
    assert shell.single.head == _worst_of_open(shell) and "not a head number" in _message(shell)
    assert len(_message(shell)) < 1_000


def _worst_of_open(shell: Shell) -> int:
    return ranked_heads(explorer.analyze(ROOT / shell.single.packet).numerics)[0]


def test_panel_location_parsing_never_raises_on_the_query():
    location = StringQueryLocation(search="?x=%C2%B2&head=" + "9" * 5_000)
    assert location.query_params == {"x": "²", "head": "9" * 5_000}


def test_the_session_query_keeps_every_value_as_text_and_a_byte_that_is_not_utf8(monkeypatch):
    arguments = {"x": [b"\xc2\xb2"], "head": [b"9" * 5_000], "packet": [b"bad\xffname"]}
    monkeypatch.setattr(type(pn.state), "session_args", property(lambda state: arguments))
    query = session_query()
    assert dict(parse_qsl(query[1:], errors="surrogateescape")) == {
        "x": "²",
        "head": "9" * 5_000,
        "packet": b"bad\xffname".decode("utf-8", "surrogateescape"),
    }
    monkeypatch.setattr(type(pn.state), "session_args", property(lambda state: {}))
    assert session_query() == ""


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture
def own_root(tmp_path) -> Path:
    for name in ("a", "b"):
        write_packet(tmp_path / "root" / name, synthetic_spec())
    return tmp_path / "root"


def test_reopening_a_changed_packet_shows_its_new_status_with_a_note(own_root, tmp_path):
    shell = Shell(own_root, tmp_path / "exports")
    shell.choose("a")
    assert shell.single.analysis.status == "analyzed"
    _flip_byte(own_root / "a" / "stored-values.bin")
    shell.choose("b")
    shell.choose("a")
    assert shell.single.analysis.status == "refused" and "changed" in _message(shell)
    assert [p.code for p in shell.single.analysis.admission.refusals] == ["sha256_mismatch"]


@pytest.mark.browser  # renders PNGs in chromium
def test_export_writes_the_content_on_disk_now(own_root, tmp_path):
    shell = Shell(own_root, tmp_path / "exports")
    shell.choose("a")
    _flip_byte(own_root / "a" / "stored-values.bin")  # changed after it was shown, not re-opened
    _export(shell)
    report = json.loads((tmp_path / "exports" / "a.report.json").read_text())
    assert report["status"] == "refused" and report == explorer.analyze(own_root / "a").report()
    on_disk = hashlib.sha256((own_root / "a" / "stored-values.bin").read_bytes()).hexdigest()
    assert on_disk in report["refusals"][0]["message"]
    assert shell.single.analysis.status == "refused" and "changed" in _message(shell)


def test_choosing_the_open_packet_again_reads_it_again(own_root, tmp_path):
    shell = Shell(own_root, tmp_path / "exports")
    shell.choose("a")
    _flip_byte(own_root / "a" / "stored-values.bin")
    shell.choose("a")
    assert shell.single.analysis.status == "refused" and "changed" in _message(shell)


def test_overview_is_the_default_tab_and_its_links_open_their_tabs(shell):
    assert SLUGS[0] == "overview" and shell.single.tab == "overview"
    shell.single.selection.tab = "nonfinite"
    assert shell.single.tab == "nonfinite" and shell.tab_bar.active == "nonfinite"
    assert "nonfinite" in _built(shell)


def test_a_selected_element_shows_its_panel_and_enters_the_url(shell):
    shell.open_url(f"?packet={ANALYZED_SAMPLE}")
    shell.single.selection.element = (5, 3)
    record = explorer.analyze(ROOT / ANALYZED_SAMPLE).element(5, 3)
    panel = shell.single.element_panel
    assert 'data-element="5,3"' in panel and record.output_hex in panel
    assert "element=5%2C3" in shell.url_query


@pytest.mark.parametrize("value, selected", [("5,3", (5, 3)), ("323", (5, 3))])
def test_element_query_selects_the_element(shell, value, selected):
    shell.open_url(f"?packet={ANALYZED_SAMPLE}&element={value}")
    assert shell.single.selection.element == selected and _message(shell) == ""


@pytest.mark.parametrize(
    "value, problem",
    [("5;3", "is not H,C"), ("99,0", "outside the output"), ("\u0665,3", "is not H,C"), ("<b>", "is not H,C")],
)
def test_an_invalid_element_query_is_ignored_with_a_note(shell, value, problem):
    search = f"?packet={ANALYZED_SAMPLE}&element={value}"
    shell.open_url(search)
    assert shell.single.selection.element is None and shell.single.element_panel is None  # never made
    assert problem in _message(shell) and "<b>" not in _message(shell)


def test_closing_the_element_panel_clears_the_selection_and_the_url(shell):
    shell.open_url(f"?packet={ANALYZED_SAMPLE}")
    shell.single.selection.element = (1, 2)
    shell.single.close_element()
    assert shell.single.selection.element is None and shell.single.element_panel == ""
    assert "element=" not in shell.url_query


def test_an_invalid_element_note_joins_the_other_notes(shell):
    search = "?packet=nowhere&element=x"
    shell.open_url(search)
    message = _message(shell)
    assert "nowhere" in message and "Element &quot;x&quot; is not H,C" in message


def test_emulation_settings_round_trip_through_the_url_and_the_view(shell):
    import panel as pn

    shell.open_url(f"?packet={ANALYZED_SAMPLE}&tab=emulations&blocks=64&partitionTokens=128&partialDType=float16")
    assert _message(shell) == "" and shell.single.selection.emulation == {
        "blocks": 64,
        "partitionTokens": 128,
        "partialDType": "float16",
    }
    assert "blocks=64&partitionTokens=128&partialDType=float16" in shell.url_query
    shown = " ".join(str(pane.object) for pane in shell.single.shown_view[1].select(pn.pane.HTML))
    assert "mlx_two_pass(blocks=64,partialDType=float16)</code>" in shown  # the view computed with them
    shell.single.selection.emulation = {"blocks": 32}  # what the view writes when its parameters change
    assert "blocks=32" in shell.url_query and "partitionTokens" not in shell.url_query
    shell.single.packet = REFUSED_SAMPLE  # another packet keeps the settings
    assert shell.single.selection.emulation == {"blocks": 32} and "blocks=32" in shell.url_query


@pytest.mark.parametrize(
    "query, problem",
    [
        ("blocks=0", "blocks &quot;0&quot; is not an integer from 1 to 1024"),
        ("blocks=%C2%B2", "blocks &quot;\u00b2&quot; is not an integer from 1"),
        ("partitionTokens=99999999", "partitionTokens &quot;99999999&quot;"),
        ("partialDType=%3Cb%3E", "partialDType &quot;&lt;b&gt;&quot; is not"),
    ],
)
def test_an_invalid_emulation_setting_gets_a_note_and_its_default(shell, query, problem):
    shell.open_url(f"?packet={ANALYZED_SAMPLE}&tab=emulations&{query}")
    assert problem in _message(shell) and "<b>" not in _message(shell)
    assert shell.single.selection.emulation == {} and query.split("=")[0] not in shell.url_query
