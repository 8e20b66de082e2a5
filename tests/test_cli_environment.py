"""`report` and `compare` (and `analyze`) against a hostile environment.

Closed pipes, full devices, over-long and undecodable paths, unreadable directories (as `nobody`), a missing
browser, an output encoding without the characters, symlink loops in --out; never exit 1, every message one
bounded line.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from explorer import cli
from explorer.export import browser, files
from explorer.foundations.bounded import MESSAGE_TEXT_CHARS
from explorer.samples.packets import synthetic_spec, write_packet

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_packets"
ANALYZED, OTHER = SAMPLES / "injected-error-head5", SAMPLES / "clean-fp32q-bf16kv"
REFUSED = SAMPLES / "refused-hash-mismatch"  # its views draw quickly: the report's PNGs take seconds, not minutes
EXIT_USAGE, EXIT_REFUSED = 2, 4
LONG_PATH_CHARS = 5000  # longer than PATH_MAX (4096) and than any file name (255)
MAX_MESSAGE_CHARS = 2 * MESSAGE_TEXT_CHARS + 200  # one message: a bounded path, a bounded reason and the words
NON_ASCII_MODEL = "modèle-注意"
UNDECODABLE = os.fsdecode(b"bad\xffname")
RUN_TIMEOUT_S = 600
VIEW_COUNT = 9  # PNGs of one report


def _explorer(*argv: str, stdout=subprocess.PIPE, env: dict | None = None, **options) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "explorer", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=RUN_TIMEOUT_S,
        cwd=REPO,
        env=environment,
        **options,
    )


def _one_bounded_line(stderr: bytes | str) -> str:
    text = stderr.decode("utf-8", "backslashreplace") if isinstance(stderr, bytes) else stderr
    assert text.count("\n") == 1 and text.endswith("\n"), text
    assert len(text) <= MAX_MESSAGE_CHARS, len(text)
    assert "internal error" not in text and "Traceback" not in text
    return text


def _closed_pipe_run(*argv: str) -> tuple[int, bytes]:
    """Run explorer with a standard output whose reader has gone away before anything was written."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, "-m", "explorer", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=environment,
    )
    process.stdout.close()
    _, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    return process.returncode, stderr


@pytest.mark.browser  # renders PNGs in chromium
def test_closed_pipes_end_compare_and_report_quietly(tmp_path):
    code, stderr = _closed_pipe_run("compare", str(ANALYZED), str(OTHER))
    assert (code, stderr) == (0, b"")
    code, stderr = _closed_pipe_run("report", str(REFUSED), "--out", str(tmp_path))
    assert (code, stderr) == (EXIT_REFUSED, b"")
    assert len(os.listdir(tmp_path)) == 4  # HTML, JSON, findings and the one PNG of a refused packet


@pytest.mark.browser  # renders PNGs in chromium
def test_a_full_standard_output_is_one_line_exit_2(tmp_path):
    with open("/dev/full", "wb") as full:
        for argv in (
            ("compare", str(ANALYZED), str(OTHER)),
            ("compare", str(ANALYZED), str(OTHER), "--json"),
            ("report", str(REFUSED), "--out", str(tmp_path)),
        ):
            done = _explorer(*argv, stdout=full)
            assert done.returncode == EXIT_USAGE
            assert "No space left on device" in _one_bounded_line(done.stderr)


@pytest.mark.browser  # renders PNGs in chromium
def test_over_long_paths_are_refusals_or_one_bounded_line(tmp_path):
    long_path = "/tmp/" + "x" * LONG_PATH_CHARS
    done = _explorer("compare", long_path, str(ANALYZED))
    assert done.returncode == EXIT_REFUSED and done.stderr == b""
    done = _explorer("report", str(ANALYZED), "--out", long_path)
    assert done.returncode == EXIT_USAGE
    assert "too long" in _one_bounded_line(done.stderr)
    deep = tmp_path.joinpath(*["d" * 200] * 15) / "p"  # a 3,000-character path that opens
    shutil.copytree(ANALYZED, deep)
    done = _explorer("compare", str(deep), str(deep))
    assert done.returncode == EXIT_USAGE
    assert "the same packet.json" in _one_bounded_line(done.stderr)
    long_name = tmp_path / ("p" * 250)  # a legal name; the export's stem is cut to MAX_STEM_CHARS
    shutil.copytree(REFUSED, long_name)
    done = _explorer("report", str(long_name), "--out", str(tmp_path / "out"))
    assert done.returncode == EXIT_REFUSED and done.stderr == b""
    assert f"{'p' * files.MAX_STEM_CHARS}.html" in os.listdir(tmp_path / "out")


@pytest.mark.browser  # renders PNGs in chromium
def test_undecodable_directory_names_are_compared_and_reported(tmp_path):
    packet = tmp_path / UNDECODABLE
    shutil.copytree(REFUSED, packet)
    done = _explorer("compare", str(packet), str(ANALYZED))
    assert done.returncode == EXIT_REFUSED and done.stderr == b""
    assert b"bad\\xffname" in done.stdout  # escaped as docs/hostile-environment.md says: never the raw byte
    done = _explorer("report", str(packet), "--out", str(tmp_path / "out"))
    assert done.returncode == EXIT_REFUSED and done.stderr == b""
    written = sorted(os.listdir(tmp_path / "out"))
    assert "bad_name.html" in written and len(written) == 4  # HTML, JSON, findings, the refused packet's PNG
    assert "bad\\xffname" in (tmp_path / "out" / "bad_name.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------- unprivileged: `nobody`, when the tests run as root

# The interpreter lives under /root here (mode 0700), which `nobody` cannot enter: the script imports what the
# command needs as root, then drops to nobody for good (setgroups, setgid, setuid) and runs the command line.
AS_NOBODY = textwrap.dedent("""
    import argparse, gettext, json, locale, os, pwd, sys
    import explorer.analysis.element, explorer.analysis.emulation, explorer.cli, explorer.export.pages
    import explorer.pair.compare, explorer.pair.model
    import playwright.sync_api  # root's site-packages may be closed to nobody; a user's own install is not
    from explorer.views import VIEWS
    user = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    sys.exit(explorer.cli.main(sys.argv[1:]))
""")


def _as_nobody(*argv: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", AS_NOBODY, *argv], capture_output=True, timeout=RUN_TIMEOUT_S, cwd="/", env=environment
    )


@pytest.fixture
def locked():
    """A directory nobody can reach holding closed/ (mode 0) and searchless/ (readable, not searchable), each
    holding a packet (pytest's tmp_path lies in a directory only its owner may enter)."""
    with tempfile.TemporaryDirectory(prefix="explorer-locked-") as scratch:
        base = Path(scratch)
        base.chmod(0o755)
        for name, mode in (("closed", 0), ("searchless", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)):
            shutil.copytree(ANALYZED, base / name / "p")
            (base / name).chmod(mode)
        yield base
        for name in ("closed", "searchless"):
            (base / name).chmod(stat.S_IRWXU)


@pytest.mark.browser  # renders PNGs in chromium
@pytest.mark.skipif(os.geteuid() != 0, reason="runs the command as `nobody`, which needs the tests to run as root")
def test_unreadable_and_unsearchable_directories_are_refused_or_one_line_as_nobody(locked):
    for name in ("closed", "searchless"):
        packet = str(locked / name / "p")
        for argv in (("analyze", packet), ("compare", packet, str(ANALYZED))):
            done = _as_nobody(*argv)
            assert done.returncode == EXIT_REFUSED and done.stderr == b"", (argv, done.stderr)
        done = _as_nobody("report", str(ANALYZED), "--out", str(locked / name / "out"))
        assert done.returncode == EXIT_USAGE
        assert "Permission denied" in _one_bounded_line(done.stderr)
        done = _as_nobody("compare", str(ANALYZED), str(OTHER), "--output", str(locked / name / "c.json"))
        assert done.returncode == EXIT_USAGE
        assert "Permission denied" in _one_bounded_line(done.stderr)


# ---------------------------------------------------------------- in process


def test_a_missing_browser_is_one_line_exit_2_naming_the_package_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(browser, "CHROMIUM", str(tmp_path / "no-chromium"))
    out = tmp_path / "out"
    assert cli.main(["report", str(ANALYZED), "--out", str(out)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "apt-get install chromium" in _one_bounded_line(captured.err)
    assert "nothing was written" in captured.err
    assert not out.exists() or os.listdir(out) == []


def test_a_missing_playwright_is_one_line_exit_2_naming_the_extra_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    """`pip install -e .` brings no Playwright: `report` says what to install instead of an internal error."""
    monkeypatch.setattr(browser, "PLAYWRIGHT_MODULE", "no_such_playwright_module")
    out = tmp_path / "out"
    assert cli.main(["report", str(ANALYZED), "--out", str(out)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    line = _one_bounded_line(captured.err)
    assert "Playwright is not installed" in line and ".[export]" in line and "nothing was written" in line
    assert not out.exists() or os.listdir(out) == []


@pytest.mark.browser  # renders PNGs in chromium
def test_an_output_encoding_without_the_characters_escapes_them(tmp_path):
    packet = write_packet(tmp_path / "non-ascii", synthetic_spec(model_id=NON_ASCII_MODEL))
    ascii_only = {"PYTHONIOENCODING": "ascii"}
    for argv in (("analyze", str(packet)), ("compare", str(packet), str(ANALYZED))):
        done = _explorer(*argv, env=ascii_only)
        assert done.returncode in (0, 3) and done.stderr == b"", done.stderr
        assert b"mod\\xe8le-\\u6ce8\\u610f" in done.stdout
    loop = tmp_path / "é-loop"
    loop.symlink_to(loop)
    done = _explorer("report", str(packet), "--out", str(loop / "out"), env=ascii_only)
    assert done.returncode == EXIT_USAGE
    assert "\\xe9-loop" in _one_bounded_line(done.stderr)


def test_a_symlink_loop_in_out_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert cli.main(["report", str(ANALYZED), "--out", str(tmp_path / "a" / "exports")]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert "Too many levels of symbolic links" in _one_bounded_line(captured.err)
    assert cli.main(["compare", str(ANALYZED), str(OTHER), "--output", str(tmp_path / "a" / "c.json")]) == EXIT_USAGE
    assert "Too many levels of symbolic links" in _one_bounded_line(capsys.readouterr().err)
