"""Benchmark of triage and the app at scale.

Prints numbers only, asserts nothing, writes only a temp dir.

For a generated root of 2,000 small packets: `explorer triage` wall time at
--jobs 1 and --jobs 2, on a Dask cluster (`--scheduler local:2`, which starts
its own LocalCluster, and `--scheduler ADDRESS` of a 2-worker LocalCluster
started beforehand, so the cluster's start-up and the engine's per-packet
overhead show apart) and packets per second per worker core; the served app's
first render (the packet table's rows visible, and how many statuses were still
unknown then; the median over 3 sessions) and the time until every status is
known; server RSS idle, after 1, 2 and 3 open sessions and 60 s after they
closed. One page of the explorer on the Qwen3.6-size packet (`explorer samples
--full`) against one page of a one-figure Panel app served the same way (the
floor), loaded in turns: the browser main thread's work, DOM elements (through
every shadow root), Bokeh models and static bytes. For 8 concurrent sessions on
the Qwen packet: the slowest drawn Overview and status line against the same 8
pages of the floor, the server's peak RSS, the server's own per-session
timings (explorer/ui/timings.py) and its CPU seconds per drawn session (its own
and its worker processes'). RSS is the server process's own; its worker
processes (forkserver and summary workers, started only while a list fills) are
printed beside it. Targets (2-core machine): jobs 2 <= 0.6x jobs 1; Dask
local:2 <= 1.3x jobs 2; first render median <= 1.5 s; every status <= 10 s;
<= 30 MB per extra session; within 50 MB of idle 60 s after closing; one page's
main-thread work and DOM elements <= 1.3x the floor's; slowest of 8 Qwen views
<= 1.3x the floor's; peak RSS <= 600 MB.

    python benchmarks/bench_scale.py [--packets N] [--only triage app page qwen]

The server runs with --warm, so "idle" already holds the app's imports. The
machine may be shared: the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "app"))

from explorer.export.browser import CHROMIUM, CHROMIUM_ARGS, wait_drawn  # noqa: E402
from explorer.samples.packets import FULL_SAMPLE_NAME, qwen_full_spec, synthetic_spec, with_snapshot, write_packet  # noqa: E402

from app_support import (  # noqa: E402
    APP_PATH,
    LOCAL_HOST,
    PAGE_TIMEOUT_MS,
    VIEWPORT,
    free_port,
    start_server,
    stop_server,
    wait_until_serving,
)

PACKETS = 2000
PACKETS_PER_GROUP = 100
INCONCLUSIVE_EVERY, REFUSED_EVERY = 10, 25  # every 10th packet discarded, every 25th corrupted
QWEN_SESSIONS = 8
SETTLE_S = 60  # after the sessions close
RSS_SAMPLE_S = 0.1
READY_PATH = "/static/js/bokeh.min.js"
MB = 1_000_000
DASK_WORKERS = 2
PARTS = ("triage", "app", "page", "qwen")  # triage of the root, the app on the root, one page, 8 sessions
PAGE_LOADS = 5
PAGE_TARGETED = ("main-thread work s", "DOM elements")
STATIC = ("script", "stylesheet", "font", "image")
QWEN_QUERY = f"?packet={FULL_SAMPLE_NAME}"
# Every element through every shadow root, those that are not a <style> or <link> (each Panel component's shadow
# root carries about nine of those), and the Bokeh models.
ELEMENTS_JS = """() => {
  let elements = 0, styles = 0
  const walk = (root) => {
    for (const element of root.querySelectorAll("*")) {
      elements += 1
      if (element.tagName === "STYLE" || element.tagName === "LINK") styles += 1
      if (element.shadowRoot) walk(element.shadowRoot)
    }
  }
  walk(document)
  return [elements, elements - styles, window.Bokeh.documents[0].all_models.size]
}"""
TARGETS = {
    "jobs_ratio": 0.6,
    "dask_ratio": 1.3,
    "all_statuses_s": 10.0,
    "per_session_mb": 30.0,
    "settled_mb": 50.0,
    "qwen_floor_ratio": 1.3,
    "page_ratio": 1.3,
    "first_render_median_s": 1.5,
    "qwen_peak_mb": 600.0,
}
FLOOR_APP = """import numpy as np
import panel as pn
from bokeh.plotting import figure

pn.extension()
plot = figure(width=600, height=400)
plot.line(np.arange(100), np.sin(np.arange(100) / 10))
pn.Column(pn.pane.Bokeh(plot), css_classes=["floor-figure"]).servable()
"""
TIMING = re.compile(
    r"session (\S+): (document built|status line of '[^']*' [a-z ]+?) ([0-9.]+) s "
    r"after the page request"
)


def write_root(root: Path, packets: int) -> None:
    for index in range(packets):
        spec = synthetic_spec(seed=index)
        if index % INCONCLUSIVE_EVERY == 0:
            spec = with_snapshot(spec, sampleOutcome="discarded")
        directory = write_packet(root / f"group-{index // PACKETS_PER_GROUP:02d}" / f"packet-{index:05d}", spec)
        if index % REFUSED_EVERY == 1:
            output = directory / "output.bin"
            output.write_bytes(bytes([output.read_bytes()[0] ^ 1]) + output.read_bytes()[1:])


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) * 1024 / MB
    except (OSError, StopIteration):
        return 0.0


def descendants(pid: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == pid:
                children += [int(entry), *descendants(int(entry))]
    return children


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of `pid` and its live descendants, with their waited-for children's, from
    /proc/PID/stat (a process that vanished counts 0)."""
    ticks = 0
    for process in (pid, *descendants(pid)):
        try:
            with open(f"/proc/{process}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> str:
    workers = descendants(pid)
    return f"{rss_mb(pid):7.1f} MB (workers: {len(workers)}, {sum(rss_mb(child) for child in workers):.1f} MB)"


def triage_seconds(root: Path, *options: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "explorer", "triage", str(root), "--json", *options],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def bench_triage(root: Path, packets: int) -> None:
    from distributed import LocalCluster

    one, two = triage_seconds(root, "--jobs", "1"), triage_seconds(root, "--jobs", "2")
    print(
        f"explorer triage: --jobs 1 {one:.2f} s, --jobs 2 {two:.2f} s, ratio {two / one:.2f} "
        f"(target <= {TARGETS['jobs_ratio']})"
    )
    local = triage_seconds(root, "--scheduler", f"local:{DASK_WORKERS}")
    with LocalCluster(n_workers=DASK_WORKERS, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        triage_seconds(root, "--scheduler", cluster.scheduler_address)  # the workers import explorer once
        running = triage_seconds(root, "--scheduler", cluster.scheduler_address)
    print(
        f"  Dask --scheduler local:{DASK_WORKERS} (starts its cluster): {local:.2f} s, {local / two:.2f}x --jobs 2 "
        f"(target <= {TARGETS['dask_ratio']}); on a running {DASK_WORKERS}-worker cluster: {running:.2f} s, "
        f"{running / two:.2f}x"
    )
    print(
        f"  per packet beyond the local pool: {1000 * (running - two) / packets:.2f} ms on a running cluster, "
        f"{1000 * (local - two) / packets:.2f} ms with the start-up"
    )
    for label, seconds, cores in (
        ("--jobs 1", one, 1),
        ("--jobs 2", two, 2),
        (f"local:{DASK_WORKERS}", local, 2),
        ("running cluster", running, DASK_WORKERS),
    ):
        print(f"  {label:16s} {packets / seconds / cores:7.1f} packets/s per worker core")


class Server:
    def __init__(self, root: Path, log: Path):
        self.port = free_port()
        self.process = start_server(self.port, log, ["--root", str(root)], serve_args=("--warm",))
        self.url = f"http://{LOCAL_HOST}:{self.port}{APP_PATH}"
        wait_until_serving(self.process, f"http://{LOCAL_HOST}:{self.port}{READY_PATH}", log)

    def stop(self) -> None:
        stop_server(self.process)


def bench_root(browser, root: Path, log: Path, packets: int) -> None:
    server = Server(root, log)
    try:
        time.sleep(2)
        idle = rss_mb(server.process.pid)
        print(f"server RSS idle:                        {memory(server.process.pid)}")
        pages, first_renders = [], []
        for session in range(1, 4):
            page = browser.new_page(viewport=VIEWPORT)
            started = time.perf_counter()
            page.goto(server.url, timeout=PAGE_TIMEOUT_MS)
            page.wait_for_selector(".packet-row", timeout=PAGE_TIMEOUT_MS)
            first_render = time.perf_counter() - started
            first_renders.append(first_render)
            pending = page.locator(".packet-count-text").get_attribute("data-pending")
            page.wait_for_selector(".packet-count-text[data-pending='0']", timeout=PAGE_TIMEOUT_MS)
            filled = time.perf_counter() - started
            page.wait_for_selector(".status-line", timeout=PAGE_TIMEOUT_MS)
            opened = time.perf_counter() - started
            pages.append(page)
            print(
                f"session {session}: first render {first_render:5.2f} s (statuses unknown then: {pending} of "
                f"{packets}), every status {filled:5.2f} s, first packet open {opened:5.2f} s "
                f"(target every status <= {TARGETS['all_statuses_s']} s)"
            )
            time.sleep(1)
            print(f"server RSS after {session} session(s):           {memory(server.process.pid)}")
            if session == 1:
                after_one = rss_mb(server.process.pid)
        after_three = rss_mb(server.process.pid)
        print(
            f"first render median {statistics.median(first_renders):.2f} s over {len(first_renders)} sessions "
            f"(target <= {TARGETS['first_render_median_s']} s)"
        )
        for page in pages:
            page.close()
        time.sleep(SETTLE_S)
        settled = rss_mb(server.process.pid)
        print(f"server RSS {SETTLE_S} s after closing:             {memory(server.process.pid)}")
        print(
            f"  per extra session (sessions 2 and 3, average): {(after_three - after_one) / 2:.1f} MB "
            f"(target <= {TARGETS['per_session_mb']}), settled - idle: {settled - idle:+.1f} MB "
            f"(target within {TARGETS['settled_mb']})"
        )
    finally:
        server.stop()


def open_pages(browser, url: str, css_class: str) -> list[float]:
    """QWEN_SESSIONS pages opening `url` at once; seconds until each shows the Bokeh view `css_class` drawn (the
    pages are polled in order, so a page's time is an upper bound)."""
    pages = [browser.new_page(viewport=VIEWPORT) for _ in range(QWEN_SESSIONS)]
    started = time.perf_counter()
    for page in pages:
        page.goto(url, wait_until="commit", timeout=PAGE_TIMEOUT_MS)
    seconds = []
    for page in pages:
        wait_drawn(page, css_class, PAGE_TIMEOUT_MS)
        seconds.append(time.perf_counter() - started)
    for page in pages:
        page.close()
    return seconds


@contextlib.contextmanager
def floor_server(scratch: Path):
    """The URL of a one-figure Panel app served the same way as the explorer (`--warm`), while it lasts."""
    app = scratch / "floor.py"
    app.write_text(FLOOR_APP)
    port, log = free_port(), scratch / "serve-floor.log"
    command = [
        sys.executable,
        "-m",
        "panel",
        "serve",
        str(app),
        "--port",
        str(port),
        "--address",
        LOCAL_HOST,
        f"--allow-websocket-origin={LOCAL_HOST}:{port}",
        "--warm",
    ]
    with open(log, "w", encoding="utf-8") as output:
        process = subprocess.Popen(command, cwd=REPO, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_until_serving(process, f"http://{LOCAL_HOST}:{port}{READY_PATH}", log)
        yield f"http://{LOCAL_HOST}:{port}/floor"
    finally:
        stop_server(process)


def bench_floor(browser, scratch: Path) -> float:
    """The slowest of QWEN_SESSIONS pages opening a one-figure Panel app served the same way."""
    with floor_server(scratch) as url:
        seconds = open_pages(browser, url, "floor-figure")
    print(
        f"floor: {QWEN_SESSIONS} pages of a one-figure Panel app, slowest drawn {max(seconds):.2f} s "
        f"(fastest {min(seconds):.2f} s)"
    )
    return max(seconds)


def page_metrics(browser, url: str, css_class: str) -> dict[str, float]:
    """One page opened alone until the Bokeh view `css_class` is drawn: the browser main thread's work (Chrome's
    TaskDuration, ScriptDuration and layout + style), its elements (counted through every shadow root), its Bokeh
    models and the static files it loaded."""
    page = browser.new_page(viewport=VIEWPORT)
    static: list = []
    page.on("response", lambda response: static.append(response) if response.request.resource_type in STATIC else None)
    devtools = page.context.new_cdp_session(page)
    devtools.send("Performance.enable")
    page.goto(url, timeout=PAGE_TIMEOUT_MS)
    wait_drawn(page, css_class, PAGE_TIMEOUT_MS)
    chrome = {metric["name"]: metric["value"] for metric in devtools.send("Performance.getMetrics")["metrics"]}
    elements, content, models = page.evaluate(ELEMENTS_JS)
    measured = {
        "main-thread work s": chrome["TaskDuration"],
        "script s": chrome["ScriptDuration"],
        "layout + style s": chrome["LayoutDuration"] + chrome["RecalcStyleDuration"],
        "DOM elements": elements,
        "  not style/link": content,
        "Bokeh models": models,
        "static MB": sum(len(response.body()) for response in static) / MB,
    }
    page.close()
    return measured


def bench_page(browser, scratch: Path, root: Path) -> None:
    """One page of the explorer on the Qwen packet against one page of the floor app, loaded in turns
    (PAGE_LOADS each after a first, warming load of each): medians and ratios."""
    app = Server(root, scratch / "serve-page.log")
    try:
        with floor_server(scratch) as floor_url:
            urls = {"floor": (floor_url, "floor-figure"), "explorer": (app.url + QWEN_QUERY, "view-built-overview")}
            loads: dict[str, list[dict]] = {name: [] for name in urls}
            for turn in range(PAGE_LOADS + 1):
                for name, (url, css_class) in urls.items():
                    measured = page_metrics(browser, url, css_class)
                    if turn:
                        loads[name].append(measured)
    finally:
        app.stop()
    medians = {name: {key: statistics.median(m[key] for m in runs) for key in runs[0]} for name, runs in loads.items()}
    print(f"one page alone (median of {PAGE_LOADS} loads each, taken in turns), explorer on {FULL_SAMPLE_NAME}:")
    for key in medians["floor"]:
        floor, explorer = medians["floor"][key], medians["explorer"][key]
        target = f" (target <= {TARGETS['page_ratio']}x)" if key in PAGE_TARGETED else ""
        print(f"  {key:20s} floor {floor:9.3f}  explorer {explorer:9.3f}  ratio {explorer / floor:5.2f}x{target}")


def server_timings(log: Path) -> str:
    """The server's per-session timings (explorer/ui/timings.py) from its log: slowest and median of each kind."""
    found: dict[str, list[float]] = {}
    for _, kind, seconds in TIMING.findall(log.read_text(errors="replace")):
        found.setdefault("document built" if kind == "document built" else "status line", []).append(float(seconds))
    return (
        "; ".join(
            f"{kind}: slowest {max(values):.2f} s, median {statistics.median(values):.2f} s ({len(values)} sessions)"
            for kind, values in found.items()
        )
        or "none logged"
    )


def bench_qwen(browser, root: Path, log: Path, floor: float) -> None:
    server = Server(root, log)
    peak = [0.0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peak[0] = max(peak[0], rss_mb(server.process.pid))
            time.sleep(RSS_SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        time.sleep(2)
        print(f"server RSS idle:                        {memory(server.process.pid)}")
        cpu_before = cpu_seconds(server.process.pid)
        seconds = open_pages(browser, server.url + QWEN_QUERY, "view-built-overview")
        cpu = cpu_seconds(server.process.pid) - cpu_before
        print(
            f"{QWEN_SESSIONS} concurrent sessions on {FULL_SAMPLE_NAME}: slowest drawn Overview {max(seconds):.2f} s "
            f"(fastest {min(seconds):.2f} s), {max(seconds) / floor:.2f}x the floor's {floor:.2f} s "
            f"(target <= {TARGETS['qwen_floor_ratio']}x)"
        )
        print(f"  server-side: {server_timings(log)}")
        print(
            f"server CPU per drawn session: {cpu / QWEN_SESSIONS:.2f} s "
            f"({QWEN_SESSIONS} sessions: {cpu:.1f} s of the server's CPU)"
        )
        print(f"server peak RSS: {peak[0]:.1f} MB (target <= {TARGETS['qwen_peak_mb']})")
        time.sleep(SETTLE_S)
        print(f"server RSS {SETTLE_S} s after closing:             {memory(server.process.pid)}")
    finally:
        sampling.set()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=PACKETS)
    parser.add_argument(
        "--only", nargs="+", choices=PARTS, default=list(PARTS), help="measure only these parts (default: all)"
    )
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        scratch = Path(scratch)
        root = scratch / "root"
        write_root(root, options.packets)
        print(
            f"{options.packets} packets under {root} (every {INCONCLUSIVE_EVERY}th inconclusive, every "
            f"{REFUSED_EVERY}th refused); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
        )
        if "triage" in options.only:
            bench_triage(root, options.packets)
        qwen_root = scratch / "qwen"
        write_packet(qwen_root / FULL_SAMPLE_NAME, qwen_full_spec())
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            try:
                if "app" in options.only:
                    bench_root(browser, root, scratch / "serve-root.log", options.packets)
                if "page" in options.only:
                    bench_page(browser, scratch, qwen_root)
                if "qwen" in options.only:
                    bench_qwen(browser, qwen_root, scratch / "serve-qwen.log", bench_floor(browser, scratch))
            finally:
                browser.close()
        print(f"load average at the end {os.getloadavg()[0]:.2f} (the machine is shared: timings are under load)")


if __name__ == "__main__":
    main()
