"""Fixtures of the app tests: a served app and Debian's chromium driven by Playwright.

Fixtures of the app tests: one real `panel serve explorer/app.py` subprocess and Debian's chromium driven by
Playwright.
"""

from __future__ import annotations

import os

import pytest

from explorer.export.files import EXPORT_DIR_ENV
from explorer.samples.packets import synthetic_spec, write_packet
from explorer.ui.catalog import ROOT_ENV

from app_support import ARTIFACTS, NESTED_PACKET, OUTSIDE_PACKET, PAGE_TIMEOUT_MS, VIEWPORT, serve_app


@pytest.fixture(scope="session")
def export_dir(tmp_path_factory):
    """Where the served app's Export button writes (and the artifacts folder exists)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return tmp_path_factory.mktemp("exports")


@pytest.fixture(scope="session")
def server(export_dir):
    """Base URL of `panel serve explorer/app.py` with no root argument (the bundled sample_packets/)."""
    env = {key: value for key, value in os.environ.items() if key not in (ROOT_ENV, EXPORT_DIR_ENV)}
    yield from serve_app("panel-serve.log", env, export_dir)


@pytest.fixture(scope="session")
def nested_root(tmp_path_factory):
    """A root chosen by $EXPLORER_PACKET_ROOT: one packet two levels deep, another packet beside the root."""
    base = tmp_path_factory.mktemp("nested")
    write_packet(base / "root" / "group" / NESTED_PACKET, synthetic_spec())
    write_packet(base / OUTSIDE_PACKET, synthetic_spec())
    return base / "root"


@pytest.fixture(scope="session")
def nested_server(nested_root, export_dir):
    """Base URL of a second `panel serve explorer/app.py` whose root comes from the environment only."""
    yield from serve_app("panel-serve-nested.log", {**os.environ, ROOT_ENV: str(nested_root)}, export_dir)


@pytest.fixture
def requested():
    """Every URL the test's page requested (HTTP and websocket)."""
    return []


@pytest.fixture
def page(browser, requested):
    """A fresh browser context and page that records its requests into `requested`."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.on("request", lambda request: requested.append(request.url))
    page.on("websocket", lambda websocket: requested.append(websocket.url))
    yield page
    context.close()
