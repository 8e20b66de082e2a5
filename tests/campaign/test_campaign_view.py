"""The Campaign view draws the report's cells without computing.

The Campaign view draws the report's cells without computing: one rectangle per cell in its state's colour, the
differing-element count as its label, the origin sentence above; its size keeps 32 layers x 16 steps on one screen."""

from __future__ import annotations

import dataclasses

from explorer.campaigns.axis import GAP_MARK, folded
from explorer.campaigns.grid import campaigns_of
from explorer.campaigns.model import STATES, CellPair, Member
from explorer.campaigns.report import campaign_json
from explorer.views.campaign.view import (
    CELL_HEIGHT_PX,
    MAX_GRID_WIDTH_PX,
    MIN_GRID_WIDTH_PX,
    STATE_COLOURS,
    VISIBLE_STEPS,
    build,
    grid,
    grid_size,
    jumps_text,
)

INPUTS = ("q", "k", "v", "ik", "iv")


def _member(backend: str, layer: int, output: str) -> Member:
    return Member(
        f"{backend}-{layer}",
        f"/x/{backend}-{layer}",
        "analyzed",
        (),
        backend,
        ("m", "a", "i", 1),
        0,
        layer,
        7,
        INPUTS,
        output,
    )


def _campaign():
    members = [_member("paged", layer, "o") for layer in range(3)]
    members += [_member("contiguous", 0, "o"), _member("contiguous", 1, "x")]  # layer 2 missing
    (campaign,), _ = campaigns_of(members)
    counted = dataclasses.replace(campaign.cells[1], pair=CellPair("compared", (), {}, 1234, 4096, 1, None, None, None))
    return campaign_json(dataclasses.replace(campaign, cells=(campaign.cells[0], counted, campaign.cells[2])))


def test_every_state_has_its_own_colour():
    assert set(STATE_COLOURS) == set(STATES) and len(set(STATE_COLOURS.values())) == len(STATES)


def test_one_rectangle_per_cell_coloured_by_state_labelled_by_count():
    campaign = _campaign()
    rectangles, labels = grid(campaign).values()
    assert [cell["state"] for cell in campaign["cells"]] == ["identical", "outputs_differ", "missing"]
    assert list(rectangles.dimension_values("colour")) == [STATE_COLOURS[cell["state"]] for cell in campaign["cells"]]
    assert list(labels.dimension_values("label")) == ["", "1234", ""]


def test_the_view_shows_the_origin_sentence_first():
    campaign = _campaign()
    view = build(campaign)
    assert campaign["originSentence"].startswith("The first kernel-originated difference is at step 0, layer 1")
    assert "step 0, layer 1" in view.objects[0].object and "campaign-legend" in view.objects[1].object


def test_thirty_two_layers_by_sixteen_steps_fit_the_main_area():
    width, height = grid_size(16, 32)
    assert width <= MAX_GRID_WIDTH_PX and height == 32 * CELL_HEIGHT_PX + 50


def _steps(steps: int, layers: int = 1, origin_step: int | None = None):
    """A campaign of `steps` steps x `layers` layers, identical but at `origin_step`, layer 0."""
    members = [
        _member(backend, layer, "x" if backend == "contiguous" and step == origin_step and layer == 0 else "o")
        for step in range(steps)
        for layer in range(layers)
        for backend in ("paged", "contiguous")
    ]
    members = [
        dataclasses.replace(m, name=f"{m.name}-{index}", output_index=index // (2 * layers))
        for index, m in enumerate(members)
    ]
    (campaign,), _ = campaigns_of(members)
    return campaign_json(campaign)


def test_a_one_column_grid_keeps_its_axis_titles_whole():
    width, _ = grid_size(1, 2)
    assert width >= MIN_GRID_WIDTH_PX
    assert grid(_steps(1, 2)).values()[0].opts["width"] >= MIN_GRID_WIDTH_PX


def test_a_grid_of_1200_steps_opens_at_the_origin_within_the_main_area():
    campaign = _steps(1200, origin_step=700)
    rectangles = grid(campaign).values()[0]
    assert rectangles.opts["width"] <= MAX_GRID_WIDTH_PX
    low, high = rectangles.opts["xlim"]
    origin_centre = next(slot.centre for slot in folded(campaign["coverage"]["steps"]) if slot.value == 700)
    assert low < origin_centre < high and high - low == VISIBLE_STEPS
    assert "drag it sideways" in build(campaign).objects[3].object


def test_a_layer_ten_million_adds_a_row_and_a_labelled_jump_not_ten_million_rows():
    members = [_member("paged", layer, "o") for layer in range(2)] + [_member("contiguous", 0, "o")]
    members.append(dataclasses.replace(_member("contiguous", 10**7, "o"), name="far"))
    (campaign,), _ = campaigns_of(members)
    entry = campaign_json(campaign)
    rectangles = grid(entry).values()[0]
    assert len(rectangles) == len(entry["cells"]) == 3
    assert [label for _, label in rectangles.opts["yticks"]] == ["0", "1", GAP_MARK, str(10**7)]
    assert "layers 2-9999999" in jumps_text(entry)
