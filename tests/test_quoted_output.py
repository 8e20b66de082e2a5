"""Every command output quoted in the README and docs/ is the tool's own.

Every command output quoted in the README and docs/ is the tool's own: each `$ explorer ...` in a fenced block is
run again and its output and exit status compared with the quote.

A quote may be trimmed: a line holding only `...` stands for any number of lines, so the
quoted pieces must appear in the output in order, each piece as consecutive whole lines,
the first at the top. `$ echo $?` quotes the exit status of the command before it.
Nothing else is normalised: the quotes use relative paths and no durations.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
PROMPT = "$ "
TRIM = "..."
EXIT_QUOTE = "$ echo $?"
COMMAND_TIMEOUT_S = 300


def quoted_commands(document: Path) -> list[tuple[str, list[str], int | None]]:
    """(command, quoted output lines, quoted exit status or None) of every `$ explorer` in the document's blocks."""
    found = []
    for block in FENCE.findall(document.read_text(encoding="utf-8")):
        lines = block.splitlines()
        commands = [i for i, line in enumerate(lines) if line.startswith(PROMPT)]
        for index, start in enumerate(commands):
            line = lines[start]
            end = commands[index + 1] if index + 1 < len(commands) else len(lines)
            if not line.startswith(f"{PROMPT}explorer "):
                continue
            status = None
            if end < len(lines) and lines[end] == EXIT_QUOTE:
                status = int(lines[end + 1])
            found.append((line[len(PROMPT) :], lines[start + 1 : end], status))
    return found


QUOTES = [
    (document.relative_to(REPO).as_posix(), *quote) for document in DOCUMENTS for quote in quoted_commands(document)
]


def matches(quoted: list[str], actual: list[str]) -> bool:
    """True when the quoted pieces (split at TRIM lines) appear in `actual` in order, the first at its top."""
    pieces, piece = [], []
    for line in quoted:
        if line.strip() == TRIM:
            pieces.append(piece)
            piece = []
        else:
            piece.append(line)
    pieces.append(piece)
    if len(pieces) == 1:  # not trimmed: the whole output
        return quoted == actual
    position = 0
    for number, piece in enumerate(pieces):
        if not piece:
            continue
        starts = [position] if number == 0 else range(position, len(actual) - len(piece) + 1)
        found = next((s for s in starts if actual[s : s + len(piece)] == piece), None)
        if found is None:
            return False
        position = found + len(piece)
    return True


def test_the_docs_quote_commands():
    assert any(document == "README.md" or document == "docs/command-line.md" for document, *_ in QUOTES)


@pytest.mark.parametrize("document, command, quoted, status", QUOTES, ids=[f"{d}:{c}" for d, c, _, _ in QUOTES])
def test_a_quoted_output_is_what_the_tool_prints(document, command, quoted, status):
    arguments = shlex.split(command)
    done = subprocess.run(
        [sys.executable, "-m", *arguments],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=COMMAND_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"},
    )
    actual = done.stdout.splitlines()
    assert matches(quoted, actual), (
        f"{document}: the quoted output of `{command}` is not what it prints now:\n" + "\n".join(actual)
    )
    if status is not None:
        assert done.returncode == status


def test_a_trimmed_quote_matches_only_its_pieces_in_order():
    actual = ["a", "b", "c", "d"]
    assert matches(["a", "b", "  ...", "d"], actual) and matches(["a", "..."], actual)
    assert not matches(["b", "..."], actual)  # the first piece is the top of the output
    assert not matches(["a", "...", "d", "c"], actual) and not matches(["a", "c", "..."], actual)
    assert matches(actual, actual) and not matches(actual[:3], actual)  # untrimmed: every line
