"""A full disk never leaves a half-written file.

`--output`, `report` and the app's Export on a small tmpfs in a private mount namespace (root only).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ANALYZED = REPO / "sample_packets" / "injected-error-head5"
REFUSED = REPO / "sample_packets" / "refused-hash-mismatch"  # its export's one PNG renders in seconds
TMPFS_PAGE = 4096  # a tmpfs counts whole pages of file data
PNG_ROOM_PAGES = 2  # pages left for the PNGs: less than their sum, so the disk fills while they are written
TMPFS_SIZE = "4k"  # one page of file data: at most the first small file fits
REPORT_ONLY_SIZE = "64k"  # the refused packet's JSON report and findings (a few KB) fit, the HTML page (MBs) does not
RUN_TIMEOUT_S = 300


def _private_tmpfs_reason() -> str | None:
    """Why a private tmpfs cannot be mounted here, or None when it can."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (CI runs as root)"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    if probe.returncode != 0:
        return f"no private mount namespace here: {probe.stderr.strip()}"
    return None


REASON = _private_tmpfs_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _on_full_tmpfs(mountpoint: Path, command: str, size: str = TMPFS_SIZE) -> subprocess.CompletedProcess:
    """Run the shell `command` with a small tmpfs mounted at `mountpoint`, seen by it alone; lists the mount after."""
    script = (
        f"mount -t tmpfs -o size={size} tmpfs '{mountpoint}' && {command}; status=$?; "
        f"echo; echo LISTING; ls -A '{mountpoint}'; exit $status"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=REPO, env=env
    )


def _listing(done: subprocess.CompletedProcess) -> list[str]:
    return done.stdout.split("LISTING\n", 1)[1].split()


def test_output_on_a_full_disk_exits_2_and_leaves_nothing(tmp_path):
    mountpoint = tmp_path / "full"
    mountpoint.mkdir()
    done = _on_full_tmpfs(
        mountpoint,
        f"{sys.executable} -m explorer analyze '{ANALYZED}' --json --output '{mountpoint}/report.json' > /dev/null",
    )
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr and done.stderr.count("\n") == 1
    assert _listing(done) == []


@pytest.mark.browser  # renders PNGs in chromium
@pytest.mark.parametrize("size", [TMPFS_SIZE, REPORT_ONLY_SIZE])
def test_export_on_a_full_disk_says_so_leaves_nothing_and_the_next_export_keeps_the_name(tmp_path, size):
    mountpoint = tmp_path / "full"
    mountpoint.mkdir()
    # The guard: the packet list's worker processes start from a fresh interpreter that imports this script again
    # (without it each one ran the probe itself and failed: 10 s a run).
    probe = textwrap.dedent(f"""
        import json, os, subprocess, sys
        from pathlib import Path
        from explorer.ui import catalog
        from explorer.ui.shell import Shell
        if __name__ == "__main__":
            out = Path({str(mountpoint)!r})
            shell = Shell(catalog.default_root(), out)
            shell.choose({REFUSED.name!r})
            shell.single.export()
            failed = {{"note": shell.single.export_note, "left": sorted(os.listdir(out))}}
            subprocess.run(["mount", "-o", "remount,size=64m", str(out)], check=True)
            shell.single.export()
            print(json.dumps({{**failed, "after": sorted(os.listdir(out))}}))
    """)
    script = tmp_path / "export_probe.py"
    script.write_text(probe)
    done = _on_full_tmpfs(mountpoint, f"{sys.executable} '{script}'", size)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.split("\nLISTING", 1)[0].strip().splitlines()[-1])
    assert "could not write" in outcome["note"] and outcome["left"] == []
    name = REFUSED.name
    pngs = [file for file in outcome["after"] if file.endswith(".png")]  # the app's Export writes the PNGs too
    assert sorted(set(outcome["after"]) - set(pngs)) == [f"{name}.findings.md", f"{name}.html", f"{name}.report.json"]
    assert pngs and all(file.startswith(f"{name}-") for file in pngs)


@pytest.mark.browser  # renders PNGs in chromium
def test_report_on_a_disk_that_fills_while_pngs_are_written_exits_2_and_leaves_nothing(tmp_path):
    from explorer.analysis.analyze import analyze
    from explorer.export.pages import export_packet

    sized = export_packet(analyze(REFUSED), tmp_path / "sizing")  # the HTML and JSON the report writes first
    pages = sum(-(-path.stat().st_size // TMPFS_PAGE) for path in (sized.html, sized.report))
    size = (pages + PNG_ROOM_PAGES) * TMPFS_PAGE  # room for the HTML and the JSON, not for every PNG
    mountpoint = tmp_path / "full"
    mountpoint.mkdir()
    done = _on_full_tmpfs(
        mountpoint, f"{sys.executable} -m explorer report '{REFUSED}' --out '{mountpoint}'", str(size)
    )
    assert done.returncode == 2, done.stderr
    assert "No space left on device" in done.stderr and "nothing was written" in done.stderr
    assert done.stderr.count("\n") == 1
    assert _listing(done) == []
