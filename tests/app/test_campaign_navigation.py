"""The campaign grid as users find their way: back from a pair, the browser's Back, notes, emulations."""

from __future__ import annotations

import shutil

import panel as pn
import pytest

from explorer.samples.campaigns import CURATED_NAME
from explorer.ui import catalog
from explorer.ui.shell import Shell
from explorer.views.shared.markup import esc

ORIGIN_CELL, MISSING_CELL = (62, 0), (63, 1)  # the curated campaign's first differing cell, and one with no pair


@pytest.fixture
def shell(tmp_path) -> Shell:
    root = tmp_path / "root"  # a campaign no other test computed (its emulations are asked for here)
    shutil.copytree(catalog.default_root() / CURATED_NAME, root / CURATED_NAME)
    return Shell(root, tmp_path / "exports")


def _ident(shell: Shell) -> str:
    return shell.campaigns.listing().campaigns[0].id


def _view_html(shell: Shell) -> str:
    """Every HTML pane's text in the campaign's area."""
    return " ".join(str(pane.object) for pane in shell.campaigns.panel.select(lambda part: hasattr(part, "object")))


def test_a_cell_pair_leads_back_to_the_grid_and_back_in_the_browser_returns_through_the_views(shell):
    ident = _ident(shell)
    first = shell.url_query  # the first packet, opened when the list was filled
    shell.campaigns.buttons[0].clicks += 1
    grid = shell.url_query
    assert shell.campaigns.shown and f"campaign={ident}" in grid and shell.url_pushed
    assert not shell.single.status.visible  # the header above the grid names the campaign, not the packet
    assert "Campaign of request" in shell.campaigns.area.status.object
    shell.campaigns.click_cell(*ORIGIN_CELL)
    pair = shell.url_query
    assert shell.pairs.pair is not None and "cell=62%2C0" in pair and shell.url_pushed
    back = shell.campaigns.panel.objects[0]
    assert back.visible and not shell.campaigns.area.panel.visible and "Cell 62,0" in back[1].object
    objects = shell.main.objects
    assert objects.index(shell.campaigns.panel) < objects.index(shell.pairs.panel)  # the way back above the pair
    back[0].clicks += 1  # Back to the campaign grid
    assert shell.campaigns.shown and shell.pairs.pair is None and not back.visible
    assert f"campaign={ident}" in shell.url_query and "cell=" not in shell.url_query and shell.url_pushed
    written = []
    shell._query_writer.param.watch(lambda event: written.append(event.new), "query")
    shell.visit(pair)  # the browser's Back: the cell's pair again, that entry rewritten, not pushed
    assert shell.pairs.pair is not None and shell.url_query == pair and not shell.url_pushed
    assert written == [pair]  # once, never a half-opened view's URL (the packet's, then the pair's)
    assert shell.campaigns.panel.visible and back.visible  # the way back to the grid, above the pair again
    shell.visit(grid)
    assert shell.campaigns.shown and shell.pairs.pair is None and f"campaign={ident}" in shell.url_query
    shell.visit(first)
    assert shell.single_shown and not shell.campaigns.campaign and "campaign=" not in shell.url_query


def test_a_change_within_a_view_rewrites_the_entry(shell):
    shell.campaigns.buttons[0].clicks += 1
    shell.campaigns.click_cell(*ORIGIN_CELL)
    assert shell.url_pushed
    shell.visit(shell.url_query)  # the same view again: nothing new in the history
    assert not shell.url_pushed


def test_a_click_on_a_missing_cell_answers_near_the_grid(shell):
    shell.campaigns.buttons[0].clicks += 1
    sidebar = shell.campaigns.sidebar.select(pn.pane.HTML)[0].object
    shell.campaigns.click_cell(*MISSING_CELL)
    assert "Cell 63,1 is missing: it has no pair to open." in shell.campaigns.cell_note.object
    assert shell.campaigns.sidebar.select(pn.pane.HTML)[0].object == sidebar and shell.campaigns.shown
    assert shell.campaigns.cell_note in list(shell.campaigns.area.view.objects[0])  # in the grid's view


def test_the_emulations_of_the_origin_cell_are_asked_for_and_shown_with_the_origin(shell):
    shell.campaigns.buttons[0].clicks += 1
    report = shell.campaigns._report
    assert report["firstOutputsDiffer"]["emulationSentence"] is None
    assert shell.campaigns.emulate_button is not None
    shell.campaigns.emulate_button.clicks += 1
    report = shell.campaigns._report
    sentence = report["firstOutputsDiffer"]["emulationSentence"]
    assert sentence and sentence in report["originSentence"]
    assert all(f"on {backend} by" in sentence for backend in report["backends"])  # each side of the origin cell
    shown = _view_html(shell)
    assert shell.campaigns.emulate_button is None and 'class="campaign-emulations"' in shown
    assert esc(report["originSentence"]) in shown  # where the origin is shown
    shell.campaigns.click_cell(*ORIGIN_CELL)
    shell.campaigns.back_to_grid()  # the grid keeps its emulations
    assert shell.campaigns._report["firstOutputsDiffer"]["emulationSentence"] == sentence
