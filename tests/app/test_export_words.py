"""No exported page speaks as a live page: no click, hover, tooltip or mouse word, no `shown: -1`.

The visible text of every exported HTML is read, and so of every PNG taken from it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

import explorer
from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.export.pages import export_campaign, export_packet, export_pair, export_replay
from explorer.ui import catalog

ROOT = catalog.default_root()
PACKETS = ("injected-error-head5", "nan-stored-values", "refused-hash-mismatch", "last-row-mismatch")
PAIR = ("qwen36-pair-paged", "qwen36-pair-contiguous-input-differs")
REPLAY = ("replay-qwen36-pair", "qwen36-pair-contiguous", "qwen36-pair-paged")  # run, its packet, the partner
CAMPAIGN = "campaign-qwen36-request2"
# Sentences about the live page's controls (issue 39): true only where the controls are live.
LIVE_SENTENCES = ("the other settings apply to the default set", "One diagnostic at a time")
LIVE_WORDS = re.compile(r"\b(?:click\w*|hover\w*|tooltips?|mouse\w*|tap\w*)\b|\bshown:\s*-?\d", re.IGNORECASE)
# The text a page shows: every string field of its Bokeh documents that is drawn as text (HTML panes, titles,
# labels); a model's hover templates and scripts are never shown as text.
SHOWN_FIELDS = re.compile(r'"(?:text|title|label)"\s*:\s*("(?:[^"\\]|\\.)*")')
DOCS_JSON = re.compile(r'<script type="application/json"[^>]*>(.*?)</script>', re.DOTALL)
TAG = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.DOTALL | re.IGNORECASE)


def shown_text(page: str) -> str:
    """The text an exported page shows: the text fields of its embedded documents, unescaped and without tags."""
    texts = [
        TAG.sub(" ", html.unescape(json.loads(literal)))
        for blob in DOCS_JSON.findall(page)
        for literal in SHOWN_FIELDS.findall(html.unescape(blob))
    ]
    return "\n".join(texts)


def live_words(page_path: Path) -> list[str]:
    """Every live-page word of an exported page, with a little context, for the assertion message."""
    text = shown_text(page_path.read_text(encoding="utf-8"))
    assert len(text) > 200, "the page's shown text was not found: the extraction no longer matches the page"
    return [text[max(0, m.start() - 60) : m.end() + 30].replace("\n", " ") for m in LIVE_WORDS.finditer(text)]


def test_the_words_test_finds_a_live_word():
    page = '<script type="application/json">{"text": "&lt;p&gt;Click a cell&lt;/p&gt;"}</script>'
    assert shown_text(page).strip() == "Click a cell" and LIVE_WORDS.search(shown_text(page))


@pytest.mark.parametrize("name", PACKETS)
def test_a_packet_export_has_no_live_page_word(tmp_path, name):
    paths = export_packet(explorer.analyze(ROOT / name), tmp_path)
    assert live_words(paths.html) == []


def test_a_pair_export_has_no_live_page_word(tmp_path):
    paths = export_pair(explorer.compare(*(ROOT / name for name in PAIR)), tmp_path)
    assert live_words(paths.html) == []


def test_a_replay_export_has_no_live_page_word(tmp_path):
    run, packet, partner = (ROOT / name for name in REPLAY)
    paths = export_replay(explorer.replay(run, packet=packet, partner=partner), tmp_path)
    assert live_words(paths.html) == []


def test_a_campaign_export_has_no_live_page_word(tmp_path):
    (campaign,) = build_campaign_report(run_campaigns(ROOT / CAMPAIGN, jobs=1))["campaigns"]
    paths = export_campaign(campaign, tmp_path)
    assert live_words(paths.html) == []


def test_an_exported_page_says_nothing_about_the_live_pages_controls(tmp_path):
    paths = export_packet(explorer.analyze(ROOT / PACKETS[0]), tmp_path)
    text = " ".join(shown_text(paths.html.read_text(encoding="utf-8")).split())
    assert "Kernel arithmetic emulations" in text and "Across query heads" in text  # the sections were read
    assert [sentence for sentence in LIVE_SENTENCES if sentence in text] == []
