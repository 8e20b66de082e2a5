"""The served app's replay mode in Debian's chromium.

The runs listed under their packet, `?packet=NAME&replay=RUN` drawing the Replay view (matrix, arms, ladder,
map, readback), the element drill-down, unknown `replay=`, the export, offline, nothing clipped at 1280 and
1920 px.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import explorer
from explorer.export.browser import wait_drawn
from explorer.export.kinds import REPLAY_SECTION
from explorer.export.static_page import CAPTION_CLASS, SECTION_CLASS
from explorer.ui import catalog

from app_support import PAGE_TIMEOUT_MS, artifact, deep_text, layout_offenders, open_packet, outside_requests

ROOT = catalog.default_root()
CONTIGUOUS, PAGED = "qwen36-pair-contiguous", "qwen36-pair-paged"
RUN, READBACK = "replay-qwen36-pair", "replay-qwen36-pair-readback-differs"
RUNS = ("replay-qwen36-pair", "replay-qwen36-pair-readback-differs", "replay-qwen36-pair-segmented-exit-1")
REPLAY_QUERY = f"?packet={CONTIGUOUS}&replay={RUN}"
REPLAY_VIEW = "view-replay"
ELEMENT_TITLE = re.compile(r"Query head (\d+), channel (\d+)")
HEX = re.compile(r"0x[0-9a-f]{4}")
WIDTHS, LAYOUT_HEIGHT = (1280, 1920), 900
CLICK_AT = (0.5, 0.5)  # fractions of the map's canvas
POLL_MS = 250
LIVE_WORDS = re.compile(r"\b(click\w*|hover\w*|tooltips?|shown)\b", re.IGNORECASE)  # an export speaks as a page


def _open_run(page, base_url: str, query: str = REPLAY_QUERY, run: str = RUN):
    open_packet(page, base_url, query)
    page.wait_for_selector(f".replay-status-line[data-run='{run}']", timeout=PAGE_TIMEOUT_MS)
    wait_drawn(page, REPLAY_VIEW, PAGE_TIMEOUT_MS)
    return page.locator(f".{REPLAY_VIEW}").first


def _element(page) -> tuple[tuple[int, int], list[str]]:
    text = deep_text(page.locator(".replay-element-detail").first)
    head, channel = ELEMENT_TITLE.search(text).groups()
    return (int(head), int(channel)), HEX.findall(text)


def test_runs_are_listed_under_their_packet_and_open_in_one_click(page, server, requested):
    open_packet(page, server, f"?packet={CONTIGUOUS}")
    page.wait_for_selector(".replay-button", timeout=PAGE_TIMEOUT_MS)
    labels = [label.strip() for label in page.locator(".replay-button button").all_inner_texts()]
    assert labels == list(RUNS)
    page.locator(".replay-button button", has_text=re.compile(f"^{re.escape(READBACK)}$")).click()
    page.wait_for_selector(
        f".replay-status-line[data-run='{READBACK}'][data-status='inconclusive']", timeout=PAGE_TIMEOUT_MS
    )
    page.wait_for_url(lambda url: f"replay={READBACK}" in url, timeout=PAGE_TIMEOUT_MS)
    wait_drawn(page, REPLAY_VIEW, PAGE_TIMEOUT_MS)
    assert "replay_readback_differs" in deep_text(page.locator(f".{REPLAY_VIEW}").first)
    open_packet(page, server, f"?packet={PAGED}")
    page.wait_for_selector(".no-replays", timeout=PAGE_TIMEOUT_MS)
    assert outside_requests(requested) == []


def test_the_replay_view_draws_the_matrix_arms_ladder_map_and_readback(page, server, requested):
    view = _open_run(page, server)
    run = explorer.replay(ROOT / RUN, packet=ROOT / CONTIGUOUS, partner=ROOT / PAGED)
    assert page.locator(f".replay-status-line[data-status='{run.status}']").count() == 1
    cells = page.locator(".replay-matrix .matrix-cell")
    shown = {
        (c.get_attribute("data-row"), c.get_attribute("data-column")): int(c.get_attribute("data-count"))
        for c in cells.all()
    }
    expected = {
        (a, b): run.matrix.mismatched[i][j]
        for i, a in enumerate(run.matrix.labels)
        for j, b in enumerate(run.matrix.labels)
    }
    assert shown == expected
    zero, other = (
        page.locator(f".replay-matrix .matrix-cell[data-count='{n}']").first.evaluate(
            "el => getComputedStyle(el).backgroundColor"
        )
        for n in (0, run.matrix.mismatched[0][1])
    )
    assert zero != other
    states = {s.get_attribute("data-arm"): s.get_attribute("data-state") for s in page.locator(".arm-state").all()}
    assert states == dict.fromkeys(run.arms, "admitted")
    text = deep_text(view)
    for part in (
        "Matrix",
        "Arms",
        "Ladder",
        "Where an arm differs",
        "Readback",
        "byte-identical",
        "paged_segmented_decode",
        "analysis.json",
    ):
        assert part in text, part
    assert view.locator("canvas").count() > 0
    reading = page.locator(".replay-reading").first
    assert " ".join(deep_text(reading).split()) == f"Matrix: {run.report()['matrix']['sentence']}"
    assert reading.bounding_box()["y"] < page.locator(".replay-matrix").first.bounding_box()["y"]
    assert outside_requests(requested) == []


def test_clicking_the_map_shows_every_outputs_value_and_bits(page, server):
    _open_run(page, server)
    run = explorer.replay(ROOT / RUN, packet=ROOT / CONTIGUOUS, partner=ROOT / PAGED)
    (head, channel), patterns = _element(page)
    first = run.arms["nativeSDPA"].partner.first_positions[0]
    assert (head, channel) == tuple(first)
    canvas = page.locator(".replay-map canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + box["width"] * CLICK_AT[0], box["y"] + box["height"] * CLICK_AT[1])
    deadline = time.monotonic() + PAGE_TIMEOUT_MS / 1000
    while _element(page)[0] == (head, channel) and time.monotonic() < deadline:
        page.wait_for_timeout(POLL_MS)  # the detail is redrawn by the server after the tap
    assert _element(page)[0] != (head, channel)
    (head, channel), patterns = _element(page)
    capture = run.packet.admission.tensors["output"].bits[0, head, 0, channel]
    partner = run.partner.admission.tensors["output"].bits[0, head, 0, channel]
    arms = [run.arms[name].output_bits[head, channel] for name in run.arms]
    assert patterns == [f"0x{int(bits):04x}" for bits in (capture, partner, *arms)]


def test_an_unknown_replay_is_a_note_and_the_packet_stays_open(page, server):
    open_packet(page, server, f"?packet={PAGED}&replay={RUN}")
    message = page.locator(".shell-message").first
    message.wait_for(timeout=PAGE_TIMEOUT_MS)
    assert "is not a listed replay run" in deep_text(message)
    assert page.locator(f".status-line[data-packet='{PAGED}']").is_visible()
    assert not page.locator(".replay-area").is_visible()


def test_replay_export_writes_a_captioned_page_a_png_and_the_report(page, server, browser):
    _open_run(page, server)
    page.locator(".replay-export button").click()
    note = page.locator(".replay-export-note")
    note.wait_for(timeout=PAGE_TIMEOUT_MS)
    html_path, png_path, json_path = (
        Path(deep_text(note.locator(f".export-{kind}")).strip()) for kind in ("html", "png", "json")
    )
    report = json.loads(json_path.read_text())
    assert report["status"] == "analyzed" and report["partner"]["name"] == PAGED
    assert png_path.stat().st_size > 0
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        exported = context.new_page()
        exported.goto(html_path.as_uri())
        section = f"{SECTION_CLASS}-{REPLAY_SECTION}"
        wait_drawn(exported, section)
        caption = exported.locator(f".{section} .{CAPTION_CLASS}").first.inner_text()
        assert RUN in caption and CONTIGUOUS in caption and PAGED in caption
        shown = " ".join(deep_text(exported.locator(f".{section}").first).split())
        assert report["matrix"]["sentence"] in shown and "arm drawn: nativeSDPA" in shown
        assert LIVE_WORDS.findall(shown) == []
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_replay_view_has_no_layout_offenders(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": LAYOUT_HEIGHT})
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        _open_run(page, server)
        page.wait_for_selector(".replay-button", timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=artifact(f"layout-{width}-replay.png"), full_page=True)
        for root in ("#main", "#sidebar"):
            found = layout_offenders(page, root)
            assert found["leaves"] > 0, root
            problems = found["overlaps"] + found["outside"] + found["clipped"]  # the packet list's too
            assert problems == [], (root, problems)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
