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
# Files that run longest, longest first (measured with --durations on the 2-core machine, 2026-12-04): pytest-xdist
# hands out the scopes in collection order (see pytest_xdist_make_scheduler), and a long one handed out last ran
# alone at the end. Each notebook runs tens of seconds in a kernel of its own.
LONGEST_FIRST = (
    "test_browser_early_actions.py",
    "test_full_disk.py",
    "test_layout.py",
    "test_triage_dask.py",
    "test_browser_hostile.py",
    "test_browser_emulations.py",
    "test_export.py",
    "test_browser_changes.py",
    "test_browser.py",
    "test_shell.py",
    "test_browser_campaign.py",
    "test_notebooks.py",
    "test_browser_first_screen.py",
    "test_browser_pairs.py",
    "test_views_content.py",
    "test_emulation_scalar.py",
    "test_cli_environment.py",
    "test_browser_exports.py",
    "test_serving.py",
)
# Under `--dist loadscope` a module goes to one worker whole (its servers and fixtures made once); these modules'
# tests share nothing costly (each notebook starts a kernel of its own; the others share only the per-worker
# session fixtures: the served app and chromium), so each test is a scope of its own and a long module's tests
# spread over the workers instead of keeping one worker busy while the other has nothing left.
EACH_TEST_A_SCOPE = tuple(
    f"tests/{path}::"
    for path in (
        "test_notebooks.py",
        "app/test_browser_early_actions.py",
        "test_full_disk.py",
        "app/test_layout.py",
        "export/test_export.py",
        "app/test_browser.py",
        "app/test_shell.py",
        "app/test_browser_first_screen.py",
    )
)


def pytest_collection_modifyitems(items):
    for item in items:
        if BROWSER_FIXTURE in getattr(item, "fixturenames", ()) or item.path.name.startswith(BROWSER_FILE_PREFIXES):
            item.add_marker(pytest.mark.browser)
        if item.path.name in ENDTOEND_FILES:
            item.add_marker(pytest.mark.endtoend)
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: every file keeps its own order


@pytest.hookimpl(optionalhook=True)  # an xdist hook: `-p no:xdist` still runs the suite
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadscope` in collection order (LONGEST_FIRST), each test of EACH_TEST_A_SCOPE a scope of its own."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # xdist >= 3.6 hands out the scopes with the most tests first by default, which sent the one-test notebook
    # scopes and the few-test browser files to the end, where one worker ran them alone: keep our order.
    config.option.loadscopereorder = False

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith(EACH_TEST_A_SCOPE) else super()._split_scope(nodeid)

    return Scheduling(config, log)


@pytest.fixture(scope="session")
def browser():
    """Debian's /usr/bin/chromium, headless, through Playwright (no browser download); one per xdist worker."""
    from playwright.sync_api import sync_playwright

    from explorer.export.browser import CHROMIUM, CHROMIUM_ARGS  # Panel loads only when a browser test runs

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        yield chromium
        chromium.close()
