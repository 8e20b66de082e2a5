"""The replay export speaks as a page, not as the live app (docs/architecture.md, views).

No click, hover, tooltip or "shown" words in what it displays; the matrix's sentence leads
it; its info table has a header.
"""

from __future__ import annotations

import html
import json
import re

import panel as pn
import pytest

import explorer
from explorer.export.pages import export_replay
from explorer.views.replay.view import build

from replay_support import PARTNER, write_root

LIVE_WORDS = re.compile(r"\b(click\w*|hover\w*|tooltips?|shown)\b", re.IGNORECASE)
DOCUMENT = re.compile(r'<script type="application/json" id="[^"]+">\s*(.*?)\s*</script>', re.DOTALL)
TAG = re.compile(r"<[^>]+>")


def _displayed(page: str) -> list[str]:
    """The text the exported page displays: its markup panes' and headings' text, tags and attributes dropped."""
    texts: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("text", "title", "label") and isinstance(value, str):
                    texts.append(TAG.sub(" ", html.unescape(html.unescape(value))))  # markup is escaped twice
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for document in DOCUMENT.findall(page):
        walk(json.loads(document))
    return texts


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay-export")
    run = write_root(root)
    return explorer.replay(run, partner=root / PARTNER), root / "out"


@pytest.fixture(scope="module")
def exported(replayed):
    run, out = replayed
    return export_replay(run, out, name="run").html.read_text()


def test_the_live_view_keeps_its_instructions_as_hints(replayed):
    live = "\n".join(str(pane.object) for pane in build(replayed[0]).select(pn.pane.HTML))
    assert "Click a cell to show that element" in live and "Hover a number for its full value" in live


def test_the_exported_replay_page_has_no_live_page_words(exported):
    texts = _displayed(exported)
    assert any("Where nativeSDPA differs" in text for text in texts)  # the text was found at all
    offending = [match.group(0) for text in texts for match in LIVE_WORDS.finditer(text)]
    assert offending == []
    assert "arm drawn: nativeSDPA" in " ".join(" ".join(text.split()) for text in texts)


def test_the_matrix_sentence_leads_the_export_and_the_info_table_has_a_header(exported):
    texts = " ".join(" ".join(text.split()) for text in _displayed(exported))
    sentence = (
        "nativeSDPA reproduces the capture bit for bit; pagedFixed and pagedSegmented reproduce the partner "
        "bit for bit; pagedFixed and pagedSegmented are byte-identical."
    )
    assert texts.index(sentence) < texts.index("Elements that differ")
    run_table = re.search(r'<table class=\\?"replay-run\\?".*?</thead>', html.unescape(html.unescape(exported)))
    assert run_table is not None
    headers = re.findall(r"<th[^>]*>(.*?)</th>", run_table.group(0).replace('\\"', '"'))
    assert headers and all(header.strip() for header in headers)
