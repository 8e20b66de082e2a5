"""The script's launcher (explorer/launch.py).

Which lines read the packet ahead, and that doing so changes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.analysis.analyze import analyze, clear_cache
from explorer.launch import packet_to_read
from explorer.packet.admission import ReadAhead, admit

REPO = Path(__file__).resolve().parents[1]
ANALYZED = REPO / "sample_packets" / "clean-fp32q-bf16kv"


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["analyze", "P"], "P"),
        (["analyze", "P", "--json"], "P"),
        (["analyze", "--json", "P"], "P"),
        (["analyze", "P", "--output", "F"], None),  # an option with a value: not guessed at
        (["analyze", "--emulate", "default", "P"], None),
        (["analyze", "P", "--element", "1,2"], None),
        (["analyze", "--json", "--", "P"], None),
        (["analyze", "-P"], None),
        (["analyze"], None),
        (["analyze", "P", "Q"], None),
        (["compare", "A", "B"], None),
        (["report", "P"], None),
        ([], None),
    ],
)
def test_only_a_plain_analyze_line_is_read_ahead(argv, expected):
    assert packet_to_read(argv) == expected


def test_the_admission_read_ahead_is_the_admission_of_that_path():
    ahead = ReadAhead(str(ANALYZED))
    admission = ahead.admission_of(str(ANALYZED))
    fresh = admit(str(ANALYZED))
    assert admission is not None
    assert (admission.packet_sha256, admission.refusals, admission.reasons) == (
        fresh.packet_sha256,
        fresh.refusals,
        fresh.reasons,
    )
    assert {name: tensor.sha256 for name, tensor in admission.tensors.items()} == {
        name: tensor.sha256 for name, tensor in fresh.tensors.items()
    }
    assert ahead.admission_of(str(ANALYZED) + "/") is None  # another spelling: the command admits it itself
    clear_cache()
    assert analyze(str(ANALYZED), admission=admission).report() == analyze(str(ANALYZED)).report()


def test_a_failing_read_ahead_leaves_the_admission_to_the_command(monkeypatch):
    def broken(path):
        raise MemoryError("no room")

    monkeypatch.setattr("explorer.packet.admission.admit", broken)  # the thread looks it up when it starts
    assert ReadAhead(str(ANALYZED)).admission_of(str(ANALYZED)) is None


def test_reading_a_packet_loads_no_numpy():
    """What makes the overlap possible: admission needs numpy only to decode the verified tensors."""
    code = "import sys; from explorer.packet.admission import admit; print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "False"


def test_an_analyze_line_loads_no_shutil():
    """argparse's help width is read without shutil (and its bz2 and lzma): a command that prints no help skips them."""
    code = (
        "import sys; sys.modules.pop('shutil', None)  # some site hooks load it at start-up\n"
        "from explorer.launch import run\n"
        "sys.argv = ['explorer', 'analyze', sys.argv[1], '--json']\n"
        "try:\n    run()\n"
        "except SystemExit:\n    pass\n"
        "print('shutil' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ANALYZED)], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stderr.strip().splitlines()[-1] == "False"


def test_the_script_prints_what_main_prints(capsys):
    from explorer.cli import main

    main(["analyze", str(ANALYZED), "--json"])
    in_process = json.loads(capsys.readouterr().out)
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "analyze", str(ANALYZED), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout) == in_process
