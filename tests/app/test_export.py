"""Headless export: a self-contained HTML page and the JSON report for every status, never overwriting, and `explorer report` with one PNG per view."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

import explorer
from app_support import MIN_PIXEL_STD, PLOT_SLUGS, REPO, artifact, pixel_std
from explorer.export import SECTION_CLASS, export_packet, report_text
from explorer.ui import catalog
from explorer.views import VIEWS

ROOT = catalog.default_root()
BY_STATUS = {"analyzed": "injected-error-head5", "inconclusive": "nan-stored-values",
             "refused": "refused-hash-mismatch"}
EXIT_BY_STATUS = {"analyzed": 0, "inconclusive": 3, "refused": 4}
# Anything the page would fetch from a web server: script/link sources, Bokeh stylesheet URLs, CSS imports.
REMOTE_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|"url"\s*:\s*"(?:https?:)?//|"""
                              r"""@import\s+(?:url\()?["']?(?:https?:)?//""")
SCRIPT_CODE = re.compile(r"<script(?: type=\"text/javascript\")?>.*?</script>", re.S)  # inlined library code
REPORT_TIMEOUT_S = 300


@pytest.mark.parametrize("status", sorted(BY_STATUS))
def test_export_writes_a_self_contained_page_and_the_report(tmp_path, status):
    name = BY_STATUS[status]
    analysis = explorer.analyze(ROOT / name)
    paths = export_packet(analysis, tmp_path)
    assert (paths.html, paths.report, paths.pngs) == (tmp_path / f"{name}.html", tmp_path / f"{name}.report.json", ())
    assert paths.report.read_text() == report_text(analysis)
    assert json.loads(paths.report.read_text()) == analysis.report()
    page = paths.html.read_text()
    assert REMOTE_REFERENCE.findall(SCRIPT_CODE.sub("", page)) == []
    for slug, _, _ in VIEWS:
        assert f"{SECTION_CLASS}-{slug}" in page
    assert analysis.status in page


def test_export_never_overwrites_a_file(tmp_path):
    name = BY_STATUS["analyzed"]
    analysis = explorer.analyze(ROOT / name)
    first = export_packet(analysis, tmp_path)
    written = first.html.read_bytes()
    second = export_packet(analysis, tmp_path)
    assert (second.html.name, second.report.name) == (f"{name}-2.html", f"{name}-2.report.json")
    assert first.html.read_bytes() == written
    (tmp_path / f"{name}-3-{VIEWS[-1][0]}.png").write_bytes(b"")  # any file of a name's set makes it taken
    assert export_packet(analysis, tmp_path).html.name == f"{name}-4.html"


def _report(packet, out):
    return subprocess.run([sys.executable, "-m", "explorer", "report", str(packet), "--out", str(out)],
                          capture_output=True, text=True, timeout=REPORT_TIMEOUT_S, cwd=REPO)


def test_report_command_writes_html_json_and_one_png_per_view(tmp_path):
    name = BY_STATUS["analyzed"]
    result = _report(ROOT / name, tmp_path / "out")
    assert result.returncode == EXIT_BY_STATUS["analyzed"], result.stderr
    out = tmp_path / "out"
    pngs = [out / f"{name}-{slug}.png" for slug, _, _ in VIEWS]
    assert result.stdout.splitlines() == [str(out / f"{name}.html"), str(out / f"{name}.report.json"),
                                          *map(str, pngs)]
    assert json.loads((out / f"{name}.report.json").read_text()) == explorer.analyze(ROOT / name).report()
    for (slug, _, _), png in zip(VIEWS, pngs):
        shutil.copyfile(png, artifact(f"report-{png.name}"))
        if slug in PLOT_SLUGS:
            assert pixel_std(png.read_bytes()) > MIN_PIXEL_STD, slug


def test_report_command_explains_a_refused_packet_and_exits_like_analyze(tmp_path):
    name = BY_STATUS["refused"]
    result = _report(ROOT / name, tmp_path)
    assert result.returncode == EXIT_BY_STATUS["refused"], result.stderr
    report = json.loads((tmp_path / f"{name}.report.json").read_text())
    assert report["status"] == "refused"
    assert len(list(tmp_path.glob(f"{name}-*.png"))) == len(VIEWS)
    assert "sha256_mismatch" in (tmp_path / f"{name}.html").read_text()
