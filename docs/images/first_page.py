"""Takes docs/images/first-page.png, the README's screenshot of the app's first page.

Takes docs/images/first-page.png, the README's screenshot: the app's first page at 1280 x 800 on the sample packets.

Run from the repository root while `panel serve explorer/app.py --port 5006` serves the sample packets:
`python docs/images/first_page.py [URL]`. It drives Debian's /usr/bin/chromium through Playwright (no browser
is downloaded), waits until every status in the packet list is known and the first packet's overview is drawn,
then captures the window (the first screen, not the whole page).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

URL = "http://localhost:5006/app"
WINDOW = {"width": 1280, "height": 800}
TIMEOUT_MS = 120_000
SETTLE_MS = 1_500  # one more paint after the last map reports itself drawn
OUT = Path(__file__).resolve().parent / "first-page.png"


def main(url: str = URL) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        page = browser.new_page(viewport=WINDOW)
        page.goto(url, timeout=TIMEOUT_MS)
        page.wait_for_selector(".status-line[data-packet] .status-badge[data-status]", timeout=TIMEOUT_MS)
        page.wait_for_function("() => !document.body.innerText.includes('reading ...')", timeout=TIMEOUT_MS)
        page.wait_for_timeout(SETTLE_MS)
        page.screenshot(path=str(OUT))
        browser.close()
    print(OUT)


if __name__ == "__main__":
    main(*sys.argv[1:])
