"""Triage always finishes: stopped workers time out, --jobs is capped, aliases are visited once.

Triage always finishes: a stopped worker times out, --jobs is capped, aliases are visited once, and no input
or output environment ends it with exit 1.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from explorer.catalog.discovery import discover
from explorer.catalog.summary import ERROR, TIMEOUT, summarize
from explorer.catalog.triage import triage
from explorer.catalog.workers import MAX_JOBS, map_isolated
from explorer.samples.packets import synthetic_spec, write_packet

REPO = Path(__file__).resolve().parents[2]
STOPPED_NAME = "packet-2"
SHORT_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("limits-root")
    for index in range(6):
        write_packet(root / f"packet-{index}", synthetic_spec(seed=index))
    return root


def stopping_summarize(path: str):
    """summarize, except that the worker holding one packet stops itself (SIGSTOP) and never answers."""
    if path.endswith(STOPPED_NAME):
        os.kill(os.getpid(), signal.SIGSTOP)
    return summarize(path)


def _triage(*arguments: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "explorer", "triage", *arguments], capture_output=True, cwd=REPO, timeout=300, **options
    )


def test_a_stopped_worker_ends_as_one_timeout_line_and_the_rest_complete(root):
    items = {
        item.name: item.summary
        for item in triage(discover(root), jobs=2, timeout=SHORT_TIMEOUT_S, work=stopping_summarize)
    }
    assert len(items) == 6
    assert {name: summary.codes for name, summary in items.items() if summary.status == ERROR} == {
        STOPPED_NAME: (TIMEOUT,)
    }
    assert all(summary.status == "analyzed" for name, summary in items.items() if name != STOPPED_NAME)


def test_the_command_ends_a_worker_stopped_from_outside_after_its_timeout(root):
    """SIGSTOP every worker of a running `triage --timeout`: each packet they held is reported as a timeout, once."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "explorer",
            "triage",
            str(root),
            "--json",
            "--jobs",
            "2",
            "--timeout",
            str(SHORT_TIMEOUT_S),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        workers: list[int] = []
        while not workers and process.poll() is None:
            workers = _children(process.pid)
        for pid in workers:
            os.kill(pid, signal.SIGSTOP)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    lines = [json.loads(line) for line in out.splitlines()]
    assert process.returncode == 0, err
    assert sorted(line["name"] for line in lines) == [f"packet-{index}" for index in range(6)]
    assert all(line["codes"] == [TIMEOUT] for line in lines if line["status"] == ERROR)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent == pid:
                found.append(int(entry))
    return found


def test_jobs_are_capped_at_the_packet_count_and_the_maximum(root):
    completed = _triage(str(root), "--jobs", "300", text=True)
    assert completed.returncode == 0
    assert "(6 worker processes, --jobs 300 capped at one per packet and at most 64" in completed.stdout
    assert MAX_JOBS == 64


def test_workers_that_cannot_start_leave_fewer_workers_and_a_note(monkeypatch):
    """The first start succeeds, the next ones fail as under a process limit: the run ends with one worker."""
    import explorer.catalog.workers as workers

    real_start, starts, notes = workers._start, [], []

    def limited(context, work):
        starts.append(1)
        return real_start(context, work) if len(starts) == 1 else "BlockingIOError: Resource temporarily unavailable"

    monkeypatch.setattr(workers, "_start", limited)
    results = dict(map_isolated(abs, [-1, -2, -3, -4], jobs=4, on_note=notes.append))
    assert results == {0: 1, 1: 2, 2: 3, 3: 4}
    assert notes == [
        "only 1 of 4 worker processes could be started (BlockingIOError: Resource temporarily unavailable)"
    ]
    monkeypatch.setattr(workers, "_start", lambda context, work: "BlockingIOError: no processes left")
    notes.clear()
    assert dict(map_isolated(abs, [-5, -6], jobs=2, on_note=notes.append)) == {0: 5, 1: 6}
    assert notes[0].startswith("no worker process could be started")


def test_a_link_to_the_root_inside_the_root_repeats_no_packet(tmp_path):
    write_packet(tmp_path / "group" / "a", synthetic_spec(seed=1))
    write_packet(tmp_path / "b", synthetic_spec(seed=2))
    (tmp_path / "again").symlink_to(tmp_path)
    (tmp_path / "group-again").symlink_to(tmp_path / "group")
    assert [entry.name for entry in discover(tmp_path)] == ["b", "group/a"]


def test_a_closed_pipe_a_full_device_and_an_over_long_root_are_no_exit_1(root):
    head = subprocess.run(
        f"{sys.executable} -m explorer triage {root} --json --jobs 1 | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert head.returncode == 0 and len(head.stdout.splitlines()) == 1
    assert "Traceback" not in head.stderr and "went away after" in head.stderr
    for arguments in ((str(root),), (str(root), "--json")):
        with open("/dev/full", "w") as full:
            completed = subprocess.run(
                [sys.executable, "-m", "explorer", "triage", *arguments],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
                timeout=300,
            )
        assert completed.returncode == 2
        assert (
            completed.stderr.splitlines()[-1]
            == "explorer: usage error: cannot write to standard output: No space left on device"
        )
    long_root = _triage("r" * 5000, text=True)
    assert long_root.returncode == 2 and long_root.stderr.endswith("...: File name too long\n")
    assert len(long_root.stderr) < 400


def _main_as_nobody(arguments: list[str], warm_up: Path) -> tuple[int, str]:
    """`explorer` run as the user nobody in a forked child (the interpreter's files may be unreadable to nobody,
    so everything is imported, and one packet summarized, before the fork); returns (exit status, stdout)."""
    import multiprocessing.popen_fork  # noqa: F401  (loaded before privileges are dropped)

    from explorer import cli
    from explorer.catalog import triage as _  # noqa: F401

    summarize(warm_up)

    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.dup2(write_end, 1)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (closed by the child's exit: it is the child's stdout until then)
            status = cli.main(arguments)
            sys.stdout.flush()
        finally:
            os._exit(status)
    os.close(write_end)
    with open(read_end, encoding="utf-8") as output:
        text = output.read()
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), text


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the triage as the unprivileged user nobody")
def test_unreadable_and_unsearchable_directories_are_listed_with_a_code_as_nobody():
    base = Path(tempfile.mkdtemp(prefix="triage-nobody-"))
    root, secret = base / "root", base / "secret"
    write_packet(root / "readable", synthetic_spec(seed=1))
    write_packet(root / "group" / "unsearchable" / "inner", synthetic_spec(seed=2))
    write_packet(root / "unreadable", synthetic_spec(seed=3))
    write_packet(secret, synthetic_spec(seed=4))
    (root / "linked").mkdir()
    (root / "linked" / "packet.json").symlink_to(secret / "packet.json")
    for directory in (base, root, root / "group", root / "readable", root / "linked"):
        directory.chmod(0o755)
    for path in (root / "readable").iterdir():
        path.chmod(0o644)
    (root / "group" / "unsearchable").chmod(0o644)  # readable, not searchable
    (root / "unreadable").chmod(0o000)
    secret.chmod(0o700)
    try:
        status, out = _main_as_nobody(["triage", str(root), "--json", "--jobs", "2"], root / "readable")
    finally:
        for directory in (root / "group" / "unsearchable", root / "unreadable"):
            directory.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
    assert status == 0
    lines = {line["name"]: line for line in map(json.loads, out.splitlines())}
    assert lines["readable"]["status"] == "analyzed"
    assert {name: (line["status"], line["codes"][0]) for name, line in lines.items() if name != "readable"} == {
        "group/unsearchable": ("refused", "file_unreadable"),
        "unreadable": ("refused", "file_unreadable"),
        "linked": ("refused", "path_escape"),
    }  # the link leaves its packet directory: refused before it is read
