"""The campaign of the synthetic samples end to end.

The campaign of the synthetic samples end to end: the command, the JSON, the DataFrame, and the same report from
the local pool and from a local:2 Dask cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import explorer
from explorer.campaigns.collect import cell_counts, cell_pair
from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.samples.campaigns import BACKENDS, CURATED_NAME, CURATED_SHAPE, OUTPUT_INDEX, write_campaign

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    base = tmp_path_factory.mktemp("campaign")
    write_campaign(base / CURATED_NAME, CURATED_SHAPE)
    return base


def _without_runtime(report):
    return {key: value for key, value in report.items() if key not in ("runtime", "root")}


def test_the_sample_campaign_has_the_origin_it_was_built_with(root):
    report = build_campaign_report(run_campaigns(root, jobs=2))
    (campaign,) = report["campaigns"]
    step, layer = CURATED_SHAPE.origin
    first = campaign["firstOutputsDiffer"]
    assert (first["outputIndex"], first["modelLayerIndex"]) == (OUTPUT_INDEX + step, layer)
    assert first["maxUlp"] == 1 and 0 < first["elementsDiffering"] <= first["compared"]
    # truncation moves each differing element toward zero: the round-to-nearest side is nearer the reference
    assert first["nearerPrimaryReference"]["contiguous"] == 0 and first["nearerPrimaryReference"]["paged"] > 0
    assert campaign["firstInputsDiffer"]["explained"] is True
    assert campaign["firstTokensDiffer"]["outputIndex"] == OUTPUT_INDEX + CURATED_SHAPE.diverge_step + 1
    missing_step, missing_layer = CURATED_SHAPE.missing
    assert campaign["coverage"]["missing"] == [
        {"outputIndex": OUTPUT_INDEX + missing_step, "modelLayerIndex": missing_layer, "absentOn": ["contiguous"]}
    ]
    later = {
        cell["state"] for cell in campaign["cells"] if cell["outputIndex"] > OUTPUT_INDEX + CURATED_SHAPE.diverge_step
    }
    assert later == {"tokens_differ", "missing"}


def test_the_committed_campaign_is_the_curated_one():
    report = build_campaign_report(run_campaigns(REPO / "sample_packets" / CURATED_NAME, jobs=1))
    assert report["campaigns"][0]["firstOutputsDiffer"]["modelLayerIndex"] == CURATED_SHAPE.origin[1]


def test_command_line_json_and_text(root):
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "campaign", str(root), "--json", "--jobs", "2"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["schema"] == "attention-explorer.campaign.v1"
    keys = {
        "outputIndex",
        "modelLayerIndex",
        "state",
        "packets",
        "inputsDiffering",
        "outputsDiffering",
        "maxUlp",
        "codes",
    }
    assert all(set(cell) == keys for cell in report["campaigns"][0]["cells"])
    text = subprocess.run(
        [sys.executable, "-m", "explorer", "campaign", str(root), "--jobs", "2"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert text.returncode == 0 and text.stdout.startswith("The first kernel-originated difference is at step")
    usage = subprocess.run(
        [sys.executable, "-m", "explorer", "campaign", str(root), "--backends", "a"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert usage.returncode == 2 and usage.stderr.startswith("explorer: usage error: --backends")


def test_dataframe_one_row_per_cell_origin_in_attrs(root):
    frame = explorer.campaign(root, jobs=2)
    assert len(frame) == CURATED_SHAPE.layers * CURATED_SHAPE.steps
    assert list(frame["state"].cat.categories)[:2] == ["duplicate", "missing"]
    (campaign,) = frame.attrs["campaigns"]
    origin = frame[
        (frame.outputIndex == campaign["firstOutputsDiffer"]["outputIndex"])
        & (frame.modelLayerIndex == campaign["firstOutputsDiffer"]["modelLayerIndex"])
    ]
    assert origin["state"].tolist() == ["outputs_differ"]


def test_an_empty_root_and_a_root_of_one_backend(tmp_path):
    assert build_campaign_report(run_campaigns(tmp_path, jobs=2))["campaigns"] == []
    one = tmp_path / "one"
    write_campaign(one, CURATED_SHAPE)
    for path in one.iterdir():
        if path.name.startswith("contiguous"):
            for file in path.iterdir():
                file.unlink()
            path.rmdir()
    (campaign,) = build_campaign_report(run_campaigns(tmp_path, jobs=2))["campaigns"]
    assert campaign["cells"] == [] and campaign["originSentence"].startswith("One backend only")


@pytest.mark.endtoend
def test_the_same_report_from_the_local_pool_and_from_local_2(root):
    local = build_campaign_report(run_campaigns(root, jobs=2, emulate=("default",)))
    dask = build_campaign_report(run_campaigns(root, jobs=2, scheduler="local:2", emulate=("default",)))
    assert _without_runtime(local) == _without_runtime(dask)
    assert local["campaigns"][0]["firstOutputsDiffer"]["emulations"]


def test_samples_campaign_writes_the_larger_campaign_with_the_same_events(tmp_path):
    from explorer.samples.campaigns import SAMPLE_NAME, SAMPLE_SHAPE

    done = subprocess.run(
        [sys.executable, "-m", "explorer", "samples", "--out", str(tmp_path), "--campaign"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert SAMPLE_SHAPE.layers >= 4 and SAMPLE_SHAPE.steps >= 3 and SAMPLE_SHAPE.query_heads == 16
    (campaign,) = build_campaign_report(run_campaigns(tmp_path / SAMPLE_NAME, jobs=2))["campaigns"]
    first = campaign["firstOutputsDiffer"]
    assert (first["outputIndex"], first["modelLayerIndex"]) == (
        OUTPUT_INDEX + SAMPLE_SHAPE.origin[0],
        SAMPLE_SHAPE.origin[1],
    )
    assert campaign["firstTokensDiffer"]["outputIndex"] == OUTPUT_INDEX + SAMPLE_SHAPE.diverge_step + 1
    assert len(campaign["coverage"]["missing"]) == 1
    states = {cell["state"] for cell in campaign["cells"]}
    assert states == {"identical", "outputs_differ", "inputs_differ", "tokens_differ", "missing"}


def test_every_sample_packet_is_analyzed_and_inputs_follow_the_outputs(root):
    """Each packet is valid, and the stored keys of a later step really hold the earlier step's rows: the row a
    backend wrote at step s, layer l is the incoming row of its packet at (s, l) and a stored row at (s + 1, l)."""
    report = build_campaign_report(run_campaigns(root, jobs=2))
    assert {code for cell in report["campaigns"][0]["cells"] for code in cell["codes"]} == set()
    assert {explorer.analyze(path).status for path in (root / CURATED_NAME).iterdir()} == {"analyzed"}
    earlier = explorer.analyze(root / CURATED_NAME / "paged-o62-l1").admission.tensors
    later = explorer.analyze(root / CURATED_NAME / "paged-o63-l1").admission.tensors
    assert (later["storedKeys"].bits[:, :, :-1, :] == earlier["storedKeys"].bits).all()
    assert (later["storedKeys"].bits[:, :, -1:, :] == later["incomingKeys"].bits).all()


@pytest.mark.parametrize("step, layer", [(0, 0), (0, 1), (1, 0)])  # outputs differ, inputs differ, tokens differ
def test_a_cells_counts_are_its_pairs_numbers(root, step, layer):
    """cell_counts reads only the two admissions; its counts equal those of `explorer compare` on the cell."""
    sides = tuple(str(root / CURATED_NAME / f"{backend}-o{OUTPUT_INDEX + step}-l{layer}") for backend in BACKENDS)
    counts, pair = cell_counts(sides), cell_pair((*sides, None))
    assert (counts.inputs_differing, counts.outputs_differing, counts.max_ulp, counts.compared) == (
        pair.inputs_differing,
        pair.outputs_differing,
        pair.max_ulp,
        pair.compared,
    )
    assert counts.outputs_differing > 0 and bool(counts.inputs_differing) == ((step, layer) != (0, 0))
