"""Capture sets, the one listing of campaigns, a grid sized by its packets, a campaign computed once.

Capture sets kept apart by directory (a request captured twice under one root is two campaigns), the listing the
command line, the DataFrame and the app share, a packet at layer 10^7 that costs what a packet costs, a packet
rewritten between the two passes, the origin's emulation sentence, and one computation for many sessions."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import tracemalloc
from pathlib import Path

import pytest

from explorer.campaigns import once
from explorer.campaigns.grid import campaigns_of
from explorer.campaigns.model import PACKET_CHANGED, CellPair, Member, campaign_id
from explorer.campaigns.report import build_campaign_report, campaign_json
from explorer.campaigns.run import run_campaigns
from explorer.campaigns.sets import capture_sets, listing
from explorer.campaigns.text import campaign_text, grid_lines
from explorer.catalog.discovery import discover
from explorer.samples.campaigns import CURATED_NAME, CURATED_SHAPE, OUTPUT_INDEX, campaign_specs
from explorer.samples.packets import with_record, with_snapshot, write_packet

KEY = ("model", "artifact", "input", 2)
INPUTS = ("q", "k", "v", "ik", "iv")
FAR_LAYER = 10**7
FAR_STEP = 10**6  # the packet schema's highest outputIndex
PEAK_BYTES = 4 * 2**20  # a report, its text and its grid of a handful of cells: far below one index per layer


def member(name, backend, step, layer, output="o", key=KEY):
    return Member(name, f"/x/{name}", "analyzed", (), backend, key, step, layer, 7, INPUTS, output)


def two_sets():
    """One request captured twice: run1 at layers 0-1, run2 again at layers 0-2 with its kernel difference at
    layer 1; both on two backends."""
    members = []
    for run, layers, origin in (("run1", 2, 0), ("run2", 3, 1)):
        for layer in range(layers):
            for backend in ("paged", "contiguous"):
                output = "x" if backend == "contiguous" and layer == origin else "o"
                members.append(member(f"day/{run}/{backend}-{layer}", backend, 62, layer, output))
    return members


def test_a_request_captured_twice_is_two_campaigns_named_by_their_directories():
    campaigns, _ = campaigns_of(two_sets())
    assert [campaign.capture_set for campaign in campaigns] == ["day/run1", "day/run2"]
    assert [campaign.id for campaign in campaigns] == [campaign_id(KEY, "day/run1"), campaign_id(KEY, "day/run2")]
    origins = [campaign_json(campaign)["firstOutputsDiffer"]["modelLayerIndex"] for campaign in campaigns]
    assert origins == [0, 1]
    assert all(cell.state != "duplicate" for campaign in campaigns for cell in campaign.cells)


def test_duplicates_inside_one_directory_stay_duplicates_and_one_set_keeps_its_keys_id():
    members = [member("set/paged-0", "paged", 62, 0), member("set/paged-0-again", "paged", 62, 0)]
    members += [member("set/contiguous-0", "contiguous", 62, 0)]
    (found,) = capture_sets(members)
    assert (found.directory, found.id) == ("set", campaign_id(KEY))
    (campaign,), _ = campaigns_of(members)
    assert [cell.state for cell in campaign.cells] == ["duplicate"]
    assert campaign.notes[0].startswith("1 cell holds two packets of one backend")


def test_packets_beside_a_repeated_set_are_a_set_of_their_own():
    members = [*two_sets(), member("day/paged-9", "paged", 62, 9), member("paged-0", "paged", 62, 0)]
    sets = capture_sets(members)
    assert [found.directory for found in sets] == [".", "day", "day/run1", "day/run2"]
    assert len({found.id for found in sets}) == len(sets)
    listed = listing(members)
    assert [found.directory for found in listed.campaigns] == ["day/run1", "day/run2"]
    assert [found.directory for found in listed.single_backend] == [".", "day"]


def test_refused_packets_join_the_set_that_holds_them_and_never_split_one():
    refused = [
        dataclasses.replace(member("day/run2/paged-0-again", "paged", 62, 0), status="refused"),  # a repeat of a cell
        dataclasses.replace(member("elsewhere/paged-5", "paged", 62, 5, key=("other", "a", "i", 3)), status="refused"),
    ]
    campaigns, notes = campaigns_of([*two_sets(), *refused])
    assert [campaign.capture_set for campaign in campaigns] == ["day/run1", "day/run2"]
    assert [campaign.id for campaign in campaigns] == [found.id for found in listing(two_sets()).campaigns]
    assert campaigns[1].cells[0].packets["paged"] == ("day/run2/paged-0", "day/run2/paged-0-again")
    assert any(note.startswith("1 packet is in no campaign (refused") and "elsewhere/paged-5" in note for note in notes)


def test_the_origin_names_the_emulations_that_reproduce_each_side():
    members = [member("paged-0", "paged", 62, 0), member("contiguous-0", "contiguous", 62, 0, "x")]
    (campaign,), _ = campaigns_of(members)
    emulations = (("mlx_two_pass", 32, 18, 32, 32), ("paged_two_pass", 30, 20, 32, 32))
    pair = CellPair("compared", (), {}, 14, 32, 1, None, "no shared reference", emulations)
    entry = campaign_json(dataclasses.replace(campaign, cells=(dataclasses.replace(campaign.cells[0], pair=pair),)))
    sentence = (
        "Of the 2 emulations asked for, the output at step 62, layer 0 is reproduced bit for bit on contiguous by "
        "mlx_two_pass; on paged by none (closest paged_two_pass: 20 of 32 elements bit-equal)."
    )
    assert entry["firstOutputsDiffer"]["emulationSentence"] == sentence
    assert sentence in entry["originSentence"]
    report = {"campaigns": [entry], "packets": 2, "root": "/x", "notes": []}
    assert sentence in campaign_text(report)[1]


def far_members():
    members = [member(f"{backend}-{layer}", backend, 62, layer) for layer in range(2) for backend in ("paged", "b")]
    return [*members, member("far", "paged", 10**7, FAR_LAYER)]


def test_a_packet_at_step_and_layer_ten_million_costs_a_cell_not_an_index():
    tracemalloc.start()
    try:
        (campaign,), _ = campaigns_of(far_members())
        entry = campaign_json(campaign)
        lines = grid_lines(entry)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES
    assert len(campaign.cells) == 3 and entry["coverage"]["uncapturedLayers"] == [[2, FAR_LAYER - 1]]
    assert "Layers 2 to 9999999 were not captured." in entry["originSentence"]
    # header, layers 0 and 1, the jump, layer 10^7, legend, the jumps named: rows follow the packets
    assert len(lines) == 7 and lines[3].split() == ["~"] and lines[-1].endswith("steps 63-9999999; layers 2-9999999")


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    """The curated campaign written as the capture tool would, and one more paged packet far out."""
    root = tmp_path_factory.mktemp("far") / CURATED_NAME
    for index, (name, spec) in enumerate(campaign_specs(CURATED_SHAPE)):
        write_packet(root / name, spec)
        if index == 0:
            far = with_record(spec, outputIndex=FAR_STEP, modelLayerIndex=FAR_LAYER)
            write_packet(
                root / "paged-far",
                with_snapshot(far, configuration={**far.snapshot["configuration"], "outputIndex": FAR_STEP}),
            )
    return root


def test_a_real_packet_at_layer_ten_million_grids_in_a_few_megabytes(curated):
    run = run_campaigns(curated, jobs=1)
    tracemalloc.start()
    try:
        report = build_campaign_report(run)
        lines = campaign_text(report)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES
    (campaign,) = report["campaigns"]
    assert len(campaign["cells"]) == CURATED_SHAPE.layers * CURATED_SHAPE.steps + 1
    assert campaign["coverage"]["layers"] == [0, 1, FAR_LAYER] and len(lines) < 20


def _copy_over(source: Path, target: Path) -> None:
    for path in target.iterdir():
        path.unlink()
    for path in source.iterdir():
        shutil.copy(path, target / path.name)


def test_a_packet_rewritten_between_the_passes_is_said_to_have_changed(tmp_path, curated):
    root = tmp_path / "rewritten"
    shutil.copytree(curated, root)
    passes = []

    def progress(total):
        passes.append(total)
        if len(passes) == 2:  # between the placing pass and the comparing pass
            _copy_over(root / f"paged-o{OUTPUT_INDEX + 1}-l0", root / f"paged-o{OUTPUT_INDEX}-l1")  # a counted cell
            output = root / f"contiguous-o{OUTPUT_INDEX}-l0" / "output.bin"  # the origin cell: its bytes change
            data = bytearray(output.read_bytes())
            data[0] ^= 1
            output.write_bytes(bytes(data))
        return lambda: None

    report = build_campaign_report(run_campaigns(root, jobs=1, progress=progress))
    (campaign,) = report["campaigns"]
    changed = [cell for cell in campaign["cells"] if PACKET_CHANGED in cell["codes"]]
    assert [(cell["outputIndex"], cell["modelLayerIndex"]) for cell in changed] == [
        (OUTPUT_INDEX, 0),
        (OUTPUT_INDEX, 1),
    ]
    assert all(cell["outputsDiffering"] is None and cell["codes"] == [PACKET_CHANGED] for cell in changed)
    assert any(note.startswith("2 cells changed between the two passes") for note in report["notes"])


def test_sessions_asking_for_one_campaign_together_share_one_computation(curated, monkeypatch):
    entries = [entry for entry in discover(curated) if entry.name != "paged-far"]
    computed, entered, release = [], threading.Event(), threading.Event()
    real = once.run_campaigns

    def counted_run(*args, **kwargs):
        computed.append(1)
        entered.set()
        release.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(once, "run_campaigns", counted_run)
    ident = build_campaign_report(real(curated, jobs=1, entries=entries))["campaigns"][0]["id"]
    answers = []

    def session():
        answers.append(once.campaign_report_once(curated, entries, ident, contents="test", jobs=1))

    threads = [threading.Thread(target=session) for _ in range(6)]
    threads[0].start()
    entered.wait()
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join()
    assert len(computed) == 1 and len(answers) == 6
    assert all(answer is answers[0] and answer["id"] == ident for answer in answers)
    assert once.campaign_report_held(curated, ident, contents="test") is answers[0]
