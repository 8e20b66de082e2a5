"""`explorer report` for every kind: a packet, a pair, a replay run and a campaign of a root.

Each writes the set the app's Export writes (page, JSON, findings, PNGs), all or none, and prints the paths;
a line naming no such campaign or too many paths is a one-line usage error before anything is rendered.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from explorer import cli

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_packets"
PAGED, CONTIGUOUS = SAMPLES / "qwen36-pair-paged", SAMPLES / "qwen36-pair-contiguous"
REPLAY_RUN = SAMPLES / "replay-qwen36-pair"
CAMPAIGN_ROOT = SAMPLES / "campaign-qwen36-request2"
EXIT_DONE, EXIT_USAGE = 0, 2


def _report(capsys, *argv: str) -> tuple[int, list[Path], str]:
    code = cli.main(["report", *argv])
    captured = capsys.readouterr()
    return code, [Path(line) for line in captured.out.splitlines()], captured.err


def _written(out: Path) -> list[str]:
    return sorted(os.listdir(out))


def _suffixes(paths: list[Path], stem: str) -> list[str]:
    return sorted(path.name[len(stem) :] for path in paths)


def _campaign_id(capsys) -> str:
    assert cli.main(["campaign", str(CAMPAIGN_ROOT), "--json", "--jobs", "1"]) == EXIT_DONE
    (campaign,) = json.loads(capsys.readouterr().out)["campaigns"]
    return campaign["id"]


@pytest.mark.browser  # renders PNGs in chromium
def test_a_pair_is_exported_with_its_emulation_matrix(capsys, tmp_path):
    code, paths, err = _report(capsys, str(PAGED), str(CONTIGUOUS), "--emulate", "default", "--out", str(tmp_path))
    assert (code, err) == (EXIT_DONE, "")
    stem = f"{PAGED.name}-vs-{CONTIGUOUS.name}"
    assert sorted(path.name for path in paths) == _written(tmp_path)
    suffixes = _suffixes(paths, stem)
    assert {".html", ".comparison.json", ".findings.md"} <= set(suffixes)
    assert any(suffix.startswith("-pair") and suffix.endswith(".png") for suffix in suffixes)
    report = json.loads((tmp_path / f"{stem}.comparison.json").read_text())
    assert report["emulationsRequested"] and report["emulationMatrix"] is not None


@pytest.mark.browser  # renders PNGs in chromium
def test_a_packet_exported_with_the_builds_leads_with_which_build_wrote_it(capsys, tmp_path):
    code, _, err = _report(capsys, str(CONTIGUOUS), "--emulate", "builds", "--out", str(tmp_path))
    assert (code, err) == (EXIT_DONE, "")
    report = json.loads((tmp_path / f"{CONTIGUOUS.name}.report.json").read_text())
    assert report["builds"] is not None and report["buildsReason"] is None
    findings = (tmp_path / f"{CONTIGUOUS.name}.findings.md").read_text().split("## Findings\n\n- ", 1)[1]
    assert findings.startswith(
        ("Reproduced bit for bit by the launch of", "No build's launch reproduces the output bit for bit")
    )


@pytest.mark.browser  # renders PNGs in chromium
def test_a_replay_run_is_exported(capsys, tmp_path):
    code, paths, err = _report(capsys, str(REPLAY_RUN), "--out", str(tmp_path))
    report = json.loads((tmp_path / f"{REPLAY_RUN.name}.replay.json").read_text())
    assert (code, err) == (cli.EXIT_BY_STATUS[report["status"]], "")
    assert sorted(path.name for path in paths) == _written(tmp_path)
    assert {".html", ".replay.json", ".findings.md", "-replay.png"} <= set(_suffixes(paths, REPLAY_RUN.name))


@pytest.mark.browser  # renders PNGs in chromium
def test_a_campaign_of_a_root_is_exported(capsys, tmp_path):
    identifier = _campaign_id(capsys)
    code, paths, err = _report(capsys, str(CAMPAIGN_ROOT), "--campaign", identifier, "--out", str(tmp_path))
    assert (code, err) == (EXIT_DONE, "")
    assert sorted(path.name for path in paths) == _written(tmp_path)
    (report,) = [path for path in paths if path.name.endswith(".campaign.json")]
    stem = report.name.removesuffix(".campaign.json")  # named by request and model (issue 39)
    assert {".html", ".campaign.json", ".findings.md", "-campaign.png"} <= set(_suffixes(paths, stem))
    assert json.loads((tmp_path / f"{stem}.campaign.json").read_text())["id"] == identifier


@pytest.mark.parametrize(
    "argv, message",
    [
        ((str(CAMPAIGN_ROOT), "--campaign", "no-such-id"), "--campaign no-such-id: no such campaign under ROOT"),
        ((str(PAGED), str(CONTIGUOUS), "--campaign", "x"), "--campaign ID exports one campaign of one ROOT"),
        ((str(PAGED), str(CONTIGUOUS), str(REPLAY_RUN)), "3 paths"),
        ((str(PAGED), "--emulate", "no_such_kernel"), "--emulate"),
    ],
    ids=["unknown-campaign", "campaign-with-a-pair", "three-paths", "unknown-emulation"],
)
def test_what_cannot_be_exported_is_one_line_exit_2_and_nothing_is_written(capsys, tmp_path, argv, message):
    code, paths, err = _report(capsys, *argv, "--out", str(tmp_path / "out"))
    assert (code, paths) == (EXIT_USAGE, [])
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists() or _written(tmp_path / "out") == []
