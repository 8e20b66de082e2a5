"""Benchmark of `explorer replay` on the full-size sample run.

The run is QH16/KVH2/D256/T5585, all bfloat16, with its partner; prints numbers only, asserts nothing, writes only a
temp dir.

Prints: the median wall time of whole-process `python -m explorer replay RUN --partner P
--json` runs, the median of a floor process (the same Python importing numpy and reading
and SHA-256-hashing every file of the run and of both packets), their ratio, the peak RSS
of the replay process, and the median in-process time of the replay stage alone
(`replay(RUN, packet=A, partner=B)` given both existing analyses: the run read, hashed,
checked and compared), of its report, and of reading and hashing the run's files alone in the same
process (the part of the stage the file rules demand).

    python benchmarks/bench_replay.py
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as the CLI does
    os.environ.setdefault(_variable, "1")

import hashlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from explorer.analysis.analyze import analyze  # noqa: E402
from explorer.replay.replay import replay  # noqa: E402
from explorer.samples.packets import FULL_PAIR_NAMES, FULL_REPLAY_RUN_NAME, pair_full_spec, write_packet, write_run  # noqa: E402
from explorer.samples.replays import RunVariant  # noqa: E402

from bench_analyze import timed_process  # noqa: E402
from bench_compare import _median_ms  # noqa: E402

RUNS = 11  # whole processes of each kind: a shared machine's load moves single runs by a third
IN_PROCESS_RUNS = 20
MS = 1000.0
FLOOR_SCRIPT = (
    "import hashlib, sys, numpy\n"
    "from pathlib import Path\n"
    "for directory in sys.argv[1:]:\n"
    "    for path in sorted(Path(directory).rglob('*')):\n"
    "        if path.is_file():\n"
    "            hashlib.sha256(path.read_bytes()).hexdigest()\n"
)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        source, partner = (
            write_packet(Path(tmp) / FULL_PAIR_NAMES[side], pair_full_spec(side)) for side in ("contiguous", "paged")
        )
        run = write_run(Path(tmp) / FULL_REPLAY_RUN_NAME, pair_full_spec("contiguous"), RunVariant())
        megabytes = sum(p.stat().st_size for d in (run, source, partner) for p in d.rglob("*") if p.is_file()) / 1e6
        print(f"run {run.name} of {source.name}, partner {partner.name} ({megabytes:.1f} MB on disk)")

        command = [sys.executable, "-m", "explorer", "replay", str(run), "--partner", str(partner), "--json"]
        floor_command = [sys.executable, "-c", FLOOR_SCRIPT, str(run), str(source), str(partner)]
        replay_runs, floor_runs = [], []
        for _ in range(RUNS):  # interleaved, so that a change in machine load hits both alike
            replay_runs.append(timed_process(command))
            floor_runs.append(timed_process(floor_command))
        statuses = {status for _, _, status in replay_runs}
        replay_s = statistics.median(seconds for seconds, _, _ in replay_runs)
        floor_s = statistics.median(seconds for seconds, _, _ in floor_runs)
        print(
            f"whole process `explorer replay RUN --partner P --json`: median {replay_s * MS:.0f} ms over {RUNS} "
            f"runs (exit statuses {sorted(statuses)})"
        )
        print(
            f"floor (python + numpy, read + SHA-256 every file of the run and both packets): median "
            f"{floor_s * MS:.0f} ms"
        )
        print(f"ratio replay / floor: {replay_s / floor_s:.2f}x (target <= 2.0x)")
        print(f"peak RSS of the replay process: {max(rss for _, rss, _ in replay_runs):.0f} MB (target <= 500 MB)")

        a, b = analyze(source), analyze(partner)
        stage_ms = _median_ms(lambda: replay(run, packet=a, partner=b), IN_PROCESS_RUNS)
        result = replay(run, packet=a, partner=b)
        report_ms = _median_ms(result.report, IN_PROCESS_RUNS)
        files = [p for p in run.rglob("*") if p.is_file()]
        hash_ms = _median_ms(lambda: [hashlib.sha256(p.read_bytes()).hexdigest() for p in files], IN_PROCESS_RUNS)
        print(
            f"in process, both analyses existing: replay stage median {stage_ms:.1f} ms, its report "
            f"{report_ms:.1f} ms (target <= 100 ms for the stage); reading + SHA-256 of the run's files alone: "
            f"median {hash_ms:.1f} ms"
        )
        print(
            f"run: {result.status}; matrix {list(result.matrix.labels)}: capture vs partner "
            f"{result.matrix.mismatched[0][1]} of {result.matrix.compared} elements differ"
        )


if __name__ == "__main__":
    main()
