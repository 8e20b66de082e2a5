"""The campaign mode without a browser: a `cell=` in the URL that has no pair opens the grid."""

from __future__ import annotations

import pytest

from explorer.samples.campaigns import CURATED_NAME
from explorer.ui import catalog
from explorer.ui.shell import Shell

CAMPAIGN_ROOT = catalog.default_root() / CURATED_NAME
MISSING_CELL = "63,1"  # the curated campaign's cell that only one backend captured


@pytest.fixture(scope="module")
def shell(tmp_path_factory) -> Shell:
    return Shell(CAMPAIGN_ROOT, tmp_path_factory.mktemp("exports"))


def _ident(shell: Shell) -> str:
    return shell.campaigns.buttons[0].css_classes[1].removeprefix("campaign-")


@pytest.mark.parametrize(
    "cell, said",
    [
        (MISSING_CELL, f"Cell {MISSING_CELL} is missing: it has no pair to open."),
        ("99,99", "Cell &quot;99,99&quot; is not in this campaign; it was ignored."),
        ("two,one", "Cell &quot;two,one&quot; is not in this campaign; it was ignored."),
    ],
)
def test_a_cell_without_a_pair_in_the_url_opens_the_grid_and_says_why(shell, cell, said):
    ident = _ident(shell)
    shell.open_url(f"?campaign={ident}&cell={cell}")
    assert said in shell.single.message
    assert shell.campaigns.shown and not shell.single_shown and shell.pairs.pair is None
    assert f"campaign={ident}" in shell.url_query and "cell=" not in shell.url_query


def test_a_cell_with_a_pair_in_the_url_opens_its_pair_and_keeps_the_campaign(shell):
    ident = _ident(shell)
    shell.open_url(f"?campaign={ident}&cell=62,0")
    assert shell.pairs.pair is not None and not shell.campaigns.shown
    assert f"campaign={ident}" in shell.url_query and "cell=62%2C0" in shell.url_query
    shell.pairs.close()  # Back from the cell's pair: the single packet, the campaign closed
    assert shell.single_shown and "campaign=" not in shell.url_query
