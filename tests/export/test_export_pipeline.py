"""One export pipeline for four kinds: every file named, findings as a ticket, hostile names as text.

The contract every kind shares (explorer.export.pages.export): the returned paths name every file written (a
split section's parts each), the findings file shows identifiers in code spans and every name as text, a pair
export carries the emulation matrix its page computed, a refused packet's findings report nothing of the
packet, and a campaign whose packet directory name is not UTF-8 exports.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import markdown_it

import explorer
from explorer.analysis.emulation.shown import SHOWN_SET
from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.export.files import FINDINGS_SUFFIX, png_suffixes, write_export
from explorer.export.findings import markdown_text
from explorer.export.kinds import NOT_REPORTED
from explorer.export.pages import export_campaign, export_packet, export_pair, export_replay
from explorer.samples import packets as samples

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "sample_packets"
PAGED = ROOT / samples.PAIR_NAMES["paged"]
CONTIGUOUS = ROOT / samples.PAIR_NAMES["contiguous"]
CAMPAIGN = ROOT / "campaign-qwen36-request2"
UNDECODABLE = b"\xff"  # a byte no UTF-8 name holds
CRAFTED_MODEL = "# evil <script>alert(1)</script> ![x](http://example.invalid/x.png) @someone"
COMMONMARK = markdown_it.MarkdownIt("commonmark")


def _html_of(markdown: str) -> str:
    return COMMONMARK.render(markdown)


def _campaign(root: Path) -> dict:
    (campaign,) = build_campaign_report(run_campaigns(root, jobs=1))["campaigns"]
    return campaign


def test_every_file_written_is_named_and_a_split_sections_parts_each(tmp_path):
    pngs = png_suffixes({"pair": [b"part one", b"part two"]})
    paths = write_export(
        tmp_path, "a-vs-b", (".comparison.json", "{}\n"), "<html></html>", pngs, lambda stem, names: "", ("pair",)
    )
    assert [p.name for p in paths.pngs] == ["a-vs-b-pair-1.png", "a-vs-b-pair-2.png"]
    assert sorted(p.name for p in paths.files) == sorted(p.name for p in tmp_path.iterdir())
    assert len(paths.files) == 5


def test_a_pair_export_carries_the_emulation_matrix_its_page_computed(tmp_path):
    pair = explorer.compare(PAGED, CONTIGUOUS)  # as the app re-reads it at export time: no emulation requested
    paths = export_pair(pair, tmp_path, emulate="default")
    matrix = json.loads(paths.report.read_text())["emulationMatrix"]
    assert matrix is not None and matrix["rows"]
    findings = paths.findings.read_text()
    assert "not computed (no emulation was requested" not in findings
    assert "side a: `paged_two_pass`" in findings and "side b: `mlx_two_pass`" in findings
    page = paths.html.read_text()
    assert "pair-emulation-matrix-pane" in page and "no emulation was requested" not in page


def test_findings_files_are_tickets_identifiers_in_code_spans_and_no_absolute_path(tmp_path):
    run = explorer.replay(ROOT / "replay-qwen36-pair", partner=PAGED)
    written = [
        export_packet(explorer.analyze(ROOT / "injected-error-head5"), tmp_path),
        export_pair(explorer.compare(PAGED, CONTIGUOUS, emulate="default"), tmp_path),
        export_replay(run, tmp_path),
        export_campaign(_campaign(CAMPAIGN), tmp_path),
    ]
    for paths in written:
        markdown = paths.findings.read_text()
        assert "\\_" not in markdown, paths.findings.name
        assert str(REPO) not in markdown and os.path.abspath(ROOT) not in markdown, paths.findings.name
        headings = re.findall(r"^(#+) (.*)$", markdown, re.MULTILINE)  # one layout: title, findings, ..., figures
        assert headings[0][1].endswith(": findings") and [h for _, h in headings[1:2]] == ["Findings"]
        assert [h for _, h in headings[-2:]] == ["Figures", "Files"], paths.findings.name
        assert [level for level, _ in headings] == ["#"] + ["##"] * (len(headings) - 1)
    replay = written[2].findings.read_text()
    assert "```" not in replay  # sentences and a table, not the terminal's dump
    assert "| capture | partner | nativeSDPA | pagedFixed | pagedSegmented |" in replay
    assert f"- packet: {CONTIGUOUS.name} (analyzed)" in replay
    arm = "- Arm nativeSDPA: admitted, the capture's own dispatch: 0 of 2048 elements differ from the capture"
    assert arm in replay
    assert "`mlx_two_pass`" in written[1].findings.read_text()


def test_a_campaign_findings_file_has_its_figure_and_is_named_by_request_and_model(tmp_path):
    paths = export_campaign(_campaign(CAMPAIGN), tmp_path)
    assert paths.findings.name == f"campaign-Qwen3.6_synthetic_campaign_-request-2{FINDINGS_SUFFIX}"
    markdown = paths.findings.read_text()
    assert markdown.startswith("# Campaign of request 2, model Qwen3.6 (synthetic campaign): findings\n")
    assert "## Figures" in markdown and f"]({paths.report.name})" in markdown


def test_every_name_in_a_campaign_findings_file_is_text(tmp_path):
    campaign = _campaign(CAMPAIGN)
    campaign["key"]["modelID"] = CRAFTED_MODEL
    first = campaign["firstOutputsDiffer"]
    backend = next(iter(first["packets"]))
    first["packets"][backend] = ["<img src=x onerror=alert(1)>", "line\n# injected heading"]
    paths = export_campaign(campaign, tmp_path)
    rendered = _html_of(paths.findings.read_text())
    assert "<script" not in rendered and "<img" not in rendered
    links = re.findall(r'<a href="([^"]*)"', rendered)
    assert links == [paths.report.name, paths.html.name]  # the files beside it, nothing a name put there
    assert re.findall(r"<h1>", rendered) == ["<h1>"]  # the title alone; no name opens a heading
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered  # shown, as text
    assert markdown_text(CRAFTED_MODEL).count("`") >= 2


def test_a_campaign_with_a_directory_name_that_is_not_utf8_exports(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(CAMPAIGN, root / CAMPAIGN.name)
    packet = next(p for p in sorted((root / CAMPAIGN.name).iterdir()) if p.name.startswith("paged"))
    os.rename(os.fsencode(packet), os.fsencode(packet) + b"-" + UNDECODABLE)
    paths = export_campaign(_campaign(root), tmp_path / "out")
    assert all(path.is_file() for path in paths.files)
    assert "\\xff" in paths.findings.read_text()


def test_a_refused_packets_findings_report_nothing_of_its_contents(tmp_path):
    analysis = explorer.analyze(ROOT / "refused-hash-mismatch")
    selection = analysis.admission.selection or {}
    markdown = export_packet(analysis, tmp_path).findings.read_text()
    assert NOT_REPORTED in markdown
    for key in ("requestID", "modelLayerIndex", "dispatch"):
        if key in selection:
            assert f": {selection[key]}\n" not in markdown.split("## Selection", 1)[1]


def test_the_default_emulation_set_is_the_views(tmp_path):
    from explorer.views.packet.emulations import EmulationsView

    assert tuple(EmulationsView(explorer.analyze(ROOT / "injected-error-head5")).ids()) == SHOWN_SET
