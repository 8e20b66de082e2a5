"""Headless export: self-contained HTML and JSON for every status, never overwriting, PNGs.

Headless export: a self-contained HTML page and the JSON report for every status, never overwriting, and
`explorer report` with one PNG per view.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import explorer
from explorer.analysis.report import report_text
from explorer.export.browser import hide_controls, wait_drawn
from explorer.export.kinds import SHA_DIGITS, UNKNOWN, caption_fields, export_head, shown_emulations
from explorer.export.pages import export_packet
from explorer.export.split import MAX_PNG_HEIGHT
from explorer.export.static_page import CAPTION_CLASS, SECTION_CLASS
from explorer.ui import catalog
from explorer.views import VIEWS

from app_support import (
    ENABLED_INPUTS_JS,
    EXPORT_WIDTH,
    MIN_PIXEL_STD,
    PLOT_SLUGS,
    REPO,
    VISIBLE_JS,
    artifact,
    pixel_std,
)

ROOT = catalog.default_root()
BY_STATUS = {
    "analyzed": "injected-error-head5",
    "inconclusive": "nan-stored-values",
    "refused": "refused-hash-mismatch",
}
EXIT_BY_STATUS = {"analyzed": 0, "inconclusive": 3, "refused": 4}
# Anything the page would fetch from a web server: script/link sources, Bokeh stylesheet URLs, CSS imports.
REMOTE_REFERENCE = re.compile(
    r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|"url"\s*:\s*"(?:https?:)?//|"""
    r"""@import\s+(?:url\()?["']?(?:https?:)?//"""
)
SCRIPT_CODE = re.compile(r"<script(?: type=\"text/javascript\")?>.*?</script>", re.DOTALL)  # inlined library code
REPORT_TIMEOUT_S = 300
TITLE_BAND_ROWS = 70  # the caption band and the view's title of an exported PNG, at least


@pytest.mark.parametrize("status", sorted(BY_STATUS))
def test_export_writes_a_self_contained_page_and_the_report(tmp_path, status):
    name = BY_STATUS[status]
    analysis = explorer.analyze(ROOT / name)
    paths = export_packet(analysis, tmp_path)
    assert (paths.html, paths.report, paths.pngs) == (tmp_path / f"{name}.html", tmp_path / f"{name}.report.json", ())
    assert paths.findings == tmp_path / f"{name}.findings.md"
    shown = shown_emulations(analysis)  # the JSON holds the emulations the page's Emulations view shows
    assert paths.report.read_text() == report_text(shown)
    assert json.loads(paths.report.read_text()) == shown.report()
    page = paths.html.read_text()
    assert REMOTE_REFERENCE.findall(SCRIPT_CODE.sub("", page)) == []
    for slug, _, _ in VIEWS:
        assert f"{SECTION_CLASS}-{slug}" in page
    assert analysis.status in page


def test_export_never_overwrites_a_file(tmp_path):
    name = BY_STATUS["refused"]  # the naming rule is the same for every status; a refused page is the quickest
    analysis = explorer.analyze(ROOT / name)
    first = export_packet(analysis, tmp_path)
    written = first.html.read_bytes()
    second = export_packet(analysis, tmp_path)
    assert (second.html.name, second.report.name) == (f"{name}-2.html", f"{name}-2.report.json")
    assert first.html.read_bytes() == written
    (tmp_path / f"{name}-3-{VIEWS[-1][0]}.png").write_bytes(b"")  # any file of a name's set makes it taken
    assert export_packet(analysis, tmp_path).html.name == f"{name}-4.html"


def _report(packet, out):
    return subprocess.run(
        [sys.executable, "-m", "explorer", "report", str(packet), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=REPORT_TIMEOUT_S,
        cwd=REPO,
    )


@pytest.mark.browser  # explorer report renders its PNGs in chromium
def test_report_command_writes_html_json_and_the_pngs_of_every_view_at_most_2000_px_each(tmp_path):
    name = BY_STATUS["analyzed"]
    result = _report(ROOT / name, tmp_path / "out")
    assert result.returncode == EXIT_BY_STATUS["analyzed"], result.stderr
    out = tmp_path / "out"
    lines = result.stdout.splitlines()
    assert lines[:2] == [str(out / f"{name}.html"), str(out / f"{name}.report.json")]
    pngs = [Path(line) for line in lines[2:-1]]
    assert lines[-1] == str(out / f"{name}.findings.md")
    report = json.loads((out / f"{name}.report.json").read_text())
    assert report == shown_emulations(explorer.analyze(ROOT / name)).report()
    assert report["emulations"] is not None  # the Emulations PNG's counts are in the JSON beside it
    findings = (out / f"{name}.findings.md").read_text()
    assert all(f"]({png.name})" in findings for png in pngs)  # every PNG linked, relative to the findings file
    for slug, _, _ in VIEWS:  # one PNG per view, or its numbered parts
        parts = [png for png in pngs if png.name == f"{name}-{slug}.png" or png.name.startswith(f"{name}-{slug}-")]
        assert parts, slug
        for png in parts:
            shutil.copyfile(png, artifact(f"report-{png.name}"))
            assert Image.open(png).height <= MAX_PNG_HEIGHT, png.name
        # every later part opens with the first part's caption band and view title (the same pixels)
        band = np.asarray(Image.open(parts[0]).convert("RGB"))[:TITLE_BAND_ROWS]
        for png in parts[1:]:
            assert np.array_equal(np.asarray(Image.open(png).convert("RGB"))[:TITLE_BAND_ROWS], band), png.name
        if slug in PLOT_SLUGS:
            assert pixel_std(parts[0].read_bytes()) > MIN_PIXEL_STD, slug


@pytest.mark.browser  # explorer report renders its PNGs in chromium
def test_report_command_explains_a_refused_packet_and_exits_like_analyze(tmp_path):
    name = BY_STATUS["refused"]
    result = _report(ROOT / name, tmp_path)
    assert result.returncode == EXIT_BY_STATUS["refused"], result.stderr
    report = json.loads((tmp_path / f"{name}.report.json").read_text())
    assert report["status"] == "refused"
    assert [png.name for png in tmp_path.glob(f"{name}-*.png")] == [f"{name}-summary.png"]  # one, not seven alike
    assert "sha256_mismatch" in (tmp_path / f"{name}.html").read_text()


@pytest.mark.browser  # renders PNGs in chromium
def test_pngs_are_written_from_a_thread_running_an_asyncio_loop(tmp_path):
    """A Jupyter cell runs inside an asyncio loop, where Playwright's sync API refuses to start: the PNGs render on
    a thread of their own."""
    analysis = explorer.analyze(ROOT / BY_STATUS["analyzed"])

    async def in_a_cell():
        return export_packet(analysis, tmp_path, name="cell", png=True)

    with ThreadPoolExecutor(max_workers=1) as kernel:  # not this thread: it may hold the session's browser loop
        paths = kernel.submit(asyncio.run, in_a_cell()).result()
    assert paths.html.is_file() and paths.report.is_file() and len(paths.pngs) >= len(VIEWS)
    assert all(pixel_std(png.read_bytes()) > 0 for png in paths.pngs)


def test_caption_names_packet_status_identity_selection_hash_version_and_date():
    analysis = explorer.analyze(ROOT / BY_STATUS["analyzed"])
    report = analysis.report()
    fields = dict(caption_fields(analysis, "shown-name", "2026-01-02 03:04 UTC"))
    assert fields == {
        "packet": "shown-name",
        "status": "analyzed",
        "model": report["identity"]["modelID"],
        "backend": report["identity"]["backend"],
        "request": str(report["selection"]["requestID"]),
        "output index": str(report["selection"]["outputIndex"]),
        "layer": str(report["selection"]["modelLayerIndex"]),
        "packetSHA256": report["packet"]["packetSHA256"][:SHA_DIGITS],
        "explorer": explorer.__version__,
        "exported": "2026-01-02 03:04 UTC",
    }
    refused = dict(caption_fields(explorer.analyze(ROOT / BY_STATUS["refused"]), "r", "now"))
    assert refused["status"] == "refused" and refused["model"] == refused["layer"] == UNKNOWN


def test_exports_open_on_the_head_with_the_largest_score_unless_one_was_chosen():
    analysis = explorer.analyze(ROOT / BY_STATUS["analyzed"])
    worst = analysis.report()["score"]["worstHead"]
    assert export_head(analysis, None) == worst and worst != 0
    assert export_head(analysis, 2) == 2
    assert export_head(explorer.analyze(ROOT / BY_STATUS["refused"]), None) == 0


@pytest.mark.parametrize("status", sorted(BY_STATUS))
def test_exported_page_captions_every_view_and_its_pngs_show_no_toolbar_or_control(tmp_path, browser, status):
    analysis = explorer.analyze(ROOT / BY_STATUS[status])
    paths = export_packet(analysis, tmp_path)
    digest = analysis.report()["packet"]["packetSHA256"][:SHA_DIGITS]
    context = browser.new_context(viewport={"width": EXPORT_WIDTH, "height": 1000})
    try:
        page = context.new_page()
        page.goto(paths.html.as_uri())
        for slug, _, _ in VIEWS:
            wait_drawn(page, f"{SECTION_CLASS}-{slug}", settle_ms=0)  # hide_controls settles once below
            caption = page.locator(f".{SECTION_CLASS}-{slug}").first.locator(f".{CAPTION_CLASS}").first
            assert caption.is_visible(), slug
            assert BY_STATUS[status] in caption.inner_text() and digest in caption.inner_text(), slug
        has_plots = page.evaluate(VISIBLE_JS, ".bk-Canvas") > 0
        assert (page.evaluate(VISIBLE_JS, ".bk-Toolbar") > 0) == has_plots
        assert page.evaluate(ENABLED_INPUTS_JS) == [], "a control on a static page does nothing"
        assert page.evaluate("document.documentElement.scrollWidth") <= EXPORT_WIDTH
        hide_controls(page)  # what render_pngs does before its screenshots
        assert page.evaluate(VISIBLE_JS, ".bk-Toolbar") == 0
        if analysis.admission.snapshot is not None:  # shown in a card the app keeps collapsed
            assert page.locator(".snapshot-text").first.is_visible()
        page.screenshot(path=artifact(f"export-static-{status}.png"), full_page=True)
    finally:
        context.close()


def test_report_without_out_writes_where_the_app_and_notebooks_export(tmp_path, monkeypatch):
    from explorer import cli
    from explorer.export import files
    from explorer.export import pages as export
    from explorer.notebook.packet import export_dir

    written = []
    monkeypatch.setattr(
        export,
        "export_packet",
        lambda analysis, out, **_settings: (
            written.append(out) or files.ExportPaths(html=out / "x.html", report=out / "x.report.json")
        ),
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(files.EXPORT_DIR_ENV, raising=False)
    assert cli.main(["report", str(ROOT / BY_STATUS["analyzed"])]) == EXIT_BY_STATUS["analyzed"]
    assert written == [tmp_path.resolve() / files.DEFAULT_EXPORT_DIR] == [export_dir()]
