"""Exit statuses and streams of every command, run as real processes (issue 41, items 5 and 6).

A --scheduler that is malformed or unreachable is a one-line usage error (2); a command started with its
standard output or error closed (`>&-`, `2>&-`) keeps its own exit status and writes nowhere else; a name
with a byte that is not UTF-8 is printed `\\xff`, as docs/hostile-environment.md promises.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.foundations.bounded import MESSAGE_TEXT_CHARS
from explorer.samples.packets import synthetic_spec, write_packet

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 300
EXIT_DONE, EXIT_USAGE = 0, 2
MAX_MESSAGE_CHARS = 2 * MESSAGE_TEXT_CHARS + 200  # one message: a bounded address or path, a reason and the words
UNREACHABLE = "tcp://127.0.0.1:1"  # port 1 on the loopback: nothing listens there, the connection is refused
STREAMS = {"stdout": 1, "stderr": 2}
UNDECODABLE = b"x-\xff"  # a directory name that is not UTF-8
SHOWN = b"x-\\xff"  # how every text output shows it


def _explorer(*argv: str | bytes, close: str | None = None) -> subprocess.CompletedProcess:
    """Run `python -m explorer ARGV` with stdout and stderr captured, or with one of them closed (`>&-`, `2>&-`):
    the descriptor is closed in the child before the interpreter starts, as the shell does."""
    descriptor = STREAMS.get(close)
    return subprocess.run(
        [sys.executable, "-m", "explorer", *argv],
        stdout=subprocess.DEVNULL if close == "stdout" else subprocess.PIPE,
        stderr=subprocess.DEVNULL if close == "stderr" else subprocess.PIPE,
        preexec_fn=None if descriptor is None else (lambda: os.close(descriptor)),
        cwd=REPO,
        timeout=RUN_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _one_line(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "backslashreplace")
    assert text.count("\n") == 1 and text.endswith("\n") and len(text) <= MAX_MESSAGE_CHARS, text
    assert "internal error" not in text and "Traceback" not in text
    return text


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A root holding two small packets of one selection on two backends."""
    base = tmp_path_factory.mktemp("root")
    for backend in ("paged", "contiguous"):
        write_packet(base / backend, synthetic_spec(backend=backend))
    return base


@pytest.mark.parametrize("command", ["triage", "campaign"])
@pytest.mark.parametrize("scheduler", ["bogus", UNREACHABLE])
def test_a_scheduler_that_cannot_be_used_is_one_line_exit_2(root, command, scheduler):
    pytest.importorskip("distributed")
    done = _explorer(command, str(root), "--scheduler", scheduler)
    assert done.returncode == EXIT_USAGE and done.stdout == b""
    line = _one_line(done.stderr)
    assert line.startswith(f"explorer: usage error: --scheduler {scheduler}: ")
    if scheduler == UNREACHABLE:
        assert "cannot connect: Connection refused" in line


@pytest.mark.parametrize(
    "argv",
    [
        ("analyze", "{root}/paged"),
        ("compare", "{root}/paged", "{root}/contiguous"),
        ("triage", "{root}"),
        ("campaign", "{root}"),
    ],
    ids=["analyze", "compare", "triage", "campaign"],
)
def test_a_closed_standard_output_keeps_the_commands_exit_status(root, argv):
    done = _explorer(*(part.format(root=root) for part in argv), close="stdout")
    assert (done.returncode, done.stderr) == (EXIT_DONE, b"")


@pytest.mark.parametrize("command", ["analyze", "triage", "campaign"])
def test_a_closed_standard_error_keeps_the_output_and_the_exit_status(root, command):
    target = root / "paged" if command == "analyze" else root
    done = _explorer(command, str(target), close="stderr")
    assert done.returncode == EXIT_DONE and done.stdout
    missing = _explorer(command, str(root / "missing"), close="stderr")  # a usage error (analyze: a refusal, 4)
    assert missing.returncode == (4 if command == "analyze" else EXIT_USAGE)
    assert b"usage error" not in missing.stdout  # the message goes nowhere rather than into the output


@pytest.fixture(scope="module")
def undecodable(tmp_path_factory) -> bytes:
    """A root whose name and whose packet's name hold the byte 0xff: ROOT-\\xff/x-\\xff."""
    base = os.fsencode(tmp_path_factory.mktemp("names")) + b"/root-" + UNDECODABLE
    write_packet(os.fsdecode(base + b"/" + UNDECODABLE), synthetic_spec())
    return base


@pytest.mark.parametrize(
    "argv",
    [(b"analyze", b"{root}/" + UNDECODABLE), (b"triage", b"{root}"), (b"campaign", b"{root}")],
    ids=["analyze", "triage", "campaign"],
)
def test_an_undecodable_name_is_printed_as_the_docs_promise(undecodable, argv):
    done = _explorer(*(part.replace(b"{root}", undecodable) for part in argv))
    assert done.returncode == EXIT_DONE and done.stderr == b"", done.stderr
    assert b"root-" + SHOWN in done.stdout and b"\\udcff" not in done.stdout and b"\xff" not in done.stdout
    if argv[0] == b"triage":  # the table's columns line up with the name as shown
        header, row = (line for line in done.stdout.splitlines() if line.startswith((b"  packet ", b"  " + SHOWN)))
        assert header.index(b"status") == row.index(b"analyzed")
