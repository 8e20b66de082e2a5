"""NAME.findings.md beside every export, and the export JSON holding what its page shows.

NAME.findings.md beside every export (a packet, a pair, a replay run): the core's sentences with the JSON's numbers,
the selection, relative links to the PNGs, written whole or not at all and never over a file; and the export's JSON
holds the emulations its page shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import explorer
from explorer.analysis.findings import packet_findings
from explorer.analysis.report import REPORT_SUFFIX
from explorer.export import files
from explorer.export.files import FINDINGS_SUFFIX
from explorer.export.findings import findings_markdown, markdown_text
from explorer.export.kinds import PacketSubject, caption_fields, packet_write_up, shown_emulations
from explorer.export.pages import export_packet, export_pair, export_replay
from explorer.foundations.formatting import short_number
from explorer.pair.findings import pair_findings
from explorer.samples import packets as samples
from explorer.views import VIEWS
from explorer.views.packet.emulations import EmulationsView

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "sample_packets"
INJECTED = ROOT / "injected-error-head5"
PAGED = ROOT / samples.PAIR_NAMES["paged"]
CONTIGUOUS = ROOT / samples.PAIR_NAMES["contiguous"]
REPLAY_RUN = ROOT / "replay-qwen36-pair"


def _bullets(markdown: str, section: str) -> list[str]:
    body = markdown.split(f"## {section}\n\n", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in body.splitlines() if line.startswith("- ")]


def test_a_packets_findings_file_holds_the_sentences_with_the_jsons_numbers(tmp_path):
    analysis = explorer.analyze(INJECTED)
    paths = export_packet(analysis, tmp_path)
    assert paths.findings == tmp_path / f"{INJECTED.name}{FINDINGS_SUFFIX}"
    markdown = paths.findings.read_text()
    report = json.loads(paths.report.read_text())
    shown = shown_emulations(analysis)
    assert _bullets(markdown, "Findings") == [markdown_text(f.text) for f in packet_findings(shown)]
    # The numbers are the JSON's, printed by the one formatter; each worst value names the JSON's element.
    primary, ulp = report["reference"]["primary"]["global"], report["reference"]["roundedToOutputDType"]["ulp"]
    score = report["score"]
    assert f"Score (error / allowance) {short_number(score['value'])} at query head {score['worstHead']}." in markdown
    assert (
        f"{short_number(primary['linf'])} at query head {primary['linfAt']['queryHead']}, channel "
        f"{primary['linfAt']['channel']}."
    ) in markdown
    assert (
        f"ULP max {ulp['max']} at query head {ulp['maxAt']['queryHead']}, channel {ulp['maxAt']['channel']} "
        f"(p99 {ulp['p99']})"
    ) in markdown
    selection = _bullets(markdown, "Selection")
    assert f"request: {report['selection']['requestID']}" in selection
    assert f"layer: {report['selection']['modelLayerIndex']}" in selection
    assert f"The views open on query head {score['worstHead']}." in selection
    assert "No PNG was written with this export." in markdown  # export_packet writes no PNG
    assert f"]({INJECTED.name}.report.json)" in markdown and f"]({INJECTED.name}.html)" in markdown
    # The JSON holds the emulations the page's Emulations view shows, with the same counts.
    view = EmulationsView(analysis)
    view.compute()
    assert [e["id"] for e in report["emulations"]] == [e["id"] for e in shown.report()["emulations"]]
    shown_counts = {e.id: e.bit_equal for e in view.emulations}
    assert {e["id"]: e["bitEqual"] and e["bitEqual"]["global"] for e in report["emulations"]} == shown_counts


def test_png_links_are_relative_and_titled_by_their_view():
    analysis = explorer.analyze(INJECTED)
    titles = {slug: title for slug, title, _ in VIEWS}
    fields = caption_fields(analysis, "cell", "2026-01-02 03:04 UTC")
    write_up = packet_write_up(PacketSubject(analysis, 5), "cell", fields)
    pngs = ["cell-summary.png", "cell-errors-1.png", "cell-errors-2.png"]
    markdown = findings_markdown(write_up, "cell", pngs, titles, REPORT_SUFFIX)
    assert f"![{titles['summary']}](cell-summary.png)" in markdown
    assert f"![{titles['errors']}, part 2](cell-errors-2.png)" in markdown
    assert markdown.startswith("# cell: findings\n")


def test_a_pairs_findings_file_leads_with_which_side_is_off(tmp_path):
    pair = explorer.compare(PAGED, CONTIGUOUS)
    paths = export_pair(pair, tmp_path)
    markdown = paths.findings.read_text()
    assert paths.findings.name == f"{PAGED.name}-vs-{CONTIGUOUS.name}{FINDINGS_SUFFIX}"
    bullets = _bullets(markdown, "Findings")
    assert bullets == [markdown_text(f.text) for f in pair_findings(pair)]
    counts = json.loads(paths.report.read_text())["nearerPrimaryReference"]["global"]
    assert bullets[0].startswith(f"Nearer the primary reference: a {counts['a']}, b {counts['b']}")
    assert f"requestID: {pair.a.admission.selection['requestID']}" in _bullets(markdown, "Selection")
    assert f"]({paths.report.name})" in markdown


def test_a_replay_runs_findings_file_holds_its_matrix(tmp_path):
    run = explorer.replay(REPLAY_RUN, partner=PAGED)
    paths = export_replay(run, tmp_path)
    markdown = paths.findings.read_text()
    report = json.loads(paths.report.read_text())
    assert report["matrix"]["outputs"][0] in markdown
    assert f"of {report['matrix']['compared']} each" in markdown
    assert f"request: {run.packet.admission.selection['requestID']}" in _bullets(markdown, "Selection")


def test_the_findings_file_is_never_written_over_and_its_name_takes_part_in_the_free_name(tmp_path):
    analysis = explorer.analyze(ROOT / "refused-hash-mismatch")  # the naming rule is the same for every status
    name = "refused-hash-mismatch"
    (tmp_path / f"{name}{FINDINGS_SUFFIX}").write_text("someone's notes")
    paths = export_packet(analysis, tmp_path)
    assert paths.findings.name == f"{name}-2{FINDINGS_SUFFIX}" and paths.html.name == f"{name}-2.html"
    assert (tmp_path / f"{name}{FINDINGS_SUFFIX}").read_text() == "someone's notes"


def test_a_findings_file_that_cannot_be_written_leaves_no_file_of_the_export(tmp_path, monkeypatch):
    """The name is taken after the free-name check (another writer got there first): nothing of this export stays."""
    analysis = explorer.analyze(ROOT / "refused-hash-mismatch")
    name = "refused-hash-mismatch"
    real = files.free_stem

    def taken_later(out_dir, base, suffixes):
        stem = real(out_dir, base, suffixes)
        (out_dir / f"{stem}{FINDINGS_SUFFIX}").write_text("another writer")
        return stem

    monkeypatch.setattr(files, "free_stem", taken_later)
    with pytest.raises(FileExistsError):
        export_packet(analysis, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}{FINDINGS_SUFFIX}"]
