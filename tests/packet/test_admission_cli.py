"""Exit status and JSON report of the command line for every admission case.

Exit status and JSON report of the command line for every admission case (in process), and a subset via
`python -m explorer`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from admission_cases import ANALYZABLE_CASES, CASCADE_CASES, INCONCLUSIVE_CASES, REFUSED_CASES, ids, write_case
from packet_support import ordered

REPO = Path(__file__).resolve().parents[2]

cli = pytest.importorskip("explorer.cli")
EXIT_STATUS = {"refused": 4, "inconclusive": 3, "analyzed": 0}


def _cli_json(capsys, path: Path) -> tuple[int, dict]:
    code = cli.main(["analyze", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", REFUSED_CASES + CASCADE_CASES, ids=ids(REFUSED_CASES + CASCADE_CASES))
def test_cli_exit_status_refused(tmp_path, capsys, case):
    code, report = _cli_json(capsys, write_case(case, tmp_path / "packet"))
    assert code == EXIT_STATUS["refused"] and report["status"] == "refused"
    assert [(r["code"], r["field"]) for r in report["refusals"]] == ordered(case.expected)
    assert report["inconclusiveReasons"] == []


@pytest.mark.parametrize("case", INCONCLUSIVE_CASES, ids=ids(INCONCLUSIVE_CASES))
def test_cli_exit_status_inconclusive(tmp_path, capsys, case):
    code, report = _cli_json(capsys, write_case(case, tmp_path / "packet"))
    assert code == EXIT_STATUS["inconclusive"] and report["status"] == "inconclusive"
    assert [r["code"] for r in report["inconclusiveReasons"]] == case.expected
    assert report["refusals"] == [] and report["tensors"] is not None


SUBPROCESS_CASES = {
    case.id: case
    for case in REFUSED_CASES + INCONCLUSIVE_CASES + ANALYZABLE_CASES
    if case.id
    in (
        "valid",
        "sha-flipped",
        "json-too-large-packet",
        "path-escape",
        "scale-nan",
        "not-confirmed",
        "cpu-head-dim",
        "packet-json-missing",
    )
}


@pytest.mark.parametrize("case", list(SUBPROCESS_CASES.values()), ids=list(SUBPROCESS_CASES))
def test_python_m_explorer_exit_status(tmp_path, case):
    path = write_case(case, tmp_path / "packet")
    completed = subprocess.run(
        [sys.executable, "-m", "explorer", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    report = json.loads(completed.stdout)
    assert completed.returncode == EXIT_STATUS[report["status"]]
    if case.expected and isinstance(case.expected[0], tuple):
        assert report["status"] == "refused"
        assert [(r["code"], r["field"]) for r in report["refusals"]] == ordered(case.expected)
    elif case.expected:
        assert report["status"] == "inconclusive"
        assert [r["code"] for r in report["inconclusiveReasons"]] == case.expected
    else:
        assert report["status"] == "analyzed" and completed.returncode == 0
    assert "Traceback" not in completed.stderr
