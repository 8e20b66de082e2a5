"""The app's one runner: no other module starts work; the campaign Export answers and waits its turn."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from explorer.samples.campaigns import CURATED_NAME
from explorer.ui import background as runner_module
from explorer.ui import campaigns as campaigns_module
from explorer.ui import catalog
from explorer.ui import packet as packet_module
from explorer.ui.shell import Shell

PACKAGE = Path(__file__).resolve().parents[2] / "explorer"
RUNNER = PACKAGE / "ui" / "background.py"
STARTS_WORK = re.compile(r"threading\.Thread\(|pn\.state\.execute\(|\.add_callback\(")  # the last: onto the IO loop
CAMPAIGN_ROOT = catalog.default_root() / CURATED_NAME
WAIT_SECONDS = 120  # generous: the held exports are released by the test itself, never by a clock


def test_no_module_of_the_views_or_the_app_starts_work_but_the_runner():
    modules = sorted((PACKAGE / "views").rglob("*.py")) + sorted((PACKAGE / "ui").rglob("*.py"))
    assert RUNNER in modules and len(modules) > 20
    starting = {
        str(path.relative_to(PACKAGE)): match.group(0)
        for path in modules
        if path != RUNNER and (match := STARTS_WORK.search(path.read_text()))
    }
    assert starting == {}
    assert STARTS_WORK.search(RUNNER.read_text())  # the pattern does find what it looks for


@pytest.fixture
def campaign_shell(tmp_path) -> Shell:
    """A session on the curated campaign's root with its grid open."""
    shell = Shell(CAMPAIGN_ROOT, tmp_path / "exports")
    ident = shell.campaigns.buttons[0].css_classes[1].removeprefix("campaign-")
    assert shell.campaigns.open(ident) == [] and shell.campaigns.shown
    return shell


def test_a_campaign_export_that_raises_anything_says_why_and_is_no_longer_busy(campaign_shell, monkeypatch):
    def unexpected(*args, **options):
        raise ValueError("simulated <b>not markup</b>")

    monkeypatch.setattr(campaigns_module, "export_campaign", unexpected)
    campaign_shell.campaigns.export()
    area = campaign_shell.campaigns.area
    assert area.export_note.object == (
        "The campaign export wrote nothing: ValueError: simulated &lt;b&gt;not markup&lt;/b&gt;"
    )
    assert area.export_button.loading is False and campaign_shell.runner.busy == 0


def test_the_campaign_export_waits_for_one_of_two_running_exports_to_end(campaign_shell, monkeypatch):
    """Two packet exports held running: the campaign export starts only once one of them has ended."""
    events: list[str] = []
    entered = {name: threading.Event() for name in ("packet 1", "packet 2", "campaign")}
    release = {name: threading.Event() for name in entered}
    order = iter(("packet 1", "packet 2"))

    def held(name: str):
        def work(*args, **options):
            events.append(f"enter {name}")
            entered[name].set()
            release[name].wait(WAIT_SECONDS)
            events.append(f"exit {name}")
            raise OSError(28, "No space left on device")

        return work

    monkeypatch.setattr(packet_module, "export_packet", lambda *args, **options: held(next(order))())
    monkeypatch.setattr(campaigns_module, "export_campaign", held("campaign"))
    campaign_shell.runner.inline = False  # as on a served page: the work runs on the runner's threads
    assert runner_module.EXPORT_WORKERS == 2
    campaign_shell.single.export()
    campaign_shell.single.export()
    assert entered["packet 1"].wait(WAIT_SECONDS) and entered["packet 2"].wait(WAIT_SECONDS)
    campaign_shell.campaigns.export()
    release["packet 1"].set()
    assert entered["campaign"].wait(WAIT_SECONDS)
    assert events.index("exit packet 1") < events.index("enter campaign")
    release["packet 2"].set()
    release["campaign"].set()
    area = campaign_shell.campaigns.area
    for _ in range(WAIT_SECONDS * 20):  # the answers come on the runner's threads (no session here)
        if campaign_shell.runner.busy == 0:
            break
        threading.Event().wait(0.05)
    assert campaign_shell.runner.busy == 0 and area.export_button.loading is False
    assert "No space left on device" in area.export_note.object
