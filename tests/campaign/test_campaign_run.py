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
from explorer.campaigns.frame import frame_of
from explorer.campaigns.report import build_campaign_report
from explorer.campaigns.run import run_campaigns
from explorer.campaigns.sets import compared, listing_of_summaries
from explorer.campaigns.text import campaign_text
from explorer.catalog.discovery import discover
from explorer.catalog.summary import summary_of
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
    header, sentence = text.stdout.splitlines()[:2]  # each origin sentence under its own campaign's header
    assert text.returncode == 0 and header.startswith("Campaign c") and ", capture set " in header
    assert sentence.startswith("The first kernel-originated difference is at step")
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


@pytest.fixture(scope="module")
def samples_root(tmp_path_factory):
    """`explorer samples --out DIR --campaign`: the samples, the curated campaign and the larger one of the same
    request, each in its own directory."""
    out = tmp_path_factory.mktemp("samples")
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "samples", "--out", str(out), "--campaign"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_samples_campaign_writes_the_larger_campaign_with_the_same_events(samples_root):
    from explorer.samples.campaigns import SAMPLE_NAME, SAMPLE_SHAPE

    assert SAMPLE_SHAPE.layers >= 4 and SAMPLE_SHAPE.steps >= 3 and SAMPLE_SHAPE.query_heads == 16
    (campaign,) = build_campaign_report(run_campaigns(samples_root / SAMPLE_NAME, jobs=2))["campaigns"]
    first = campaign["firstOutputsDiffer"]
    assert (first["outputIndex"], first["modelLayerIndex"]) == (
        OUTPUT_INDEX + SAMPLE_SHAPE.origin[0],
        SAMPLE_SHAPE.origin[1],
    )
    assert campaign["firstTokensDiffer"]["outputIndex"] == OUTPUT_INDEX + SAMPLE_SHAPE.diverge_step + 1
    assert len(campaign["coverage"]["missing"]) == 1
    states = {cell["state"] for cell in campaign["cells"]}
    assert states == {"identical", "outputs_differ", "inputs_differ", "tokens_differ", "missing"}


def test_two_capture_sets_of_one_request_are_two_campaigns_in_every_surface(samples_root):
    """The samples root holds the curated and the larger campaign of one request: two campaigns, each named by its
    directory with its own origin; the text, the DataFrame and the app's listing count the same campaigns."""
    from explorer.samples.campaigns import MODEL_ID, SAMPLE_NAME, SAMPLE_SHAPE

    report = build_campaign_report(run_campaigns(samples_root, jobs=2))
    listed = [campaign for campaign in report["campaigns"] if compared(campaign["backends"])]
    ours = {campaign["captureSet"]: campaign for campaign in listed if campaign["key"]["modelID"] == MODEL_ID}
    assert set(ours) == {CURATED_NAME, SAMPLE_NAME}
    for name, shape in ((CURATED_NAME, CURATED_SHAPE), (SAMPLE_NAME, SAMPLE_SHAPE)):
        first = ours[name]["firstOutputsDiffer"]
        assert (first["outputIndex"], first["modelLayerIndex"]) == (OUTPUT_INDEX + shape.origin[0], shape.origin[1])
        assert "duplicate" not in {cell["state"] for cell in ours[name]["cells"]}
        assert len(ours[name]["cells"]) == shape.layers * shape.steps
    assert (CURATED_SHAPE.origin[1], SAMPLE_SHAPE.origin[1]) == (0, 1)
    summaries = [(entry.name, summary_of(explorer.analyze(entry.path))) for entry in discover(samples_root)]
    app = listing_of_summaries(summaries)
    assert [found.id for found in app.campaigns] == [campaign["id"] for campaign in listed]
    assert len(app.single_backend) == len(report["campaigns"]) - len(listed)
    frame = frame_of(report)
    assert set(frame["captureSet"]) == {campaign["captureSet"] for campaign in listed}
    assert [entry["id"] for entry in frame.attrs["campaigns"]] == [campaign["id"] for campaign in listed]
    count = next(line for line in campaign_text(report) if " among " in line)
    assert count.startswith(f"{len(listed)} campaigns among {report['packets']} packets under ")
    assert count.endswith(f"; {len(app.single_backend)} single-backend capture sets listed apart")


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
    counts, pair = cell_counts((*sides, None)), cell_pair((*sides, None, None))
    assert (counts.inputs_differing, counts.outputs_differing, counts.max_ulp, counts.compared) == (
        pair.inputs_differing,
        pair.outputs_differing,
        pair.max_ulp,
        pair.compared,
    )
    assert counts.outputs_differing > 0 and bool(counts.inputs_differing) == ((step, layer) != (0, 0))
