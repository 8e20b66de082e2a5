"""The served app in Debian's chromium.

Packet list, opening each sample, every tab drawn, URL query, Export offline, no outside requests.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import explorer
from explorer.analysis.ranking import ranked_heads
from explorer.catalog.summary import list_order, summarize
from explorer.export.browser import LOCAL_URL_PREFIXES, wait_drawn
from explorer.export.kinds import shown_emulations
from explorer.export.static_page import SECTION_CLASS
from explorer.samples.packets import CURATED
from explorer.ui import catalog
from explorer.views import VIEWS

from app_support import (
    MIN_PIXEL_STD,
    NESTED_PACKET,
    OUTSIDE_PACKET,
    PAGE_TIMEOUT_MS,
    PLOT_SLUGS,
    VIEWPORT,
    artifact,
    canvas_count,
    choose_packet,
    click_tab,
    deep_text,
    layout_offenders,
    open_packet,
    outside_requests,
    packet_cell,
    pixel_std,
    plot_pixel_std,
    view_locator,
    wait_statuses,
    wait_view,
)

ROOT = catalog.default_root()
SAMPLES = sorted(CURATED)
STATUS = {name: explorer.analyze(ROOT / name).status for name in SAMPLES}
ANALYZED_SAMPLE = "injected-error-head5"
OTHER_ANALYZED_SAMPLE = "clean-fp32q-bf16kv"
REFUSED_SAMPLE = "refused-hash-mismatch"
REFUSED_CODE = "sha256_mismatch"
TITLES = {slug: title for slug, title, _ in VIEWS}
VIEW_ERROR = "could not be built"
FIRST_BY_STATUS_AND_RATIO = min(SAMPLES, key=lambda name: list_order(name, summarize(ROOT / name)))


def _query(page) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}


def test_default_page_lists_every_sample_with_its_status(page, server, requested):
    open_packet(page, server)
    wait_statuses(page)
    for name in SAMPLES:
        assert packet_cell(page, name).is_visible()
    badges = page.locator(".packet-badge")
    assert badges.count() == len(catalog.discover(ROOT))
    listed = {badge.evaluate("(el) => el.dataset.status") for badge in badges.all()}
    assert listed == set(STATUS.values())
    first = FIRST_BY_STATUS_AND_RATIO
    assert page.locator(f".status-line[data-packet='{first}']").is_visible()
    page.wait_for_url(lambda url: "packet=" in url, timeout=PAGE_TIMEOUT_MS)  # written after the page loads
    assert _query(page)["packet"] == first
    page.screenshot(path=artifact("default-page.png"), full_page=True)
    assert outside_requests(requested) == []
    assert not [url for url in requested if "mathjax" in url.lower()]  # no TeX on any page (explorer/app.py)


def test_selecting_each_sample_in_the_list_opens_it(page, server, requested):
    open_packet(page, server)
    for name in SAMPLES:
        choose_packet(page, name)
        view = wait_view(page, name, VIEWS[0][0])
        status = page.locator(f".status-line[data-packet='{name}'] .status-badge")
        assert status.evaluate("(el) => el.dataset.status") == STATUS[name]
        page.wait_for_url(lambda url, name=name: f"packet={name}" in url, timeout=PAGE_TIMEOUT_MS)
        assert deep_text(view).strip()
        assert VIEW_ERROR not in deep_text(page.locator("body"))
        page.screenshot(path=artifact(f"sample-{name}.png"), full_page=True)
    assert outside_requests(requested) == []


def test_every_tab_of_an_analyzed_packet_draws(page, server, requested):
    open_packet(page, server, f"?packet={ANALYZED_SAMPLE}")
    for slug, _, _ in VIEWS:
        click_tab(page, slug)
        view = wait_view(page, ANALYZED_SAMPLE, slug)
        page.wait_for_url(lambda url, slug=slug: f"tab={slug}" in url, timeout=PAGE_TIMEOUT_MS)
        assert VIEW_ERROR not in deep_text(view)
        png = view.screenshot(path=artifact(f"tab-{ANALYZED_SAMPLE}-{slug}.png"))
        if slug == "lastrow":  # this sample's last rows are bit-equal: said in a line, no empty map (issue 39)
            assert canvas_count(view) == 0 and "All bits equal" in deep_text(view)
        elif slug in PLOT_SLUGS:
            assert canvas_count(view) > 0, slug
            assert pixel_std(png) > MIN_PIXEL_STD, slug
            assert plot_pixel_std(view) > MIN_PIXEL_STD, slug
        elif slug == "nonfinite":  # every tensor of this sample is finite: one line each, no blank map
            assert canvas_count(view) == 0 and deep_text(view).count(": all finite") == 6
        else:
            assert deep_text(view).strip(), slug
    assert outside_requests(requested) == []


def test_a_refused_packet_explains_itself_in_every_tab(page, server):
    open_packet(page, server, f"?packet={REFUSED_SAMPLE}")
    assert REFUSED_CODE in page.locator(".status-line").inner_text()
    for slug, _, _ in VIEWS:
        click_tab(page, slug)
        view = wait_view(page, REFUSED_SAMPLE, slug)
        text = deep_text(view)
        assert text.strip() and VIEW_ERROR not in text, slug
        if slug == VIEWS[0][0]:
            assert REFUSED_CODE in text
        view.screenshot(path=artifact(f"tab-{REFUSED_SAMPLE}-{slug}.png"))


def test_a_url_query_reopens_packet_tab_and_head(page, server):
    open_packet(page, server, "?packet=fp16-kv&tab=attention&head=3")
    view = wait_view(page, "fp16-kv", "attention")
    assert view.is_visible()
    assert _query(page) == {"packet": "fp16-kv", "tab": "attention", "head": "3"}
    assert view_locator(page, VIEWS[0][0]).count() == 0  # only the requested tab was built
    head_select = view.locator("select").first
    assert head_select.evaluate("(select) => select.selectedOptions[0].textContent").startswith("query head 3 ")
    head_select.select_option(index=5)  # the views' head selection is written back into the URL
    page.wait_for_url(lambda url: "head=5" in url, timeout=PAGE_TIMEOUT_MS)


def test_unknown_query_values_are_ignored_with_a_message(page, server):
    open_packet(page, server, "?packet=..%2F..%2Fetc&tab=nope&head=x")
    page.wait_for_url(lambda url: "tab=nope" not in url, timeout=PAGE_TIMEOUT_MS)
    message = page.locator(".shell-message").inner_text()
    assert "../../etc" in message and "not listed" in message and "nope" in message
    worst = ranked_heads(explorer.analyze(ROOT / FIRST_BY_STATUS_AND_RATIO).numerics)[0]  # head=x: no number
    assert _query(page) == {"packet": FIRST_BY_STATUS_AND_RATIO, "tab": VIEWS[0][0], "head": str(worst)}


def test_export_writes_html_that_loads_offline(page, server, export_dir, browser, requested):
    open_packet(page, server, f"?packet={ANALYZED_SAMPLE}&tab=errors&head=5")
    wait_view(page, ANALYZED_SAMPLE, "errors")
    page.get_by_role("button", name="Export HTML + PNG + JSON").click()
    note = page.locator(".export-note")
    note.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    html_path = Path(page.locator(".export-html").inner_text())
    report_path = Path(page.locator(".export-json").inner_text())
    assert html_path.parent == export_dir and report_path.parent == export_dir
    # the JSON holds the emulations the exported Emulations view shows (docs/report.md, "Exports")
    assert json.loads(report_path.read_text()) == shown_emulations(explorer.analyze(ROOT / ANALYZED_SAMPLE)).report()
    pngs = [Path(text) for text in page.locator(".export-png").all_inner_texts()]  # as `explorer report` writes
    assert len(pngs) >= len(VIEWS) and all(png.parent == export_dir and png.is_file() for png in pngs)
    assert page.get_by_role("button", name="Download HTML").is_visible()
    boxes = [
        page.get_by_role("button", name=name).bounding_box()
        for name in ("Export HTML + PNG + JSON", "Download HTML", "Download JSON report")
    ]
    assert all(a["x"] + a["width"] <= b["x"] or a["y"] + a["height"] <= b["y"] for a, b in itertools.pairwise(boxes))
    assert layout_offenders(page)["overlaps"] == []
    assert outside_requests(requested) == []

    offline = browser.new_context(viewport=VIEWPORT, offline=True)
    attempted = []

    def file_only(route):
        attempted.append(route.request.url)
        (route.continue_ if route.request.url.startswith(LOCAL_URL_PREFIXES) else route.abort)()

    offline.route("**/*", file_only)
    exported = offline.new_page()
    try:
        exported.goto(html_path.as_uri(), timeout=PAGE_TIMEOUT_MS)
        for slug in (slug for slug in PLOT_SLUGS if slug != "lastrow"):  # its last rows are bit-equal: no map
            wait_drawn(exported, f"{SECTION_CLASS}-{slug}", PAGE_TIMEOUT_MS)
            assert canvas_count(exported.locator(f".{SECTION_CLASS}-{slug}").first) > 0, slug
        errors = exported.locator(f".{SECTION_CLASS}-errors").first
        assert pixel_std(errors.screenshot(path=artifact("export-offline-errors.png"))) > MIN_PIXEL_STD
        assert plot_pixel_std(errors) > MIN_PIXEL_STD
        exported.screenshot(path=artifact("export-offline.png"), full_page=True)
    finally:
        offline.close()
    assert attempted[0] == html_path.as_uri()
    assert outside_requests(attempted) == []


def test_a_root_from_the_environment_lists_nested_packets_only(page, nested_server, requested):
    open_packet(page, nested_server, f"?packet=../{OUTSIDE_PACKET}")
    nested = f"group/{NESTED_PACKET}"
    wait_statuses(page)
    assert page.locator(".packet-badge").count() == 1
    assert packet_cell(page, nested).is_visible()
    assert page.locator(f".status-line[data-packet='{nested}']").is_visible()
    assert "not listed" in page.locator(".shell-message").inner_text()
    page.wait_for_url(lambda url: "packet=group%2F" in url, timeout=PAGE_TIMEOUT_MS)
    open_packet(page, nested_server, "?packet=group%2F" + NESTED_PACKET + "&tab=errors")
    assert canvas_count(wait_view(page, nested, "errors")) > 0
    assert outside_requests(requested) == []
