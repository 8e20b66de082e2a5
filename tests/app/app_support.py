"""Helpers of the browser tests and benchmarks: the served app, waits, canvases, artifacts.

Helpers of the browser tests (and benchmarks/bench_app.py): the `panel serve` subprocess, waiting for views,
canvases, pixel variance, artifacts; no assertions.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
from PIL import Image

from explorer.export.browser import FIND_VIEW_JS, wait_drawn

REPO = Path(__file__).resolve().parents[2]
# One folder per pytest-xdist worker (gw0, gw1, ...), so two workers never write the same server log or screenshot.
ARTIFACTS = REPO / "test-artifacts" / "app" / os.environ.get("PYTEST_XDIST_WORKER", "")
APP_PATH = "/app"
LOCAL_HOST = "127.0.0.1"
LOCAL_SCHEMES = ("data", "blob", "about", "file")
SERVER_START_TIMEOUT_S = 180
SERVER_STOP_TIMEOUT_S = 20
POLL_INTERVAL_S = 0.25
HTTP_TIMEOUT_S = 60
PAGE_TIMEOUT_MS = 90_000
VIEWPORT = {"width": 1400, "height": 1000}
# Views that draw Bokeh plots for an analyzed, all-finite packet (Nonfinite maps only tensors holding NaN or inf).
PLOT_SLUGS = ("errors", "lastrow", "narrowed", "attention")
MIN_PIXEL_STD = 8.0  # grey-level standard deviation of a screenshot holding a drawn plot
NESTED_PACKET, OUTSIDE_PACKET = "nested-packet", "outside-packet"  # in and beside the environment-chosen root


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOCAL_HOST, 0))
        return probe.getsockname()[1]


def start_server(
    port: int,
    log_path: Path,
    extra_args: list[str] | None = None,
    env: dict | None = None,
    serve_args: tuple[str, ...] = (),
    wrapper: tuple[str, ...] = (),
):
    """`panel serve explorer/app.py [serve_args]` on `port`, run from the repository root, logging to `log_path`;
    `wrapper` is a command prefix (e.g. setpriv dropping privileges)."""
    command = [
        *wrapper,
        sys.executable,
        "-m",
        "panel",
        "serve",
        "explorer/app.py",
        "--port",
        str(port),
        "--address",
        LOCAL_HOST,
        f"--allow-websocket-origin={LOCAL_HOST}:{port}",
        *serve_args,
    ]
    if extra_args:
        command += ["--args", *extra_args]
    with open(log_path, "w", encoding="utf-8") as log:  # the child keeps its own descriptor
        return subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_until_serving(process, url: str, log_path: Path) -> None:
    """Poll `url` until it answers 200; raise with the server log if the process dies or time runs out."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"panel serve exited with {process.returncode}:\n{log_path.read_text()}")
        with (
            contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
            urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as response,
        ):
            if response.status == 200:
                return
        time.sleep(POLL_INTERVAL_S)
    raise RuntimeError(f"panel serve did not answer {url} in {SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()}")


def serve_app(log_name: str, env: dict[str, str], export_dir, wrapper: tuple[str, ...] = ()):
    """Run `panel serve explorer/app.py` (after the `wrapper` command prefix) on a free port with `env` until the
    session ends; yields its base URL."""
    port = free_port()
    log_path = ARTIFACTS / log_name
    process = start_server(port, log_path, ["--export-dir", str(export_dir)], env=env, wrapper=wrapper)
    base_url = f"http://{LOCAL_HOST}:{port}"
    try:
        wait_until_serving(process, base_url + APP_PATH, log_path)
        yield base_url
    finally:
        stop_server(process)


def child_pids(pid: int) -> list[int]:
    """The processes `pid` started (`panel serve --num-procs N`: its N server processes; else worker processes)."""
    children: list[int] = []
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            children += [int(child) for child in listing.read_text().split()]
    return children


def running(pid: int) -> bool:
    """`pid` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_server(process) -> None:
    """Stop the server and the processes it started (the forked servers of `--num-procs` outlive their parent)."""
    children = child_pids(process.pid)
    process.terminate()
    try:
        process.wait(timeout=SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGTERM)
    deadline = time.monotonic() + SERVER_STOP_TIMEOUT_S
    while any(running(child) for child in children) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)
    for child in filter(running, children):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def outside_requests(urls: list[str]) -> list[str]:
    """The URLs that went anywhere but 127.0.0.1 (data:, blob:, about: and file: never leave the machine)."""
    return [url for url in urls if urlparse(url).scheme not in LOCAL_SCHEMES and urlparse(url).hostname != LOCAL_HOST]


def open_packet(page, base_url: str, query: str = "") -> None:
    """Navigate to the app (with an optional ?query) and wait for the status line."""
    page.goto(f"{base_url}{APP_PATH}{query}", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_selector(".status-line", timeout=PAGE_TIMEOUT_MS)


def view_locator(page, slug: str):
    """The built content of one view's tab (present once the server has built it)."""
    return page.locator(f".view-built-{slug}")


# findView, and contentOf(view): the model ids of a view's children, which a rebuilt view changes.
_CONTENT_OF_JS = (
    FIND_VIEW_JS
    + """
  const contentOf = (view) => [...view.children()].map((child) => child.model.id).join(",")"""
)
# What the view with a CSS class shows now (null if there is none), for REPLACED_JS.
CONTENT_JS = f"""(cssClass) => {{
  {_CONTENT_OF_JS}
  const view = findView(cssClass)
  return view === null ? null : contentOf(view)
}}"""
# True once the view with the CSS class shows content other than `previous` (CONTENT_JS), and not the emptied
# view between two packets, and has drawn it.
REPLACED_JS = f"""({{cssClass, previous}}) => {{
  {_CONTENT_OF_JS}
  const view = findView(cssClass)
  const now = view === null ? "" : contentOf(view)
  return now !== "" && now !== previous && view.has_finished()
}}"""


# The page position of a cell's centre, from the plot's own scales (Bokeh 3: PlotView.frame, its canvas element).
CELL_POINT_JS = f"""({{cssClass, x, y}}) => {{
  {FIND_VIEW_JS}
  const findPlot = (view) => {{
    if (view.frame !== undefined && view.canvas_view !== undefined) return view
    for (const child of view.children()) {{
      const found = findPlot(child)
      if (found !== null) return found
    }}
    return null
  }}
  const plot = findPlot(findView(cssClass))
  const box = plot.canvas_view.el.getBoundingClientRect()
  return [box.left + plot.frame.x_scale.compute(x), box.top + plot.frame.y_scale.compute(y)]
}}"""


def wait_view(page, packet: str, slug: str):
    """Wait until `slug` of `packet` is built and drawn; returns its locator."""
    page.wait_for_selector(f".status-line[data-packet='{packet}']", timeout=PAGE_TIMEOUT_MS)
    view = view_locator(page, slug)
    view.first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    wait_drawn(page, f"view-built-{slug}", PAGE_TIMEOUT_MS)
    return view.first


DEEP_TEXT_JS = """(element) => {
  const parts = [];
  const walk = (node) => {
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) parts.push(child.textContent);
      else if (child.nodeType === Node.ELEMENT_NODE && !["STYLE", "SCRIPT"].includes(child.tagName)) walk(child);
    }
  };
  walk(element);
  return parts.join(" ");
}"""


def deep_text(locator) -> str:
    """The text under an element, shadow roots included (Panel renders each component in one)."""
    return locator.evaluate(DEEP_TEXT_JS)


def canvas_count(locator) -> int:
    return locator.locator("canvas").count()


def plot_pixel_std(locator) -> float:
    """Pixel variance of the first Bokeh plot canvas under `locator` (its own screenshot, not the page's)."""
    return pixel_std(locator.locator("canvas").first.screenshot())


def pixel_std(png: bytes) -> float:
    """Standard deviation of the grey levels of a PNG: near zero for a blank area."""
    return float(np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.float64).std())


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name


# Layout offenders on the page, Bokeh's and Panel's shadow roots walked. A box is a "leaf": an element with no
# visible child element, a whole Bokeh plot or a whole inline SVG chart (each drawn as one). Boxes are cut by every
# ancestor that clips (overflow other than visible), so a cell scrolled out of its table is not counted.
LAYOUT_JS = """({rootSelector, minOverlap}) => {
  const PLOT = /^bk-(Figure|Plot|GridPlot)$/
  const SKIP = new Set(["STYLE", "SCRIPT", "LINK", "META", "TEMPLATE", "NOSCRIPT", "OPTION", "BR"])
  const scrollX = window.scrollX, scrollY = window.scrollY
  const intersect = (a, b) => ({left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
                                right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom)})
  const area = (r) => Math.max(0, r.right - r.left) * Math.max(0, r.bottom - r.top)
  const describe = (el) => {
    const parts = []
    for (let node = el; node && parts.length < 4; node = node.parentNode || node.host) {
      if (node.nodeType !== Node.ELEMENT_NODE) { if (node.host) { node = node.host; } else continue }
      const classes = [...node.classList].slice(0, 3).map((c) => "." + c).join("")
      parts.unshift(node.tagName.toLowerCase() + (node.id ? "#" + node.id : "") + classes)
    }
    return parts.join(" > ")
  }
  const childrenOf = (el) => [...(el.shadowRoot ? el.shadowRoot.children : []), ...el.children]
  const leaves = [], canvases = [], clipped = []
  const page = (raw) => ({left: raw.left + scrollX, top: raw.top + scrollY, right: raw.right + scrollX,
                          bottom: raw.bottom + scrollY})
  const collectCanvases = (el) => {
    for (const kid of childrenOf(el)) {
      if (kid.tagName === "CANVAS" && area(kid.getBoundingClientRect()) > 0) {
        canvases.push({el: kid, box: page(kid.getBoundingClientRect())})
      }
      collectCanvases(kid)
    }
  }
  const walk = (el, clip) => {
    if (SKIP.has(el.tagName)) return
    const style = getComputedStyle(el)
    if (style.display === "none" || style.visibility === "hidden" || parseFloat(style.opacity) === 0) return
    const box = page(el.getBoundingClientRect())
    const shown = intersect(box, clip)
    // An inline SVG chart is drawn as one, like a Bokeh plot, and is held to its column like a canvas.
    const isChart = el instanceof SVGSVGElement && !el.ownerSVGElement
    if ((el.tagName === "CANVAS" || isChart) && area(box) > 0) canvases.push({el, box})
    const isPlot = isChart || [...el.classList].some((c) => PLOT.test(c))
    const inner = style.overflowX !== "visible" || style.overflowY !== "visible" ? shown : clip
    if (isPlot && !isChart) collectCanvases(el)
    const kids = isPlot ? [] : childrenOf(el)
    const before = leaves.length
    for (const kid of kids) walk(kid, inner)
    const textual = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())
    if ((leaves.length === before || textual) && area(shown) > 0) leaves.push({el, box: shown, plot: isPlot})
    if (!isPlot && textual && style.overflowX === "hidden" && el.scrollWidth > el.clientWidth + 1) {
      clipped.push(describe(el) + " (text wider than its box)")
    }
  }
  const root = document.querySelector(rootSelector)
  const everything = {left: -1e9, top: -1e9, right: 1e9, bottom: 1e9}
  walk(root, everything)
  const related = (a, b) => {
    for (let node = a; node; node = node.parentNode || node.host) if (node === b) return true
    for (let node = b; node; node = node.parentNode || node.host) if (node === a) return true
    return false
  }
  const overlaps = []
  for (let i = 0; i < leaves.length; i++) {
    for (let j = i + 1; j < leaves.length; j++) {
      const a = leaves[i], b = leaves[j]
      const common = intersect(a.box, b.box)
      if (common.right - common.left >= minOverlap && common.bottom - common.top >= minOverlap
          && !related(a.el, b.el)) {
        overlaps.push(describe(a.el) + "  OVERLAPS  " + describe(b.el))
      }
    }
  }
  const main = document.querySelector("#main") || root
  const column = main.getBoundingClientRect()
  const viewport = document.documentElement.clientWidth
  const outside = []
  for (const {el, box} of canvases) {
    const right = box.right - scrollX, left = box.left - scrollX
    if (right > viewport + 0.5 || left < -0.5 || (main.contains(el.getRootNode().host || el) &&
        (left < column.left - 0.5 || right > column.right + 0.5))) {
      outside.push(describe(el) + ` spans x ${left.toFixed(0)}..${right.toFixed(0)}, column ` +
                   `${column.left.toFixed(0)}..${column.right.toFixed(0)}, viewport ${viewport}`)
    }
  }
  return {leaves: leaves.length, canvases: canvases.length, overlaps, outside, clipped}
}"""
MIN_OVERLAP_PX = 3  # boxes sharing less than this in either direction only touch (borders, rounding)


def layout_offenders(page, root_selector: str = "body") -> dict:
    """{leaves, canvases, overlaps, outside, clipped} of the page's visible boxes under `root_selector`."""
    return page.evaluate(LAYOUT_JS, {"rootSelector": root_selector, "minOverlap": MIN_OVERLAP_PX})


# How many elements matching a selector are shown, across every shadow root.
VISIBLE_JS = """(selector) => {
  let count = 0
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.matches(selector) && el.getClientRects().length > 0 && getComputedStyle(el).display !== "none") count += 1
      if (el.shadowRoot) walk(el.shadowRoot)
    }
  }
  walk(document)
  return count
}"""


def packet_cell(page, name: str):
    """The packet-name cell of `name` in the sidebar's packet table (on the page currently shown)."""
    return page.locator(".packet-cell[data-field='packet']", has_text=re.compile(f"^{re.escape(name)}$"))


def wait_statuses(page) -> None:
    """Wait until the packet list knows every packet's status."""
    page.wait_for_selector(".packet-count-text[data-pending='0']", timeout=PAGE_TIMEOUT_MS)


# [CSS class, content] of the open tab's built view (the one view-built-* in the page), or null.
OPEN_VIEW_JS = f"""() => {{
  {_CONTENT_OF_JS}
  const view = findViewWhere((classes) => classes.some((c) => c.startsWith("view-built-")))
  return view === null ? null : [view.model.css_classes.find((c) => c.startsWith("view-built-")), contentOf(view)]
}}"""


def choose_packet(page, name: str) -> None:
    """Click `name` in the packet table (searching for it first); wait for its status line and for the open tab
    to show the new view (the status line can arrive while the previous packet's view is still drawn)."""
    shown = page.evaluate(OPEN_VIEW_JS)
    search = page.locator(".packet-search input")
    search.fill(name)
    page.locator(".packet-count-text", has_text=f'matching "{name}"').wait_for(timeout=PAGE_TIMEOUT_MS)
    cells = page.locator(".packet-cell[data-field='packet']")
    deadline = time.monotonic() + PAGE_TIMEOUT_MS / 1000
    while not all(name in text for text in cells.all_inner_texts()) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)  # the filtered rows arrive after the count line
    click_packet(page, name, shown)
    search.fill("")


def click_tab(page, slug: str) -> None:
    """Click the tab label of view `slug` (explorer/ui/tabbar.py)."""
    page.locator(f".view-tab[data-tab='{slug}']").click()


def click_packet(page, name: str, shown=None) -> None:
    """Click `name` on the packet table's current page and wait until its status line is shown and the open tab
    shows the new view, drawn. `shown`: OPEN_VIEW_JS evaluated before anything changed (else evaluated here)."""
    shown = page.evaluate(OPEN_VIEW_JS) if shown is None else shown
    packet_cell(page, name).click()
    page.wait_for_selector(f".status-line[data-packet='{name}']", timeout=PAGE_TIMEOUT_MS)
    if shown is not None:
        css_class, content = shown
        page.wait_for_function(REPLACED_JS, arg={"cssClass": css_class, "previous": content}, timeout=PAGE_TIMEOUT_MS)


# Every enabled form control (input, button, select, textarea) shown on the page, across every shadow root, as
# "tag.class" strings: a static export must hold none.
ENABLED_INPUTS_JS = """() => {
  const found = []
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.matches("input, button, select, textarea") && !el.disabled && el.getClientRects().length > 0) {
        found.push(el.tagName.toLowerCase() + "." + [...el.classList].join("."))
      }
      if (el.shadowRoot) walk(el.shadowRoot)
    }
  }
  walk(document)
  return found
}"""
EXPORT_WIDTH = 1280  # an exported page fits a window this wide
