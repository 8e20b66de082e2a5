"""Every export note of the app names every file written and offers each for download, findings.md too."""

from __future__ import annotations

import zipfile

import pytest

import explorer
from explorer.export.files import ExportPaths
from explorer.export.pages import export_campaign, export_packet, export_pair, export_replay
from explorer.samples.campaigns import CURATED_NAME
from explorer.ui import catalog
from explorer.ui.area import PNG_ARCHIVE_SUFFIX, Downloads, export_written
from explorer.ui.packet import EXPORT_LABEL as PACKET_EXPORT_LABEL
from explorer.ui.pairs import EXPORT_LABEL as PAIR_EXPORT_LABEL
from explorer.ui.replays import EXPORT_LABEL as REPLAY_EXPORT_LABEL
from explorer.ui.shell import Shell

ROOT = catalog.default_root()
PACKET, PARTNER, RUN = "qwen36-pair-contiguous", "qwen36-pair-paged", "replay-qwen36-pair"


def _offered(downloads: Downloads) -> dict[str, str | None]:
    return {button.label: button.file for button in downloads.offered}


def _with_pngs(tmp_path, count: int) -> ExportPaths:
    """A packet export's files with `count` PNGs beside them (what a rendered export writes)."""
    paths = export_packet(explorer.analyze(ROOT / PACKET), tmp_path)
    pngs = tuple(tmp_path / f"{paths.html.stem}-view-{number}.png" for number in range(1, count + 1))
    for number, png in enumerate(pngs):
        png.write_bytes(b"\x89PNG part %d" % number)
    return ExportPaths(html=paths.html, report=paths.report, pngs=pngs, findings=paths.findings)


def test_one_png_is_offered_beside_the_page_the_json_and_the_findings(tmp_path):
    paths = _with_pngs(tmp_path, 1)
    downloads = Downloads("test-downloads")
    downloads.offer_export(paths, "Download JSON report")
    assert _offered(downloads) == {
        "Download HTML": str(paths.html),
        "Download JSON report": str(paths.report),
        "Download findings.md": str(paths.findings),
        "Download PNG": str(paths.pngs[0]),
    }


def test_several_pngs_are_offered_as_one_archive_and_the_note_names_every_file(tmp_path):
    paths = _with_pngs(tmp_path, 3)
    downloads = Downloads("test-downloads")
    downloads.offer_export(paths, "Download JSON report")
    archive = downloads.offered[-1]
    assert archive.label == "Download the 3 PNGs (.zip)" and archive.filename.endswith(PNG_ARCHIVE_SUFFIX)
    assert _offered(downloads)["Download findings.md"] == str(paths.findings)
    with zipfile.ZipFile(archive.callback()) as opened:
        assert opened.namelist() == [png.name for png in paths.pngs]
        assert [opened.read(png.name) for png in paths.pngs] == [png.read_bytes() for png in paths.pngs]
    note = export_written("test-note", paths)
    assert all(str(path) in note for path in paths.files) and len(paths.files) == 6
    assert note.count('class="export-png"') == 3 and note.count('class="export-findings"') == 1


@pytest.mark.parametrize("label", [PACKET_EXPORT_LABEL, PAIR_EXPORT_LABEL, REPLAY_EXPORT_LABEL])
def test_every_export_button_names_the_findings(label):
    assert "findings.md" in label


def _without_png(export):
    """`export` writing the files a rendered export writes but its PNGs (no chromium here)."""
    return lambda subject, out, **options: export(subject, out, **{**options, "png": False})


def _assert_offered(downloads: Downloads, note: str, json_label: str) -> None:
    offered = _offered(downloads)
    assert set(offered) == {"Download HTML", json_label, "Download findings.md"}
    assert offered["Download findings.md"].endswith(".findings.md")
    assert all(f"{path}</code>" in note for path in offered.values())
    assert 'class="export-findings"' in note


def test_the_packet_export_offers_its_findings(tmp_path, monkeypatch):
    monkeypatch.setattr(
        "explorer.ui.packet.export_packet",
        lambda analysis, out, **options: export_packet(analysis, out, **{**options, "png": False}),
    )  # the files as a rendered export writes them, without chromium
    shell = Shell(ROOT, tmp_path / "exports")
    shell.choose(PACKET)
    shell.single.export()
    _assert_offered(shell.single._downloads, shell.single.export_note, "Download JSON report")


def test_the_pair_export_offers_its_findings(tmp_path, monkeypatch):
    monkeypatch.setattr("explorer.ui.pairs.export_pair", _without_png(export_pair))
    shell = Shell(ROOT, tmp_path / "exports")
    shell.open_url(f"?packet={PACKET}&compare={PARTNER}")
    shell.pairs.export()
    _assert_offered(shell.pairs.area.downloads, shell.pairs.area.export_note.object, "Download comparison JSON")


def test_the_replay_export_offers_its_findings(tmp_path, monkeypatch):
    monkeypatch.setattr("explorer.ui.replays.export_replay", _without_png(export_replay))
    shell = Shell(ROOT, tmp_path / "exports")
    shell.choose(PACKET)
    assert shell.replays.open(RUN) == []
    shell.replays.export()
    _assert_offered(shell.replays.area.downloads, shell.replays.area.export_note.object, "Download replay JSON")


def test_the_campaign_export_offers_its_findings_as_the_others_do(tmp_path, monkeypatch):
    monkeypatch.setattr("explorer.ui.campaigns.export_campaign", _without_png(export_campaign))
    shell = Shell(ROOT / CURATED_NAME, tmp_path / "exports")
    shell.campaigns.open(shell.campaigns.buttons[0].css_classes[1].removeprefix("campaign-"))
    shell.campaigns.export()
    _assert_offered(shell.campaigns.area.downloads, shell.campaigns.area.export_note.object, "Download campaign JSON")
