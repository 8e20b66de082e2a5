"""The served app's pair mode in Debian's chromium.

The partner list, one click to the pair view, its maps and element detail, unknown `compare=`, the pair
export, offline, layout at 1280 px.
"""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from PIL import Image

import explorer
from explorer.catalog.index import PacketIndex
from explorer.export.browser import PAGE_WIDTH, hide_controls, wait_drawn
from explorer.export.kinds import PAIR_SECTION, SHA_DIGITS
from explorer.export.split import MAX_PNG_HEIGHT
from explorer.export.static_page import CAPTION_CLASS, SECTION_CLASS
from explorer.ui import catalog
from explorer.ui.pairs import NO_PARTNERS

from app_support import (
    ENABLED_INPUTS_JS,
    MIN_PIXEL_STD,
    PAGE_TIMEOUT_MS,
    VISIBLE_JS,
    artifact,
    deep_text,
    layout_offenders,
    open_packet,
    outside_requests,
    pixel_std,
    wait_statuses,
)

ROOT = catalog.default_root()
PAGED, CONTIGUOUS = "qwen36-pair-paged", "qwen36-pair-contiguous"
INPUT_DIFFERS, OTHER_LAYER = "qwen36-pair-contiguous-input-differs", "qwen36-pair-contiguous-other-layer"
PAIR_QUERY = f"?packet={PAGED}&compare={CONTIGUOUS}"
PAIR_VIEW = "view-pair"
ELEMENT_TITLE = re.compile(r"Query head (\d+), channel (\d+)")
HEX = re.compile(r"0x[0-9a-f]+")
LAYOUT_WIDTH, LAYOUT_HEIGHT = 1280, 900
POLL_MS = 250
CLICK_AT = (0.62, 0.55)  # fractions of the bit map's canvas: inside its frame, away from the first differing cell


def _query(page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}


def _open_pair(page, base_url: str, query: str = PAIR_QUERY):
    open_packet(page, base_url, query)
    page.wait_for_selector(f".pair-status-line[data-a='{PAGED}'][data-b='{CONTIGUOUS}']", timeout=PAGE_TIMEOUT_MS)
    wait_drawn(page, PAIR_VIEW, PAGE_TIMEOUT_MS)
    return page.locator(f".{PAIR_VIEW}").first


def _partner_labels(page) -> list[str]:
    return [label.strip() for label in page.locator(".partner-button button").all_inner_texts()]


def _element_shown(page) -> tuple[tuple[int, int], list[str]]:
    text = deep_text(page.locator(".pair-element-detail").first)
    head, channel = ELEMENT_TITLE.search(text).groups()
    return (int(head), int(channel)), HEX.findall(text)


def _expected_hex(pair, head: int, channel: int) -> list[str]:
    tensors = [side.admission.tensors["output"] for side in (pair.a, pair.b)]
    return [f"0x{int(tensor.bits[0, head, 0, channel]):04x}" for tensor in tensors]


def _without_runtime(report: dict) -> dict:
    return {key: value for key, value in report.items() if key != "runtime"}


def test_partner_list_offers_the_same_selection_and_opens_the_pair_in_one_click(page, server, requested):
    open_packet(page, server, f"?packet={PAGED}")
    wait_statuses(page)
    page.wait_for_selector(".partner-button", timeout=PAGE_TIMEOUT_MS)
    labels = _partner_labels(page)
    assert CONTIGUOUS in labels and INPUT_DIFFERS in labels and OTHER_LAYER not in labels
    index = PacketIndex(ROOT)
    index.fill()
    assert sorted(labels) == sorted(index.partners(PAGED))
    page.locator(".partner-button button", has_text=re.compile(f"^{re.escape(CONTIGUOUS)}$")).click()
    page.wait_for_selector(f".pair-status-line[data-b='{CONTIGUOUS}']", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_url(lambda url: f"compare={CONTIGUOUS}" in url, timeout=PAGE_TIMEOUT_MS)
    assert _query(page)["packet"] == PAGED
    wait_drawn(page, PAIR_VIEW, PAGE_TIMEOUT_MS)
    view = page.locator(f".{PAIR_VIEW}").first
    for section in ("pair-bits", "pair-heads", "pair-errors"):
        canvas = view.locator(f".{section} canvas").first
        assert pixel_std(canvas.screenshot()) > MIN_PIXEL_STD, section
    page.screenshot(path=artifact("pair-view.png"), full_page=True)
    page.locator(".pair-close button").click()
    page.wait_for_url(lambda url: "compare=" not in url, timeout=PAGE_TIMEOUT_MS)
    page.locator(".pair-area").wait_for(state="hidden", timeout=PAGE_TIMEOUT_MS)
    assert page.locator(f".status-line[data-packet='{PAGED}']").is_visible()
    assert outside_requests(requested) == []


def test_a_packet_without_partners_says_so(page, server, requested):
    open_packet(page, server, f"?packet={OTHER_LAYER}")
    wait_statuses(page)
    note = page.locator(".partner-note-text[data-partners='0']")
    note.wait_for(timeout=PAGE_TIMEOUT_MS)
    assert NO_PARTNERS in deep_text(note) and page.locator(".partner-button").count() == 0
    assert outside_requests(requested) == []


def test_clicking_a_bit_map_cell_shows_both_hex_patterns_of_that_element(page, server, requested):
    view = _open_pair(page, server)
    pair = explorer.compare(ROOT / PAGED, ROOT / CONTIGUOUS)
    first, patterns = _element_shown(page)
    assert first == tuple(pair.output.bits.first_positions[0]) and patterns == _expected_hex(pair, *first)
    canvas = view.locator(".pair-bits canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + box["width"] * CLICK_AT[0], box["y"] + box["height"] * CLICK_AT[1])
    deadline = time.monotonic() + PAGE_TIMEOUT_MS / 1000
    while _element_shown(page)[0] == first and time.monotonic() < deadline:
        page.wait_for_timeout(POLL_MS)  # the detail is redrawn by the server after the tap
    element, patterns = _element_shown(page)
    assert element != first
    assert patterns == _expected_hex(pair, *element)
    assert outside_requests(requested) == []


def test_compare_naming_an_unlisted_packet_gives_a_note(page, server, requested):
    open_packet(page, server, f"?packet={PAGED}&compare=../{OTHER_LAYER}")
    message = page.locator(".shell-message").first
    message.wait_for(timeout=PAGE_TIMEOUT_MS)
    assert "is not listed under this root" in deep_text(message)
    assert page.locator(f".status-line[data-packet='{PAGED}']").is_visible()
    assert not page.locator(".pair-area").is_visible()
    page.wait_for_url(lambda url: "compare" not in url and f"packet={PAGED}" in url, timeout=PAGE_TIMEOUT_MS)
    assert outside_requests(requested) == []


def test_pair_export_writes_a_captioned_page_a_png_without_toolbar_and_the_comparison(page, server, requested, browser):
    _open_pair(page, server)
    page.locator(".pair-export button").click()
    note = page.locator(".pair-export-note")
    note.wait_for(timeout=PAGE_TIMEOUT_MS)
    html_path, json_path = (Path(deep_text(note.locator(f".export-{kind}")).strip()) for kind in ("html", "json"))
    png_paths = [Path(text.strip()) for text in note.locator(".export-png").all_inner_texts()]  # one, or its parts
    assert png_paths and all(Image.open(path).height <= MAX_PNG_HEIGHT for path in png_paths)
    pair = explorer.compare(ROOT / PAGED, ROOT / CONTIGUOUS)
    assert _without_runtime(json.loads(json_path.read_text())) == _without_runtime(pair.report())
    assert outside_requests(requested) == []
    png = png_paths[0].read_bytes()
    assert pixel_std(png) > MIN_PIXEL_STD
    context = browser.new_context(viewport={"width": PAGE_WIDTH, "height": 1000})
    try:
        exported = context.new_page()
        exported.goto(html_path.as_uri())
        section = f"{SECTION_CLASS}-{PAIR_SECTION}"
        wait_drawn(exported, section)
        caption = exported.locator(f".{section} .{CAPTION_CLASS}").first
        text = caption.inner_text()
        for side in (pair.a, pair.b):
            assert side.admission.packet_sha256[:SHA_DIGITS] in text
        assert PAGED in text and CONTIGUOUS in text
        assert exported.evaluate(VISIBLE_JS, ".bk-Toolbar") > 0  # the page keeps its toolbars, the PNG does not
        hide_controls(exported)
        assert exported.evaluate(VISIBLE_JS, ".bk-Toolbar") == 0
        assert exported.evaluate(ENABLED_INPUTS_JS) == [], "a control on a static page does nothing"
        width, height = Image.open(io.BytesIO(exported.locator(f".{section}").first.screenshot())).size
        sizes = [Image.open(path).size for path in png_paths]
        assert all(w == width for w, _ in sizes) and sum(h for _, h in sizes) >= height
    finally:
        context.close()


def test_the_pair_view_and_the_partner_list_at_1280_px_have_no_layout_offenders(browser, server):
    context = browser.new_context(viewport={"width": LAYOUT_WIDTH, "height": LAYOUT_HEIGHT})
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        _open_pair(page, server)
        page.wait_for_selector(".partner-button", timeout=PAGE_TIMEOUT_MS)
        page.screenshot(path=artifact(f"layout-{LAYOUT_WIDTH}-pair.png"), full_page=True)
        for root in ("#main", "#sidebar"):
            found = layout_offenders(page, root)
            assert found["leaves"] > 0, root
            problems = found["overlaps"] + found["outside"] + found["clipped"]  # the packet list's too
            assert problems == [], "\n".join(problems)
        assert layout_offenders(page, "#main")["canvases"] > 0
        assert page.evaluate("document.documentElement.scrollWidth") <= LAYOUT_WIDTH  # nothing widens the page
    finally:
        context.close()
