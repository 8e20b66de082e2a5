"""The Emulations tab in a served app: progress, the core's counts in table order, URL parameters.

The Emulations tab in a served app: a progress bar, then the core's bit-equal counts in table order with the
baseline last; URL parameters (the sweep among them); a second session served while the first one computes;
the pair view's matrix computed on request.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from urllib.parse import parse_qsl

import pytest

import explorer
from explorer.analysis.emulation import ranked
from explorer.analysis.emulation.shown import settings_set
from explorer.export.files import EXPORT_DIR_ENV
from explorer.notebook.packet import sample
from explorer.samples.packets import qwen_spec, synthetic_spec, write_packet
from explorer.ui.catalog import ROOT_ENV

from app_support import (
    ARTIFACTS,
    PAGE_TIMEOUT_MS,
    VIEWPORT,
    deep_text,
    layout_offenders,
    open_packet,
    outside_requests,
    serve_app,
    wait_view,
)

SAMPLE = "qwen36-bf16-t64"
FULL = "qwen-long"  # the Qwen3.6 geometry at twice the incident's context, QH16/KVH2/D256/T11170
LONG_TOKENS = 2 * 5585
SMALL = "small"
# The sweep on the long packet: seconds of Python-stepped numpy holding the GIL in turns with the server, so the
# two sessions really overlap (on the incident's T5585 it can end before a second session on a busy machine loads).
SLOW_SETTINGS = {"emulationSet": "sweep"}
SHARE = re.compile(r"([0-9]+) of ([0-9]+)")
BASELINE = "rounded reference (baseline)"
SPACE = re.compile(r"\s+")
FULL_SERVER_LOG = "panel-serve-emulations.log"
LOG_STAMP = "%Y-%m-%d %H:%M:%S,%f"  # the server log's asctime (explorer.ui.timings.LOG_FORMAT)
LOG_STAMP_CHARS = 23
CORE_COMPUTED = re.compile(r"emulations mlx_two_pass\(blocks=64\),\S* of packet \w+ computed in ")


def _query(page) -> dict[str, str]:
    return dict(parse_qsl(page.evaluate("window.location.search").lstrip("?")))


def _tables(page):
    return page.locator(".emulation-bit-equal")


def _global_counts(page) -> dict[str, int]:
    """emulation id -> bit-equal count, read from the rendered global table (one row per emulation, in table order,
    then the baseline row)."""
    rows = _tables(page).first.locator("tr")
    counts = {}
    for index in range(1, rows.count()):
        cells = rows.nth(index).locator("td")
        counts[SPACE.sub("", deep_text(cells.nth(0)))] = int(SHARE.search(deep_text(cells.nth(2))).group(1))
    assert list(counts)[-1] == BASELINE.replace(" ", "")
    return counts


def _expected(path, settings: dict[str, str]) -> dict[str, int]:
    """The core's counts in table order, then the baseline row (as the rendered table lists them)."""
    ids = (
        ["sweep"]
        if settings.get("emulationSet") == "sweep"
        else settings_set(
            int(settings.get("blocks", 128)),
            int(settings.get("partitionTokens", 256)),
            settings.get("partialDType", "float32"),
        )
    )
    analysis = explorer.analyze(path, emulate=ids)
    return {
        **{e.id: e.bit_equal for e in ranked(analysis.emulations)},
        BASELINE.replace(" ", ""): analysis.emulation_counts.baseline.bit_equal,
    }


@pytest.fixture(scope="module")
def full_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("emulation-root")
    write_packet(root / FULL, qwen_spec(tokens=LONG_TOKENS))
    write_packet(root / SMALL, synthetic_spec())
    return root


@pytest.fixture(scope="module")
def full_server(full_root, export_dir):
    env = {key: value for key, value in os.environ.items() if key != EXPORT_DIR_ENV}
    yield from serve_app(FULL_SERVER_LOG, {**env, ROOT_ENV: str(full_root)}, export_dir)


def test_the_tab_shows_the_cores_bit_equal_counts_and_fits_1280_px(browser, server, requested):
    context = browser.new_context(viewport={"width": 1280, "height": VIEWPORT["height"]})
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.on("request", lambda request: requested.append(request.url))
    page.on("websocket", lambda websocket: requested.append(websocket.url))
    try:
        open_packet(page, server, f"?packet={SAMPLE}&tab=emulations")
        wait_view(page, SAMPLE, "emulations")
        _tables(page).first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
        # the map opens on mlx_two_pass, which reproduces every element here: its sentence, not an empty map
        page.locator(".emulation-map canvas, .emulation-map .emulation-all-equal").first.wait_for(
            timeout=PAGE_TIMEOUT_MS
        )
        assert list(_global_counts(page).items()) == list(_expected(sample(SAMPLE), {}).items())  # order too
        found = layout_offenders(page)
        assert found["leaves"] > 0
        problems = found["overlaps"] + found["outside"] + found["clipped"]
        assert problems == []  # the sidebar's packet list too
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # nothing widens the page
    finally:
        context.close()
    assert outside_requests(requested) == []


def test_url_parameters_round_trip_and_an_invalid_one_gets_a_note(page, server, requested):
    settings = {"blocks": "64", "partitionTokens": "128", "partialDType": "float16"}
    query = "&".join(f"{name}={value}" for name, value in settings.items())
    open_packet(page, server, f"?packet={SAMPLE}&tab=emulations&{query}")
    _tables(page).first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    assert _global_counts(page) == _expected(sample(SAMPLE), settings)
    page.wait_for_function("() => window.location.search.includes('partialDType=float16')")
    assert {name: _query(page).get(name) for name in settings} == settings

    blocks = page.locator(".view-built-emulations input").first  # typed in the view: recomputed, URL follows
    blocks.fill("32")
    blocks.press("Enter")
    page.wait_for_function("() => window.location.search.includes('blocks=32')")
    page.locator(".emulation-bit-equal", has_text="mlx_two_pass(blocks=32)").first.wait_for(timeout=PAGE_TIMEOUT_MS)
    assert _global_counts(page) == _expected(sample(SAMPLE), {**settings, "blocks": "32"})

    open_packet(page, server, f"?packet={SAMPLE}&tab=emulations&blocks=-1&partitionTokens=%C2%B2&partialDType=float16")
    message = page.locator(".shell-message")
    message.wait_for(timeout=PAGE_TIMEOUT_MS)
    text = deep_text(message)
    assert 'blocks "-1" is not an integer from 1 to 1024' in text
    assert 'partitionTokens "\u00b2" is not an integer from 1 to 16777216' in text
    _tables(page).first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    assert _global_counts(page) == _expected(sample(SAMPLE), {"partialDType": "float16"})
    query = _query(page)
    assert query["partialDType"] == "float16" and "blocks" not in query and "partitionTokens" not in query
    assert outside_requests(requested) == []


def _logged_at(log_path, start: int, pattern: re.Pattern) -> datetime:
    """The timestamp of the first line of the server log after byte `start` that matches `pattern`."""
    with open(log_path, encoding="utf-8") as log:
        log.seek(start)
        for line in log:
            if pattern.search(line):
                return datetime.strptime(line[:LOG_STAMP_CHARS], LOG_STAMP)
    raise AssertionError(f"no line matching {pattern.pattern!r} in {log_path}")


def test_a_second_session_is_served_while_the_first_computes(browser, full_server, full_root):
    """Ordered by the server's own log (the browsers add their loading time, seconds on a busy machine): the second
    session's status line is sent before the first session's emulations are computed."""
    log_path, start = ARTIFACTS / FULL_SERVER_LOG, (ARTIFACTS / FULL_SERVER_LOG).stat().st_size
    first_context, second_context = browser.new_context(viewport=VIEWPORT), browser.new_context(viewport=VIEWPORT)
    first, second = first_context.new_page(), second_context.new_page()
    try:
        slow = "&".join(f"{name}={value}" for name, value in SLOW_SETTINGS.items())
        open_packet(first, full_server, f"?packet={FULL}&tab=emulations&{slow}")
        progress = first.locator("progress.emulation-progress")
        progress.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)  # the first session is computing now
        assert _tables(first).count() == 0

        open_packet(second, full_server, f"?packet={SMALL}")  # a new session, opened while the first computes
        second.wait_for_selector(f".status-line[data-packet='{SMALL}']", timeout=PAGE_TIMEOUT_MS)

        _tables(first).first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
        progress.wait_for(state="hidden", timeout=PAGE_TIMEOUT_MS)
        assert _global_counts(first) == _expected(full_root / FULL, SLOW_SETTINGS)
        second_served = _logged_at(log_path, start, re.compile(f"status line of '{SMALL}'"))
        first_computed = _logged_at(log_path, start, re.compile("emulations sweep ready after"))
        assert second_served < first_computed
    finally:
        first_context.close()
        second_context.close()


def test_three_sessions_opening_the_same_emulations_share_one_computation(browser, full_server, full_root):
    """Three browser sessions ask for the same emulations at once: the server computes them once (the core logs each
    computation) and every session draws the core's counts."""
    settings = {"blocks": "64"}  # a set no other test of this server computes
    log_path, start = ARTIFACTS / FULL_SERVER_LOG, (ARTIFACTS / FULL_SERVER_LOG).stat().st_size
    query = "&".join(f"{name}={value}" for name, value in settings.items())
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(3)]
    try:
        pages = [context.new_page() for context in contexts]
        for page in pages:  # all three requested before any has loaded
            page.goto(
                f"{full_server}/app?packet={FULL}&tab=emulations&{query}", wait_until="commit", timeout=PAGE_TIMEOUT_MS
            )
        expected = _expected(full_root / FULL, settings)
        for page in pages:
            _tables(page).first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
            assert _global_counts(page) == expected
        with open(log_path, encoding="utf-8") as log:  # the core names the ids normalised, the 64 blocks first
            log.seek(start)
            computed = [line for line in log if CORE_COMPUTED.search(line)]
        assert len(computed) == 1, computed
    finally:
        for context in contexts:
            context.close()


def test_the_pair_view_computes_the_matrix_on_request(page, server, requested):
    from test_browser_pairs import CONTIGUOUS, PAGED, PAIR_QUERY, _open_pair

    _open_pair(page, server, PAIR_QUERY)
    page.locator(".pair-emulations-compute button").first.click()
    matrix = page.locator("table.pair-emulation-matrix").first
    matrix.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    pair = explorer.compare(sample(PAGED), sample(CONTIGUOUS), emulate="default")
    rows = matrix.locator("tbody tr")
    shown = [
        [SPACE.sub(" ", deep_text(rows.nth(i).locator("td").nth(j))).strip() for j in range(7)]
        for i in range(rows.count())
    ]
    expected = [
        [
            row["id"],
            *(
                str(row[key][side]["global"] if key != "bitEqualDiffering" else row[key][side])
                for key in ("bitEqualDecisive", "bitEqualDiffering", "bitEqual")
                for side in "ab"
            ),
        ]
        for row in pair.report()["emulationMatrix"]["rows"]
    ]
    assert shown[:-1] == expected and shown[-1][0] == BASELINE
    assert f"differing a (of {pair.emulation.differing.count})" in deep_text(matrix)
    assert outside_requests(requested) == []
