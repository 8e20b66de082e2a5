"""Rendering an exported page in headless Chromium: each section's PNG, offline.

Needs Debian's `chromium` (/usr/bin/chromium) and Playwright for Python, never a browser download. The page is opened
from a private temporary copy with every non-file request blocked; writes nothing but that copy.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from explorer.export.split import split_png
from explorer.export.static_page import CAPTION_CLASS, SECTION_CLASS, SUBHEADINGS, VIEW_TITLE
from explorer.foundations.bounded import clip

PAGE_WIDTH = 1280  # CSS pixels of the page the PNGs are taken from: the exported page fits a 1,280 px window
PAGE_HEIGHT = 1000
RENDER_TIMEOUT_MS = 60_000  # per view: a static page draws in seconds
SETTLE_MS = 300  # one more paint after a view reports itself drawn
DRAWN_POLL_MS = 50  # how often a wait asks whether a view is drawn (every frame walked every view: 8 % of a core)
SCRATCH_PAGE = "page.html"  # the private copy of the page Chromium opens
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_INSTALL = "apt-get install chromium"  # Debian's package; Playwright never downloads a browser here
PLAYWRIGHT_MODULE = "playwright"
PLAYWRIGHT_INSTALL = "pip install -e '.[export]', or pip install playwright; no browser is downloaded"
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
LOCAL_URL_PREFIXES = ("file:", "data:", "blob:", "about:")


class RenderError(RuntimeError):
    """The PNGs could not be rendered: chromium is missing or cannot start, or a view did not finish drawing."""


# findViewWhere(test): the first Bokeh view, from every root, whose model's CSS classes (Panel's css_classes)
# pass `test`; findView(cssClass): the one carrying that class. Both null if none.
FIND_VIEW_JS = """const findViewWhere = (test) => {
    const find = (view) => {
      if (test(view.model.css_classes || [])) return view
      for (const child of view.children()) {
        const found = find(child)
        if (found !== null) return found
      }
      return null
    }
    for (const root of window.Bokeh === undefined ? [] : Bokeh.index.roots) {
      const found = find(root)
      if (found !== null) return found
    }
    return null
  }
  const findView = (cssClass) => findViewWhere((classes) => classes.includes(cssClass))"""
# True once the view with the CSS class has finished drawing.
DRAWN_JS = f"""(cssClass) => {{
  {FIND_VIEW_JS}
  const view = findView(cssClass)
  return view !== null && view.has_finished()
}}"""


# Across every shadow root: hides the Bokeh toolbars
# and lets scrolling text boxes grow to their whole text; returns how many elements it hid.
HIDE_CONTROLS_JS = """({hide, grow}) => {
  let hidden = 0
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.matches(hide) && el.style.display !== "none") { el.style.display = "none"; hidden += 1 }
      if (el.matches(grow)) { el.style.maxHeight = "none"; el.style.overflow = "visible" }
      if (el.shadowRoot) walk(el.shadowRoot)
    }
  }
  walk(document)
  return hidden
}"""
STATIC_HIDDEN = ".bk-Toolbar"
STATIC_GROWN = "pre"


def hide_controls(page) -> int:
    """Hide every toolbar and view control of an exported page and unroll its text boxes before PNGs are taken."""
    hidden = page.evaluate(HIDE_CONTROLS_JS, {"hide": STATIC_HIDDEN, "grow": STATIC_GROWN})
    page.wait_for_timeout(SETTLE_MS)
    return hidden


def wait_drawn(page, css_class: str, timeout_ms: int = RENDER_TIMEOUT_MS, settle_ms: int = SETTLE_MS) -> None:
    """Wait until the Bokeh view carrying `css_class` exists and its whole subtree is rendered (a Playwright page),
    then `settle_ms` more (0 when a settling wait follows anyway, as hide_controls's)."""
    page.wait_for_function(DRAWN_JS, arg=css_class, timeout=timeout_ms, polling=DRAWN_POLL_MS)
    page.wait_for_timeout(settle_ms)


def _block_network(route) -> None:
    if route.request.url.startswith(LOCAL_URL_PREFIXES):
        route.continue_()
    else:
        route.abort()


def require_chromium() -> None:
    """RenderError naming what to install when CHROMIUM or Playwright (the `export` extra) is missing."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        raise RenderError(f"{CHROMIUM} is missing: PNGs need Debian's chromium package ({CHROMIUM_INSTALL})")
    if importlib.util.find_spec(PLAYWRIGHT_MODULE) is None:
        raise RenderError(f"Playwright is not installed: PNGs need it to drive {CHROMIUM} ({PLAYWRIGHT_INSTALL})")


def _screenshots(html_path: str | os.PathLike, slugs: tuple[str, ...]) -> dict[str, list[bytes]]:
    """PNG parts of each `export-view-<slug>` section; RenderError when chromium fails or a view does not draw."""
    from playwright.sync_api import Error as PlaywrightError

    require_chromium()
    # Playwright's sync API refuses a thread that runs an asyncio loop (a Jupyter kernel, a test session holding
    # a browser, a served callback): render on a thread of our own, whichever thread asked.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="explorer-png") as renderer:
        rendering = renderer.submit(_rendered, html_path, slugs)
    try:
        return rendering.result()
    except PlaywrightError as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise RenderError(f"chromium could not render the page: {clip(first_line)}") from None


def _rendered(html_path: str | os.PathLike, slugs: tuple[str, ...]) -> dict[str, list[bytes]]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        try:
            context = browser.new_context(viewport={"width": PAGE_WIDTH, "height": PAGE_HEIGHT})
            context.route("**/*", _block_network)
            page = context.new_page()
            page.goto(Path(html_path).resolve().as_uri(), timeout=RENDER_TIMEOUT_MS)
            for slug in slugs:
                try:
                    wait_drawn(page, f"{SECTION_CLASS}-{slug}", settle_ms=0)  # hide_controls settles once after all
                except PlaywrightTimeout:
                    seconds = RENDER_TIMEOUT_MS // 1000
                    raise RenderError(f"the {slug} view did not finish drawing in {seconds} s") from None
            hide_controls(page)
            shots = {}
            for slug in slugs:
                section = page.locator(f".{SECTION_CLASS}-{slug}").first
                top = section.bounding_box()["y"]
                boxes = [
                    (round(box["y"] - top), round(box["y"] + box["height"] - top))
                    for box in (heading.bounding_box() for heading in section.locator(SUBHEADINGS).all())
                    if box is not None and box["height"] > 0
                ]
                title = _title_height(section, top)  # measured before the screenshot scrolls the page
                shots[slug] = split_png(section.screenshot(timeout=RENDER_TIMEOUT_MS), title, headings=boxes)
            return shots
        finally:
            browser.close()


def _title_height(section, top: float) -> int:
    """Rows of a section's title band: its caption band and, under it, the view's title (h2) when it has one."""
    bottom = 0
    for selector in (f".{CAPTION_CLASS}", VIEW_TITLE):
        box = section.locator(selector).first.bounding_box() if section.locator(selector).count() else None
        if box is not None:
            bottom = max(bottom, round(box["y"] + box["height"] - top))
    return bottom


def page_screenshots(page: str, slugs: tuple[str, ...]) -> dict[str, list[bytes]]:
    """The PNG parts of each `export-view-<slug>` section of a page, rendered from a private temporary copy."""
    require_chromium()
    with tempfile.TemporaryDirectory(prefix="explorer-render-") as scratch:
        html_path = Path(scratch) / SCRATCH_PAGE
        html_path.write_text(page, encoding="utf-8")
        return _screenshots(html_path, slugs)
