"""The app lists the campaigns the command line lists: each capture set opened, each computed once.

Two capture sets of one request (the curated sample and the d64 sample, as `explorer samples --campaign` writes
them) and a re-capture on one backend only under one root: the app lists what the command line lists, opens each,
and several sessions opening one uncomputed campaign together compute it once."""

from __future__ import annotations

import shutil
import threading

import panel as pn
import pytest

from explorer.campaigns import once
from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.campaigns.sets import compared
from explorer.samples.campaigns import CURATED_NAME, SAMPLE_NAME, write_campaign
from explorer.ui import catalog
from explorer.ui.shell import Shell

SESSIONS = 4  # sessions opening one campaign together
RECAPTURED = "recapture"  # a directory holding one backend's packet of the curated request again
RECAPTURED_PACKET = "paged-o62-l0"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("capture-sets")
    shutil.copytree(catalog.default_root() / CURATED_NAME, root / CURATED_NAME)
    write_campaign(root / SAMPLE_NAME)
    shutil.copytree(catalog.default_root() / CURATED_NAME / RECAPTURED_PACKET, root / RECAPTURED / RECAPTURED_PACKET)
    return root


@pytest.fixture(scope="module")
def cli_report(root):
    return build_campaign_report(run_campaigns(root, jobs=1))


def test_the_app_lists_what_the_command_line_lists_and_opens_each_capture_set(root, cli_report, tmp_path):
    shell = Shell(root, tmp_path)
    with_grid = [campaign for campaign in cli_report["campaigns"] if compared(campaign["backends"])]
    single = [campaign for campaign in cli_report["campaigns"] if not compared(campaign["backends"])]
    assert len(with_grid) == 2 and len(single) == 1
    buttons = {button.css_classes[1].removeprefix("campaign-") for button in shell.campaigns.buttons}
    assert buttons == {campaign["id"] for campaign in with_grid}
    note = shell.campaigns.sidebar.select(pn.pane.HTML)[0].object
    assert 'data-campaigns="2"' in note and 'class="campaign-single-backend" data-sets="1"' in note
    assert f"· {RECAPTURED} (paged, 1)" in note
    for campaign in with_grid:
        shell.open_url(f"?campaign={campaign['id']}")
        assert shell.campaigns.shown, shell.single.message
        shown = shell.campaigns._report
        assert (shown["id"], shown["captureSet"]) == (campaign["id"], campaign["captureSet"])
        assert shown["originSentence"] == campaign["originSentence"]
        assert f"campaign={campaign['id']}" in shell.url_query


def test_sessions_opening_one_uncomputed_campaign_share_one_computation(monkeypatch, tmp_path):
    root = tmp_path / "root"  # a root no earlier test computed a campaign of
    shutil.copytree(catalog.default_root() / CURATED_NAME, root / CURATED_NAME)
    shells = [Shell(root, tmp_path) for _ in range(SESSIONS)]
    ident = shells[0].campaigns.listing().campaigns[0].id
    computed, gate = [], threading.Event()

    def counted(*args, **kwargs):
        computed.append(args)
        gate.wait()  # the other sessions ask while this one computes
        return run_campaigns(*args, **kwargs)

    monkeypatch.setattr(once, "run_campaigns", counted)
    threads = [threading.Thread(target=shell.open_url, args=(f"?campaign={ident}",)) for shell in shells]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join()
    assert len(computed) == 1
    reports = [shell.campaigns._report for shell in shells]
    assert all(shell.campaigns.shown for shell in shells) and all(report is reports[0] for report in reports)
    assert reports[0]["id"] == ident
