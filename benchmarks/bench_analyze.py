"""Benchmark of `explorer analyze` on Qwen3.6-size packets.

Prints numbers only, asserts nothing, writes only a temp dir.

For the all-bfloat16 packet (QH16/KVH2/D256/T5585) and a float32-Q / float32-output
variant of the same size, it prints: the median wall time of whole-process
`python -m explorer analyze P --json` runs, the median of a floor process (the
same Python importing numpy and reading and SHA-256-hashing every packet file),
their ratio, the median in-process split by stage (from the `timings` hook of
explorer.analysis.analyze.analyze, cache cleared before each run) and the peak
RSS of the whole analyze process. It then prints the import time of every
third-party package the analyze process loads (`python -X importtime`, median of
the runs; cumulative: a package's time includes what it imports) with its installed
version, so that a slow import brought by a newer release shows up. Run it in an
environment installed the README's way (`pip install -e .`, the newest versions).

    python benchmarks/bench_analyze.py
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from explorer.analysis.analyze import analyze, clear_cache
from explorer.samples.packets import qwen_full_spec, write_packet

RUNS = 11  # whole processes of each kind: a shared machine's load moves single runs by a third
KIB = 1024
VARIANTS = {
    "all-bfloat16": {"query_dtype": "bfloat16", "output_dtype": "bfloat16"},
    "float32-Q/float32-output": {"query_dtype": "float32", "output_dtype": "float32"},
}
STAGES = ("admission", "facts", "reference", "comparisons", "serialization")
# Runs one command and prints its wall seconds and peak RSS (KiB). A small launcher, because on Linux a
# child's ru_maxrss starts from its parent's resident size at fork, and this process holds the packets.
LAUNCHER_SCRIPT = (
    "import os, subprocess, sys, time\n"
    "started = time.perf_counter()\n"
    "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "print(time.perf_counter() - started, usage.ru_maxrss, os.waitstatus_to_exitcode(status))\n"
)
FLOOR_SCRIPT = (
    "import hashlib, sys, numpy\n"
    "from pathlib import Path\n"
    "for path in sorted(Path(sys.argv[1]).iterdir()):\n"
    "    hashlib.sha256(path.read_bytes()).hexdigest()\n"
)


# The measured processes cache their bytecode as Python does by default on a user's machine. A sandbox may set
# PYTHONDONTWRITEBYTECODE=1, which makes every run recompile each explorer module from source (about 90 ms of a
# replay process): it is dropped for the children, and each command runs once unmeasured first.
PROCESS_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
_warmed: set[tuple[str, ...]] = set()


def timed_process(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit status of one run of `argv` (after one unmeasured run of the same
    command); its output is discarded."""
    launch = [sys.executable, "-c", LAUNCHER_SCRIPT, *argv]
    if tuple(argv) not in _warmed:
        _warmed.add(tuple(argv))
        subprocess.run(launch, capture_output=True, env=PROCESS_ENV, check=True)
    done = subprocess.run(launch, capture_output=True, text=True, env=PROCESS_ENV, check=True)
    seconds, max_rss_kib, status = done.stdout.split()
    return float(seconds), int(max_rss_kib) / KIB, int(status)


IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)$")


def third_party_imports(argv: list[str]) -> dict[str, float]:
    """Seconds per top-level third-party package imported by one run of `argv` under `python -X importtime`.

    The cumulative time of the package's outermost import (what it imports included); the standard
    library and the explorer itself are left out.
    """
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=PROCESS_ENV)
    installed = metadata.packages_distributions()
    seconds: dict[str, tuple[float, int]] = {}
    for line in done.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match is None:
            continue
        top = match.group(4).split(".")[0]
        if top not in installed or top in sys.stdlib_module_names or top == "explorer":
            continue
        depth = len(match.group(3))
        if top not in seconds or depth <= seconds[top][1]:  # keep the outermost (last printed) import
            seconds[top] = (int(match.group(2)) / 1e6, depth)
    return {name: value for name, (value, _) in seconds.items()}


def version_of(package: str) -> str:
    """The installed version of the distribution providing top-level `package`."""
    return metadata.version(metadata.packages_distributions()[package][0])


def print_imports(packet: Path) -> None:
    runs = [third_party_imports(["-m", "explorer", "analyze", str(packet), "--json"]) for _ in range(RUNS)]
    names = sorted(set().union(*runs), key=lambda name: -statistics.median(run.get(name, 0.0) for run in runs))
    print(f"  third-party imports of the analyze process (cumulative, median of {RUNS}):")
    for name in names:
        print(f"    {name:<20} {version_of(name):<12} {statistics.median(run.get(name, 0.0) for run in runs):.3f} s")


def in_process_split(packet: Path) -> dict[str, float]:
    timings: dict[str, float] = {}
    clear_cache()
    result = analyze(packet, timings=timings)
    started = time.perf_counter()
    json.dumps(result.report(), allow_nan=False, indent=2)
    timings["serialization"] = time.perf_counter() - started
    return timings


def bench(name: str, packet: Path) -> None:
    analyze_runs, floor_runs = [], []
    for _ in range(RUNS):  # interleaved, so that a change in machine load hits both alike
        analyze_runs.append(timed_process([sys.executable, "-m", "explorer", "analyze", str(packet), "--json"]))
        floor_runs.append(timed_process([sys.executable, "-c", FLOOR_SCRIPT, str(packet)]))
    splits = [in_process_split(packet) for _ in range(RUNS)]
    whole = statistics.median(run[0] for run in analyze_runs)
    floor = statistics.median(run[0] for run in floor_runs)
    payload = sum(p.stat().st_size for p in packet.iterdir())
    print(
        f"{name}  ({payload / 1e6:.2f} MB in {len(list(packet.iterdir()))} files, status "
        f"{analyze(packet).status}, exit statuses {sorted({run[2] for run in analyze_runs})})"
    )
    print(f"  whole process, median of {RUNS}:  {whole:.3f} s")
    print(f"  floor process, median of {RUNS}:  {floor:.3f} s")
    print(f"  ratio whole / floor:           {whole / floor:.2f}")
    for stage in STAGES:
        print(f"  in-process {stage + ':':<15}   {statistics.median(s.get(stage, 0.0) for s in splits):.3f} s")
    print(f"  peak RSS whole process (max):  {max(run[1] for run in analyze_runs):.1f} MiB")
    print(f"  peak RSS floor process (max):  {max(run[1] for run in floor_runs):.1f} MiB")
    print_imports(packet)


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-analyze-") as scratch:
        for name, dtypes in VARIANTS.items():
            packet = write_packet(Path(scratch) / name.replace("/", "-"), qwen_full_spec(**dtypes))
            bench(name, packet)


if __name__ == "__main__":
    main()
