"""The Raw view: the report it shows is the one the export writes beside it, and long lines wrap.

Issue 40 item 6: the exported Raw view said `emulations: null` while the report.json beside it held the emulations
the Emulations view showed, and its last limitation ran past the right edge.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import panel as pn

from explorer.export.pages import export_packet
from explorer.views.packet.raw import JSON_WRAP_STYLESHEET

from views_support import BUILDERS

DOCUMENT = re.compile(r'<script type="application/json"[^>]*>(.*?)</script>', re.DOTALL)


def _models(value):
    """Every serialized Bokeh model in a document's JSON."""
    if isinstance(value, dict):
        if isinstance(value.get("attributes"), dict):
            yield value
        for item in value.values():
            yield from _models(item)
    elif isinstance(value, list):
        for item in value:
            yield from _models(item)


def test_the_exported_raw_view_shows_the_report_written_beside_it(analyses, tmp_path):
    written = export_packet(analyses["qwen36-bf16-t64"], tmp_path)
    report = json.loads(Path(written.report).read_text(encoding="utf-8"))
    assert report["emulations"]  # the export attaches the Emulations view's default set
    page = Path(written.html).read_text(encoding="utf-8")
    document = json.loads(DOCUMENT.search(page).group(1))
    (shown,) = [
        m["attributes"] for m in _models(document) if "report-json" in (m["attributes"].get("css_classes") or [])
    ]
    assert json.loads(shown["text"]) == report
    assert JSON_WRAP_STYLESHEET in shown["stylesheets"]


def test_every_json_tree_of_the_raw_view_wraps_long_strings(analyses):
    view = BUILDERS["raw"](analyses["last-row-mismatch"], None)
    trees = view.select(pn.pane.JSON)
    assert {tuple(tree.css_classes) for tree in trees} == {("report-json",), ("snapshot-json",)}
    assert all(JSON_WRAP_STYLESHEET in tree.stylesheets for tree in trees)
    assert "white-space: pre-wrap" in JSON_WRAP_STYLESHEET and ".json-formatter-string" in JSON_WRAP_STYLESHEET
