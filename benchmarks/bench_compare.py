"""Benchmark of `explorer compare` on the full-size backend pair (QH16/KVH2/D256/T5585, all bfloat16).

Prints numbers only, asserts nothing, writes only a temp dir.

Prints: the median wall time of whole-process `python -m explorer compare A B --json`
runs, the median of a floor process (the same Python importing numpy and reading and
SHA-256-hashing both packets' files), their ratio, the peak RSS of the compare process,
and the median in-process time of the pair stage alone (`pair_of` on two existing
analyses, and its report) as well as of a cached `compare(A, B)` (both admissions
re-read and re-hashed, numerics from the cache).

    python benchmarks/bench_compare.py
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as the CLI does
    os.environ.setdefault(_variable, "1")

import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from explorer.analysis.analyze import analyze  # noqa: E402
from explorer.pair.compare import compare, pair_of  # noqa: E402
from explorer.samples.packets import FULL_PAIR_NAMES, pair_full_spec, write_packet  # noqa: E402

from bench_analyze import timed_process  # noqa: E402

RUNS = 5
IN_PROCESS_RUNS = 20
MS = 1000.0
FLOOR_SCRIPT = (
    "import hashlib, sys, numpy\n"
    "from pathlib import Path\n"
    "for directory in sys.argv[1:]:\n"
    "    for path in sorted(Path(directory).iterdir()):\n"
    "        hashlib.sha256(path.read_bytes()).hexdigest()\n"
)


def _median_ms(run, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * MS)
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        packets = [write_packet(Path(tmp) / name, pair_full_spec(side)) for side, name in FULL_PAIR_NAMES.items()]
        megabytes = sum(p.stat().st_size for d in packets for p in d.iterdir()) / 1e6
        print(f"pair: {', '.join(p.name for p in packets)} ({megabytes:.1f} MB on disk)")

        compare_runs = [
            timed_process([sys.executable, "-m", "explorer", "compare", *map(str, packets), "--json"])
            for _ in range(RUNS)
        ]
        floor_runs = [timed_process([sys.executable, "-c", FLOOR_SCRIPT, *map(str, packets)]) for _ in range(RUNS)]
        statuses = {status for _, _, status in compare_runs}
        compare_s = statistics.median(seconds for seconds, _, _ in compare_runs)
        floor_s = statistics.median(seconds for seconds, _, _ in floor_runs)
        print(
            f"whole process `explorer compare A B --json`: median {compare_s * MS:.0f} ms over {RUNS} runs "
            f"(exit statuses {sorted(statuses)})"
        )
        print(f"floor (python + numpy, read + SHA-256 both packets): median {floor_s * MS:.0f} ms")
        print(f"ratio compare / floor: {compare_s / floor_s:.2f}x (target <= 2.0x)")
        print(f"peak RSS of the compare process: {max(rss for _, rss, _ in compare_runs):.0f} MB (target <= 400 MB)")

        a, b = (analyze(p) for p in packets)
        pair_ms = _median_ms(lambda: pair_of(a, b), IN_PROCESS_RUNS)
        pair = pair_of(a, b)
        report_ms = _median_ms(pair.report, IN_PROCESS_RUNS)
        cached_ms = _median_ms(lambda: compare(*packets), RUNS)
        print(
            f"in process, both analyses existing: pair stage (pair_of) median {pair_ms:.1f} ms, its report "
            f"{report_ms:.1f} ms, together {pair_ms + report_ms:.1f} ms (target <= 50 ms)"
        )
        print(
            f"in process, compare(A, B) with the numerics cached (both admissions re-read and re-hashed): "
            f"median {cached_ms:.0f} ms"
        )
        print(
            f"pair: {pair.status}, {pair.output.bits.mismatched} of {pair.output.compared} output elements differ, "
            f"target tokens {pair.tokens.target_a} vs {pair.tokens.target_b}"
        )


if __name__ == "__main__":
    main()
