"""Benchmark of the app's bounds on shared and sent work.

Prints numbers only, asserts nothing, writes only a temp dir.

1. Single flight: SESSIONS threads (app sessions) ask at once for the default emulations of
   the Qwen3.6-size packet: how many computations ran, the wall time, and the time of one
   computation alone (numerics cached, as in the app).
2. The attention curve of a T = 8,388,000 packet: tokens drawn, the seconds to choose them,
   and the bytes of the drawn (token, weight) pairs against those of every token.

    python benchmarks/bench_shared_work.py
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from explorer.analysis import analyze as analyze_module  # noqa: E402
from explorer.analysis.analyze import analyze, clear_cache, emulations_of  # noqa: E402
from explorer.samples.packets import qwen_full_spec, synthetic_spec, write_packet  # noqa: E402
from explorer.views.packet.attention import drawn_tokens  # noqa: E402

SESSIONS = 3
HUGE_TOKENS = 8_388_000
POINT_BYTES = 16  # a drawn point: token and weight as float64, as Bokeh sends them


def shared_emulations(packet: Path) -> None:
    runs = []
    real = analyze_module.emulations_for

    def counted(*args):
        runs.append(1)
        return real(*args)

    analyze_module.emulations_for = counted
    try:
        clear_cache()
        analysis = analyze(packet)
        started = time.perf_counter()
        emulations_of(analysis, "default")
        alone = time.perf_counter() - started
        clear_cache()
        analysis = analyze(packet)
        runs.clear()
        threads = [threading.Thread(target=emulations_of, args=(analysis, "default")) for _ in range(SESSIONS)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        together = time.perf_counter() - started
    finally:
        analyze_module.emulations_for = real
    print(
        f"default emulations, Qwen3.6-size packet: {SESSIONS} sessions at once ran {len(runs)} computation(s) "
        f"in {together:.2f} s; one computation alone {alone:.2f} s"
    )


def thinned_curve(packet: Path) -> None:
    weights = analyze(packet).numerics.weights[0]
    started = time.perf_counter()
    tokens = drawn_tokens(weights)
    seconds = time.perf_counter() - started
    print(
        f"attention curve, T = {weights.size}: {tokens.size} tokens drawn, chosen in {seconds:.3f} s; "
        f"{tokens.size * POINT_BYTES / 2**10:.1f} KiB of points instead of "
        f"{weights.size * POINT_BYTES / 2**20:.1f} MiB"
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as scratch:
        shared_emulations(write_packet(Path(scratch) / "qwen", qwen_full_spec()))
        thinned_curve(
            write_packet(
                Path(scratch) / "huge-t",
                synthetic_spec(
                    qh=1,
                    kvh=1,
                    tokens=HUGE_TOKENS,
                    head_dim=1,
                    query_dtype="float16",
                    kv_dtype="float16",
                    output_dtype="float16",
                ),
            )
        )


if __name__ == "__main__":
    main()
