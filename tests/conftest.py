"""Marks the slow kinds of test (`browser`, `endtoend`) and orders the longest first.

Marks the slow kinds of test: every test that drives Debian's chromium (the `browser` fixture, or a file of
browser tests) gets the `browser` marker, the notebooks and the Dask-cluster triage the `endtoend` marker, so
`pytest -m "not browser and not endtoend"` is the quick loop; runs the longest files first, so that parallel
workers (`-n 2`) finish together.
"""

from __future__ import annotations

import pytest

BROWSER_FIXTURE = "browser"  # tests/app/conftest.py: chromium through Playwright
BROWSER_FILE_PREFIXES = ("test_browser", "test_catalog_browser")
ENDTOEND_FILES = ("test_notebooks.py", "test_triage_dask.py")  # Jupyter kernels, Dask workers started and killed
LONGEST_FIRST = ("test_notebooks.py",)  # each notebook runs tens of seconds in a kernel of its own


def pytest_collection_modifyitems(items):
    for item in items:
        if BROWSER_FIXTURE in getattr(item, "fixturenames", ()) or item.path.name.startswith(BROWSER_FILE_PREFIXES):
            item.add_marker(pytest.mark.browser)
        if item.path.name in ENDTOEND_FILES:
            item.add_marker(pytest.mark.endtoend)
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: every file keeps its own order


@pytest.fixture(scope="session")
def browser():
    """Debian's /usr/bin/chromium, headless, through Playwright (no browser download); one per xdist worker."""
    from playwright.sync_api import sync_playwright

    from explorer.export.pages import CHROMIUM, CHROMIUM_ARGS  # Panel loads only when a browser test runs

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        yield chromium
        chromium.close()
