"""The packet export carries the Emulations view's set: the builds lead its JSON, page and findings.

emulation-v4 §2: which build wrote the packet leads the Emulations view, the CLI, the export and
NAME.findings.md. The app's Export and `explorer report --emulate builds` pass the view's settings to the
export; the analysis' own request is kept beside them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import explorer
from explorer.analysis.emulation import normalised_ids, shape_of
from explorer.analysis.emulation.shown import (
    DEFAULT_BLOCKS,
    DEFAULT_PARTIAL,
    DEFAULT_PARTITION_TOKENS,
    SHOWN_SET,
    request_settings,
    settings_set,
    view_set,
)
from explorer.analysis.findings import builds_finding
from explorer.export.pages import export_packet

SAMPLES = Path(__file__).resolve().parents[2] / "sample_packets"
CONTIGUOUS = SAMPLES / "qwen36-pair-contiguous"  # written by MLX's launch: a builds block with numbers
PAGED = SAMPLES / "injected-error-head5"  # the paged kernel wrote it: builds null, with the reason

VIEW_SETS = [  # (the view's settings by URL name, the emulations it shows)
    ({}, SHOWN_SET),
    ({"emulationSet": "settings"}, SHOWN_SET),
    ({"emulationSet": "builds"}, ("builds",)),
    ({"emulationSet": "sweep"}, ("sweep",)),
    ({"emulationSet": "builds", "blocks": 64}, ("builds",)),
    ({"blocks": 64, "partialDType": "bfloat16"}, settings_set(64, DEFAULT_PARTITION_TOKENS, "bfloat16")),
    ({"partitionTokens": 128}, settings_set(DEFAULT_BLOCKS, 128, DEFAULT_PARTIAL)),
]


@pytest.mark.parametrize("settings, shown", VIEW_SETS)
def test_the_views_set_for_its_settings(settings, shown):
    assert view_set(settings) == shown


REQUESTS = [  # (a command line's --emulate, the view's settings its export shows)
    (None, {}),
    (["builds"], {"emulationSet": "builds"}),
    (["sweep"], {"emulationSet": "sweep"}),
    (" builds ", {"emulationSet": "builds"}),
    (["default"], {}),
    (["builds", "default"], {}),  # two sets: the view shows its own, the JSON holds both
    (["mlx_sdpa(build=upstream)"], {}),
]


@pytest.mark.parametrize("request_, settings", REQUESTS)
def test_the_views_settings_for_a_command_lines_request(request_, settings):
    assert request_settings(request_) == settings


def _exported(tmp_path: Path, analysis, **settings) -> tuple[dict, str, str]:
    paths = export_packet(analysis, tmp_path, **settings)
    return json.loads(paths.report.read_text()), paths.findings.read_text(), paths.html.read_text()


def _findings(markdown: str) -> list[str]:
    section = markdown.split("## Findings\n\n", 1)[1].split("\n\n", 1)[0]
    return [line[2:] for line in section.splitlines()]


def test_builds_chosen_in_the_view_lead_the_exported_json_page_and_findings(tmp_path):
    analysis = explorer.analyze(CONTIGUOUS)
    report, markdown, page = _exported(tmp_path, analysis, emulation={"emulationSet": "builds"})
    shape = shape_of(analysis.admission.tensors)
    assert report["emulationsRequested"] == list(normalised_ids("builds", shape))
    assert report["builds"] is not None and report["builds"]["table"]
    assert report["buildsReason"] is None
    sentence = builds_finding(explorer.analyze(CONTIGUOUS, emulate="builds")).text
    assert _findings(markdown)[0] == sentence  # the builds sentence first, as in the view and the CLI
    assert "emulation-builds" in page


def test_a_paged_packets_export_with_builds_names_the_paged_dispatcher(tmp_path):
    report, markdown, _ = _exported(tmp_path, explorer.analyze(PAGED), emulation={"emulationSet": "builds"})
    assert report["builds"] is None and "paged" in report["buildsReason"]
    assert _findings(markdown)[0].startswith("Written by the engine's paged kernel")


def test_the_default_export_has_no_builds_block(tmp_path):
    report, _, _ = _exported(tmp_path, explorer.analyze(CONTIGUOUS))
    shape = shape_of(explorer.analyze(CONTIGUOUS).admission.tensors)
    assert report["emulationsRequested"] == list(normalised_ids(SHOWN_SET, shape))
    assert report["builds"] is None and report["buildsReason"] is None


def test_the_analysis_own_request_is_kept_beside_the_views_set(tmp_path):
    extra = "mlx_sdpa(build=upstream)"
    analysis = explorer.analyze(CONTIGUOUS, emulate=extra)
    report, _, _ = _exported(tmp_path, analysis)
    shape = shape_of(analysis.admission.tensors)
    assert report["emulationsRequested"] == list(normalised_ids([*SHOWN_SET, extra], shape))
    assert normalised_ids(extra, shape)[0] in report["emulationsRequested"]
