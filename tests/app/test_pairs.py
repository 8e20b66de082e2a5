"""The app's pair mode without a browser.

`compare=` in the URL query, the partner list, closing, and the pair caption band.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

import explorer
from explorer.export.kinds import SHA_DIGITS, pair_caption_fields
from explorer.samples.packets import synthetic_spec, write_packet
from explorer.ui import catalog
from explorer.ui.packet import SLUGS
from explorer.ui.pairs import NO_PARTNERS
from explorer.ui.shell import Shell

ROOT = catalog.default_root()
PAGED, CONTIGUOUS = "qwen36-pair-paged", "qwen36-pair-contiguous"
INPUT_DIFFERS, OTHER_LAYER = "qwen36-pair-contiguous-input-differs", "qwen36-pair-contiguous-other-layer"


@pytest.fixture
def shell(tmp_path) -> Shell:
    return Shell(ROOT, tmp_path / "exports")


def _url(shell: Shell) -> dict[str, str]:
    return dict(parse_qsl(shell.url_query.lstrip("?")))


def _message(shell: Shell) -> str:
    return shell.single.message


def test_compare_in_the_query_opens_the_pair_and_closing_drops_it(shell):
    shell.open_url(f"?packet={PAGED}&compare={CONTIGUOUS}")
    assert (shell.single.packet, shell.pairs.partner) == (PAGED, CONTIGUOUS)
    assert _url(shell)["compare"] == CONTIGUOUS and _message(shell) == ""
    assert shell.pairs.panel.visible and not shell.single_shown
    assert shell.pairs.pair.report()["output"] == explorer.compare(ROOT / PAGED, ROOT / CONTIGUOUS).report()["output"]
    shell.pairs.close()
    assert "compare" not in _url(shell) and shell.single_shown and not shell.pairs.panel.visible


@pytest.mark.parametrize("compare, built", [(CONTIGUOUS, []), ("not-listed", [SLUGS[0]])])
def test_a_link_to_a_pair_builds_the_packets_view_only_once_it_shows(tmp_path, monkeypatch, compare, built):
    monkeypatch.setattr("explorer.ui.shell.session_query", lambda: f"?packet={PAGED}&compare={compare}")
    shell = Shell(ROOT, tmp_path / "exports")  # the page load of that link
    assert shell.single.packet == PAGED and list(shell.single.built_views) == built
    assert shell.single_shown == (compare != CONTIGUOUS)  # a pair that did not open: the packet, drawn
    shell.pairs.close()
    assert shell.single_shown and list(shell.single.built_views) == [SLUGS[0]]


def test_choosing_a_packet_closes_the_pair_and_lists_that_packets_partners(shell):
    shell.open_url(f"?packet={PAGED}&compare={CONTIGUOUS}")
    shell.choose(OTHER_LAYER)
    assert shell.pairs.partner == "" and "compare" not in _url(shell)
    assert NO_PARTNERS in shell.pairs.partner_note
    shell.choose(PAGED)
    labels = [button.label for button in shell.pairs.buttons]
    assert labels == [CONTIGUOUS, INPUT_DIFFERS] == list(shell.index.partners(PAGED))


@pytest.mark.parametrize(
    "value, problem",
    [
        ("../" + OTHER_LAYER, "is not listed under this root"),
        (PAGED, "is the open packet itself"),
        ("<b>x</b>", "is not listed under this root"),
    ],
)
def test_a_compare_that_cannot_be_opened_gives_an_escaped_note(shell, value, problem):
    shell.open_url(f"?packet={PAGED}&compare={value}")
    assert shell.single.packet == PAGED and shell.pairs.partner == ""
    assert problem in _message(shell) and "<b>x</b>" not in _message(shell)
    assert "compare" not in _url(shell)


def test_a_partner_click_opens_the_pair(shell):
    shell.open_url(f"?packet={PAGED}")
    button = next(b for b in shell.pairs.buttons if b.label == INPUT_DIFFERS)
    button.clicks += 1
    assert shell.pairs.partner == INPUT_DIFFERS and _url(shell)["compare"] == INPUT_DIFFERS


def test_the_pair_caption_names_both_packets_and_what_they_share():
    pair = explorer.compare(ROOT / PAGED, ROOT / OTHER_LAYER)
    fields = dict(pair_caption_fields(pair, (PAGED, OTHER_LAYER), "2026-01-02 03:04 UTC"))
    reports = [side.report() for side in (pair.a, pair.b)]
    assert (fields["packet a"], fields["packet b"], fields["pair"]) == (PAGED, OTHER_LAYER, pair.status)
    assert fields["packetSHA256 a"] == reports[0]["packet"]["packetSHA256"][:SHA_DIGITS]
    assert fields["backend b"] == reports[1]["identity"]["backend"]
    layers = [str(report["selection"]["modelLayerIndex"]) for report in reports]
    assert layers[0] != layers[1] and fields["layer"] == f"{layers[0]} | {layers[1]}"
    assert fields["model"] == reports[0]["identity"]["modelID"] and fields["exported"] == "2026-01-02 03:04 UTC"


def _disk_full(*_args, **_kwargs):
    raise OSError(28, "No space left on device")


def test_the_pair_export_reads_the_files_again_and_redraws_a_pair_whose_files_changed(tmp_path, monkeypatch):
    root = tmp_path / "root"
    for name in ("a", "b"):
        write_packet(root / name, synthetic_spec())
    shell = Shell(root, tmp_path / "exports")
    shell.open_url("?packet=a&compare=b")
    shown = shell.pairs.pair
    monkeypatch.setattr("explorer.ui.pairs.export_pair", _disk_full)
    packet_json = root / "b" / "packet.json"
    packet_json.write_text(packet_json.read_text() + "\n")
    shell.pairs.export()
    assert shell.pairs.pair is not shown
    assert shell.pairs.pair.b.admission.packet_sha256 != shown.b.admission.packet_sha256
    assert "wrote nothing" in shell.pairs.area.export_note.object
    assert "No space left" in shell.pairs.area.export_note.object
    assert not (tmp_path / "exports").exists() or not any((tmp_path / "exports").iterdir())


def test_a_root_of_many_captures_of_one_selection_lists_the_first_partners_only(tmp_path):
    from explorer.ui.pairs import MAX_PARTNER_BUTTONS

    root = tmp_path / "root"
    names = [f"p{index:02d}" for index in range(MAX_PARTNER_BUTTONS + 3)]
    for name in names:
        write_packet(root / name, synthetic_spec())
    shell = Shell(root, tmp_path / "exports")
    shell.open_url(f"?packet={names[0]}")
    labels = [button.label for button in shell.pairs.buttons]
    assert labels == names[1 : MAX_PARTNER_BUTTONS + 1]
    assert f'data-partners="{len(names) - 1}"' in shell.pairs.partner_note
    shell.open_url(f"?packet={names[0]}&compare={names[-1]}")
    assert shell.pairs.partner == names[-1]


def test_a_pair_and_a_replay_run_give_way_to_each_other(shell):
    """One view beside the packet at a time: opening a replay run closes the open pair, and the reverse."""
    run = "replay-qwen36-pair"
    shell.open_url(f"?packet={CONTIGUOUS}&compare={PAGED}")
    assert shell.pairs.partner == PAGED
    assert shell.replays.open(run) == []
    assert (shell.pairs.partner, shell.replays.run) == ("", run)
    assert shell.replays.panel.visible and not shell.pairs.panel.visible and not shell.single_shown
    assert _url(shell).get("replay") == run and "compare" not in _url(shell)
    assert shell.pairs.open(PAGED) == []
    assert (shell.pairs.partner, shell.replays.run) == (PAGED, "")
    assert shell.pairs.panel.visible and not shell.replays.panel.visible and not shell.single_shown
    assert _url(shell).get("compare") == PAGED and "replay" not in _url(shell)
    shell.pairs.close()
    assert shell.single_shown and not shell.pairs.panel.visible and not shell.replays.panel.visible


def test_the_pair_export_carries_the_emulation_matrix_its_view_computed(tmp_path, monkeypatch):
    import json

    import panel as pn

    from explorer.export.pages import export_pair

    monkeypatch.setattr("explorer.views.pair.view.served", lambda: True)  # the matrix is offered on a served page
    exported = []

    def without_png(pair, out, **options):
        exported.append(options["emulate"])
        return export_pair(pair, out, **{**options, "png": False})

    monkeypatch.setattr("explorer.ui.pairs.export_pair", without_png)
    shell = Shell(ROOT, tmp_path / "exports")
    shell.open_url(f"?packet={PAGED}&compare={CONTIGUOUS}")
    compute = next(
        b for b in shell.pairs.area.view.select(pn.widgets.Button) if "pair-emulations-compute" in b.css_classes
    )
    compute.clicks += 1  # the runner runs inline outside a served session: the matrix is there at once
    shell.pairs.export()
    assert exported == ["default"]
    report = json.loads(next((tmp_path / "exports").glob("*.comparison.json")).read_text())
    assert report["emulationMatrix"] is not None
    findings = next((tmp_path / "exports").glob("*.findings.md")).read_text()
    assert "not computed" not in findings
    assert "side b: `mlx_two_pass`, bit for bit" in findings


def test_each_sidebar_list_is_one_line_beside_its_note(shell):
    """Three lists of buttons one per line pushed the packet list to y = 660 at 1280 x 800 (issue 39): each list is
    its note beside one line of buttons, scrolled sideways; a list without buttons is its note alone."""
    import panel as pn

    from explorer.ui.area import LIST_NOTE_WIDTH, ONE_LINE_STYLE

    shell.open_url(f"?packet={CONTIGUOUS}")
    for mode, hook in ((shell.pairs, "partner-button"), (shell.replays, "replay-button")):
        (line,) = mode.sidebar.objects
        note, buttons = line.objects
        assert note.width == LIST_NOTE_WIDTH
        assert isinstance(line, pn.Row) and isinstance(buttons, pn.Row) and buttons.styles == ONE_LINE_STYLE
        assert buttons.objects and all(hook in button.css_classes for button in buttons.objects)
    assert "<b>Pairs</b> (2)" in shell.pairs.partner_note
    shell.choose(OTHER_LAYER)
    assert [part.sizing_mode for part in shell.pairs.sidebar.objects] == ["stretch_width"]
