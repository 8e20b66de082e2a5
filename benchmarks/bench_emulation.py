"""Benchmark of the kernel emulations on the Qwen3.6-size packet.

Prints numbers only, asserts nothing, writes only a temp dir.

Prints the median in-process time (wall, and this process's CPU time, which a busy
machine inflates less) of the default set (numerics cached, as in the app: emulations
reuse them; target <= 0.6 s on two cores), of each kernel and hypothesis alone (mlx_unfused
on both devices and mlx_run, the installed MLX, among them), of `builds` (every MLX build x GPU
class, launches run once, and the paged kernel's two dispatchers) and of the sweep (target <= 3 s of
CPU), and the median wall time of whole-process
`python -m explorer analyze P --json --emulate default`, `--emulate builds` and `--emulate sweep`
against the same command without --emulate; then, on the T5585 backend pair, the median wall time of
whole-process `python -m explorer compare A B --json --emulate default` against the same
command without --emulate. BLAS and OpenMP run one thread, as the CLI sets.

    python benchmarks/bench_emulation.py [--sets]

`--sets` prints only the three named sets in process (default, builds, sweep).
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from explorer.analysis.analyze import analyze, clear_cache  # noqa: E402
from explorer.analysis.emulation import emulations_for, normalised_ids, shape_of  # noqa: E402
from explorer.samples.packets import FULL_PAIR_NAMES, pair_full_spec, qwen_full_spec, write_packet  # noqa: E402

from bench_analyze import PROCESS_ENV  # noqa: E402

RUNS = 5
SINGLE_IDS = (
    "mlx_two_pass",
    "mlx_two_pass(partialDType=float32)",
    "paged_two_pass",
    "single_pass",
    "mlx_single_pass",
    "mlx_sdpa",
    "mlx_sdpa(device=other)",
    "mlx_sdpa(build=upstream)",
    "paged_two_pass(simdgroups=8)",
    "paged_two_pass(dispatcher=early)",
    "mlx_two_pass(exp=exp2_scaled)",
    "mlx_two_pass(fma=on)",
    "mlx_two_pass(simd=sequential)",
    "paged_two_pass(fma=on)",
    "mlx_unfused",
    "mlx_unfused(device=gpu)",
    "mlx_run",
)


def in_process(packet: Path, request) -> str:
    """Median wall and CPU seconds of the emulations alone, on the cached analysis of `packet`."""
    base = analyze(packet)
    tensors, numerics = base.admission.tensors, base.numerics
    wall, cpu = [], []
    for _ in range(RUNS):
        started, started_cpu = time.perf_counter(), time.process_time()
        emulations_for(
            tensors,
            base.admission.scale,
            numerics.eligible,
            numerics.primary.reference,
            numerics.rounded_to_output.rounded_bits,
            request,
        )
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return f"{statistics.median(wall):.3f} s wall, {statistics.median(cpu):.3f} s CPU"


def whole_process(argv: list[str]) -> float:
    runs = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=PROCESS_ENV, check=False)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def named_sets(packet: Path) -> None:
    """The in-process time of each named set, side by side."""
    shape = shape_of(analyze(packet).admission.tensors)
    for name in ("default", "builds", "sweep"):
        print(
            f"  in-process {name} ({len(normalised_ids(name, shape))} emulations), median of {RUNS}:  "
            f"{in_process(packet, name)}"
        )


def main() -> None:
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
        f"{', '.join(f'{load:.1f}' for load in os.getloadavg())} (wall times depend on the machine's other load)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-emulation-") as scratch:
        packet = write_packet(Path(scratch) / "qwen36-bf16-full-t5585", qwen_full_spec())
        clear_cache()
        print(f"packet QH16/KVH2/D256/T5585 all bfloat16, status {analyze(packet).status}")
        print(f"  default set {', '.join(normalised_ids('default', shape_of(analyze(packet).admission.tensors)))}")
        named_sets(packet)
        if "--sets" in sys.argv[1:]:
            return
        for emulation_id in SINGLE_IDS:
            print(f"  in-process {emulation_id + ':':<36} {in_process(packet, [emulation_id])}")
        command = [sys.executable, "-m", "explorer", "analyze", str(packet), "--json"]
        for name in ("default", "builds", "sweep"):
            print(
                f"  whole process analyze --emulate {name}, median of {RUNS}:  "
                f"{whole_process([*command, '--emulate', name]):.3f} s"
            )
        print(f"  whole process analyze (no --emulate), median of {RUNS}:  {whole_process(command):.3f} s")
        pair(Path(scratch))


def pair(scratch: Path) -> None:
    """Whole-process compare of the T5585 backend pair, with and without --emulate default."""
    paths = [str(write_packet(scratch / name, pair_full_spec(side))) for side, name in FULL_PAIR_NAMES.items()]
    command = [sys.executable, "-m", "explorer", "compare", *paths, "--json"]
    with_emulations = whole_process([*command, "--emulate", "default"])
    without = whole_process(command)
    print("pair QH16/KVH2/D256/T5585 (paged vs contiguous, byte-identical inputs)")
    print(f"  whole process compare --emulate default, median of {RUNS}:  {with_emulations:.3f} s")
    print(f"  whole process compare (no --emulate), median of {RUNS}:     {without:.3f} s")


if __name__ == "__main__":
    main()
