"""Campaign grids from synthetic members whose answer is known by construction.

Campaign grids from synthetic members whose answer is known by construction: the state precedence table, the
origin at the first cell, at the last cell, none, hidden behind a missing cell, tokens diverging first."""

from __future__ import annotations

import dataclasses

import pytest

from explorer.campaigns.grid import build_campaign, campaigns_of, cell_state, origin_of
from explorer.campaigns.model import Member
from explorer.campaigns.report import campaign_json

KEY = ("model", "artifact", "input", 7)
SAME = ("q", "k", "v", "ik", "iv")
OTHER_QUERIES = ("q2", "k", "v", "ik", "iv")


def member(
    backend="paged",
    step=0,
    layer=0,
    *,
    status="analyzed",
    seed=100,
    inputs=SAME,
    output="o",
    name=None,
    key=KEY,
    codes=(),
):
    return Member(
        name or f"{backend}-{step}-{layer}",
        f"/x/{backend}-{step}-{layer}",
        status,
        codes,
        backend,
        key,
        step,
        layer,
        seed,
        inputs,
        output,
    )


# (side a packets, side b packets) -> state; one row per precedence rule, each also holding every lower rule's cause.
PRECEDENCE = [
    ([member(), member(name="again")], [member("contiguous", seed=1, output="x")], "duplicate"),
    ([], [member("contiguous", status="refused")], "missing"),
    ([member(status="refused")], [member("contiguous", seed=1, inputs=OTHER_QUERIES)], "refused"),
    ([member(inputs=None, output=None, status="inconclusive")], [member("contiguous")], "refused"),
    ([member()], [member("contiguous", seed=1, inputs=OTHER_QUERIES, output="x")], "tokens_differ"),
    ([member()], [member("contiguous", inputs=OTHER_QUERIES, output="x")], "inputs_differ"),
    ([member()], [member("contiguous", output="x")], "outputs_differ"),
    ([member()], [member("contiguous")], "identical"),
    ([member(status="inconclusive", codes=("sample_not_confirmed",))], [member("contiguous")], "identical"),
]


@pytest.mark.parametrize("side_a, side_b, state", PRECEDENCE)
def test_state_precedence(side_a, side_b, state):
    assert cell_state([side_a, side_b])[0] == state


def grid(layers, steps, *, origin=None, diverge=None, missing=(), first_inputs=None):
    """Members of a causal campaign: the second backend's output differs at `origin` (step, layer); every later
    cell in causal order (inside the cone) gets differing inputs; seeds differ from step `diverge` on."""
    members = []
    for step in range(steps):
        for layer in range(layers):
            for backend in ("paged", "contiguous"):
                if backend == "contiguous" and (step, layer) in missing:
                    continue
                later = origin is not None and (step, layer) > origin
                inherited = later or (first_inputs is not None and (step, layer) >= first_inputs)
                output = "x" if backend == "contiguous" and ((step, layer) == origin or inherited) else "o"
                inputs = OTHER_QUERIES if backend == "contiguous" and inherited else SAME
                seed = 200 if backend == "contiguous" and diverge is not None and step >= diverge else 100
                members.append(member(backend, step, layer, inputs=inputs, output=output, seed=seed))
    return members


def report(members):
    campaigns, _ = campaigns_of(members)
    assert len(campaigns) == 1
    return campaign_json(campaigns[0])


def at(block):
    return None if block is None else (block["outputIndex"], block["modelLayerIndex"])


def test_origin_at_the_first_cell():
    found = report(grid(3, 2, origin=(0, 0)))
    assert at(found["firstOutputsDiffer"]) == (0, 0)
    assert at(found["firstInputsDiffer"]) == (0, 1) and found["firstInputsDiffer"]["explained"] is True
    assert found["firstTokensDiffer"] is None
    assert found["originSentence"].startswith("The first kernel-originated difference is at step 0, layer 0")


def test_origin_at_the_last_cell():
    found = report(grid(3, 2, origin=(1, 2)))
    assert at(found["firstOutputsDiffer"]) == (1, 2)
    assert found["firstInputsDiffer"] is None
    assert [cell["state"] for cell in found["cells"]] == ["identical"] * 5 + ["outputs_differ"]


def test_no_origin_all_identical():
    found = report(grid(2, 2))
    assert found["firstOutputsDiffer"] is found["firstInputsDiffer"] is found["firstTokensDiffer"] is None
    assert "All 4 cells compared are byte-identical on both backends." in found["originSentence"]


def test_origin_hidden_behind_a_missing_cell():
    # the kernel difference sits in the missing cell (0, 1): the first thing seen is unexplained differing inputs
    found = report(grid(3, 2, first_inputs=(0, 2), missing=((0, 1),)))
    assert found["firstOutputsDiffer"] is None
    assert at(found["firstInputsDiffer"]) == (0, 2) and found["firstInputsDiffer"]["explanation"] == "unexplained"
    assert found["coverage"]["gapsBeforeOrigin"] == [{"outputIndex": 0, "modelLayerIndex": 1, "state": "missing"}]
    assert "may be hidden there" in found["originSentence"]


def test_tokens_diverging_first():
    found = report(grid(2, 3, diverge=0))
    assert {cell["state"] for cell in found["cells"]} == {"tokens_differ"}
    assert found["firstTokensDiffer"] == {"outputIndex": 0, "seedTokens": {"paged": 100, "contiguous": 200}}
    assert found["firstOutputsDiffer"] is None and found["firstInputsDiffer"] is None


def test_bad_input_gets_states_and_notes():
    members = grid(2, 1, origin=(0, 0))
    members += [member("paged", 0, 0, key=("other", "a", "i", 9))]  # a campaign with one backend
    members += [dataclasses.replace(member("paged", 0, 5, name="float-layer"), layer=1.5)]  # not an integer
    members += [member("paged", 0, 0, key=None, name="unplaced", status="refused")]
    members += [member("gpu3", 0, 0), member("gpu3", 0, 1, name="gpu3-b"), member("gpu3", 0, 2, name="gpu3-c")]
    campaigns, notes = campaigns_of(members)
    assert len(campaigns) == 2
    one = next(c for c in campaigns if c.key[0] == "other")
    assert one.backends == ("paged",) and one.cells == () and "one backend only" in one.notes[0]
    three = next(c for c in campaigns if c.key == KEY)
    assert three.backends == ("gpu3", "contiguous") or three.backends == ("gpu3", "paged")
    assert "3 backends" in three.notes[0]
    assert any("not an integer" in note and "float-layer" in note for note in notes)
    assert any("unplaced" in note for note in notes)
    chosen = build_campaign(
        KEY, [m for m in members if m.key == KEY and m.name != "float-layer"], ("paged", "contiguous")
    )
    assert chosen.backends == ("paged", "contiguous") and at(campaign_json(chosen)["firstOutputsDiffer"]) == (0, 0)


def test_origin_record_is_read_off_states_only():
    campaign = campaigns_of(grid(2, 2, origin=(0, 1)))[0][0]
    origin = origin_of(campaign)
    assert origin.first_outputs_differ.position == (0, 1) and origin.first_inputs_differ.position == (1, 0)
    assert origin.explained is True and origin.gaps_before == ()


def test_a_hundred_thousand_packets_of_many_requests_stay_summaries(tmp_path):
    """10^5 placed packets of 50 requests on two backends (with duplicates) grid in seconds; every cell gets a
    state."""
    members = [
        member(backend, step, layer, key=("m", "a", "i", request), name=f"{request}-{backend}-{step}-{layer}")
        for request in range(50)
        for step in range(25)
        for layer in range(40)
        for backend in ("paged", "contiguous")
    ]
    members += [member("paged", 0, 0, key=("m", "a", "i", 0), name="0-paged-0-0-copy")]
    campaigns, notes = campaigns_of(members)
    assert len(campaigns) == 50 and notes == ()
    assert sum(len(campaign.cells) for campaign in campaigns) == 50 * 25 * 40
    first = next(campaign for campaign in campaigns if campaign.key[3] == 0)
    assert first.cells[0].state == "duplicate" and first.cells[0].packets["paged"] == (
        "0-paged-0-0",
        "0-paged-0-0-copy",
    )
    assert first.notes[0].startswith("1 cell holds two packets of one backend")
