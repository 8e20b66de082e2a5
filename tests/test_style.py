"""The house style, checked: ruff lint and format (pyproject.toml) and one-line module summaries.

`ruff check` and `ruff format --check` run on the whole repository with the settings in pyproject.toml (run
`ruff format .` and `ruff check --fix .` to mend what they find); every module of the
package, the tests and the benchmarks opens with a docstring whose first line is a summary of at most
SUMMARY_CHARS characters, the rest of the text a paragraph after a blank line.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("explorer", "tests", "benchmarks")
SUMMARY_CHARS = 100
RUFF_TIMEOUT_S = 120


def _modules() -> list[Path]:
    return sorted(path for folder in SOURCE_DIRS for path in (REPO / folder).rglob("*.py"))


def _ruff(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *arguments, "--no-cache", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUFF_TIMEOUT_S,
        check=False,
    )


def test_ruff_check_passes():
    done = _ruff("check", "--output-format", "concise")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    done = _ruff("format", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


def _summary_problem(path: Path) -> str | None:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
    if not docstring:
        return "no module docstring"
    lines = docstring.split("\n")
    if len(lines[0]) > SUMMARY_CHARS:
        return f"a first line of {len(lines[0])} characters"
    if len(lines) > 1 and lines[1] != "":
        return "the summary runs onto a second line"
    return None


def test_every_module_opens_with_a_one_line_summary():
    modules = _modules()
    assert len(modules) > 100  # the package, the tests and the benchmarks were found
    problems = {str(path.relative_to(REPO)): problem for path in modules if (problem := _summary_problem(path))}
    assert problems == {}


def test_the_summary_check_finds_a_long_first_line(tmp_path):
    module = tmp_path / "long.py"
    module.write_text('"""' + "x" * (SUMMARY_CHARS + 1) + '"""\n', encoding="utf-8")
    assert _summary_problem(module) == f"a first line of {SUMMARY_CHARS + 1} characters"
    module.write_text('"""Short.\nStill the summary.\n"""\n', encoding="utf-8")
    assert _summary_problem(module) == "the summary runs onto a second line"
