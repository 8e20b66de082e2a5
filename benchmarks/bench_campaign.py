"""Benchmark: `explorer campaign` against `explorer triage` on one root, and the app's Campaign view.

Benchmark of `explorer campaign` against `explorer triage` on one campaign root, and of the app's Campaign view;
prints numbers only, asserts nothing.

The root: one request on two backends x 36 layers x 8 steps with the Qwen3.6 heads
(QH16/KVH2/D256, all bfloat16) at T = 505..512 (576 packets, about 0.6 GB), written by
explorer/samples/campaigns.py once and kept under $XDG_CACHE_HOME/attention-explorer (default
~/.cache/attention-explorer), never in the repository. Measured:

- whole-process `python -m explorer triage ROOT --jobs N` and `python -m explorer campaign ROOT --jobs N`
  (median of --runs each, alternated), and their ratio (target: campaign <= 1.5x triage: every cell
  whose bytes differ reads both packets once more, for its pair);
- the app (`panel serve explorer/app.py`, root = the campaign): a first session opening `?campaign=ID`
  (the campaign computed in the server, then drawn) and a second one once the report exists (drawn from
  it; target <= 2 s from navigation to the grid drawn).

    python benchmarks/bench_campaign.py [--jobs 2] [--runs 3] [--only cli app]

The machine may be shared: the load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "app"))

from explorer.campaigns.grid import campaign_id  # noqa: E402
from explorer.export.browser import CHROMIUM, CHROMIUM_ARGS, wait_drawn  # noqa: E402
from explorer.samples.campaigns import CampaignShape, write_campaign  # noqa: E402
from explorer.views.campaign.view import GRID_CLASS  # noqa: E402

from app_support import APP_PATH, PAGE_TIMEOUT_MS, free_port, start_server, stop_server, wait_until_serving  # noqa: E402

SHAPE = CampaignShape(
    layers=36,
    steps=8,
    query_heads=16,
    kv_heads=2,
    head_dim=256,
    prefill_tokens=504,
    origin=(2, 10),
    diverge_step=5,
    missing=None,
)
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attention-explorer"
ROOT_NAME = "bench-campaign-qh16-kvh2-d256-t512-36x8"
DONE_MARK = ".complete"  # written last: a root without it was interrupted and is written again
TARGETS = {"campaign_over_triage": 1.5, "view_s": 2.0}
VIEWPORT = {"width": 1280, "height": 800}
LONG_MS = 30 * 60_000  # the first session fills the list and computes the campaign


def campaign_root() -> Path:
    """The cached campaign root, written on first use (a few minutes)."""
    root = CACHE / ROOT_NAME
    if not (root / DONE_MARK).exists():
        if root.exists():
            subprocess.run(["rm", "-rf", "--", str(root)], check=True)
        started = time.perf_counter()
        write_campaign(root / "campaign", SHAPE)
        (root / DONE_MARK).write_text("")
        print(f"wrote {root} in {time.perf_counter() - started:.0f} s")
    size = sum(path.stat().st_size for path in root.rglob("*") if path.is_file())
    print(f"root {root}: {sum(1 for _ in root.rglob('packet.json'))} packets, {size / 1e9:.2f} GB")
    return root


def _wall(command: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def bench_cli(root: Path, jobs: int, runs: int) -> None:
    times: dict[str, list[float]] = {"triage": [], "campaign": []}
    for _ in range(runs):
        for command in times:
            times[command].append(_wall([sys.executable, "-m", "explorer", command, str(root), "--jobs", str(jobs)]))
    medians = {command: statistics.median(values) for command, values in times.items()}
    for command, values in times.items():
        print(
            f"explorer {command} --jobs {jobs}: median {medians[command]:.1f} s "
            f"({', '.join(f'{value:.1f}' for value in values)})"
        )
    ratio = medians["campaign"] / medians["triage"]
    print(f"campaign / triage: {ratio:.2f}x (target <= {TARGETS['campaign_over_triage']}x)")


def _open(browser, url: str, ident: str) -> tuple[float, float]:
    """(seconds from navigation to the grid drawn, seconds from a click on the sidebar's campaign button, the
    packet list filled, to the grid drawn)."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        started = time.perf_counter()
        page.goto(f"{url}?campaign={ident}", timeout=LONG_MS)
        page.wait_for_selector(".campaign-status-line", timeout=LONG_MS)
        wait_drawn(page, GRID_CLASS, PAGE_TIMEOUT_MS)
        navigated = time.perf_counter() - started
        page.goto(url, timeout=LONG_MS)
        page.wait_for_selector(f".campaign-{ident}", timeout=LONG_MS)
        started = time.perf_counter()
        page.locator(f".campaign-{ident} button").click()
        page.wait_for_selector(".campaign-status-line", timeout=LONG_MS)
        wait_drawn(page, GRID_CLASS, PAGE_TIMEOUT_MS)
        return navigated, time.perf_counter() - started
    finally:
        context.close()


def bench_app(root: Path) -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    log = CACHE / "bench-campaign-serve.log"
    process = start_server(port, log, ["--root", str(root)], env={**os.environ, "PYTHONPATH": str(REPO)})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base + APP_PATH, log)
        ident = _campaign_id(root)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            first = _open(browser, f"{base}{APP_PATH}", ident)
            second = _open(browser, f"{base}{APP_PATH}", ident)
            browser.close()
        print(
            f"app, first session: ?campaign= to the grid drawn {first[0]:.1f} s (the list filled, the campaign "
            f"computed in the server); then a click on its sidebar button to the grid drawn {first[1]:.2f} s"
        )
        print(
            f"app, second session: ?campaign= to the grid drawn {second[0]:.2f} s; a click on the sidebar button "
            f"to the grid drawn {second[1]:.2f} s (target <= {TARGETS['view_s']} s once the summaries exist)"
        )
    finally:
        stop_server(process)


def _campaign_id(root: Path) -> str:
    import explorer

    admission = explorer.analyze(next(root.rglob("packet.json")).parent).admission
    key = tuple(
        {**admission.identity, **admission.selection}[field]
        for field in ("modelID", "artifactSHA256", "inputSHA256", "requestID")
    )
    return campaign_id(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=("cli", "app"), default=["cli", "app"])
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    root = campaign_root()
    if "cli" in args.only:
        bench_cli(root, args.jobs, args.runs)
    if "app" in args.only:
        bench_app(root)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
