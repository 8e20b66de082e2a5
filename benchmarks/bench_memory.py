"""Peak memory of `explorer analyze`, `compare` and `report` against the documented bound.

Peak memory of `explorer analyze`, `compare` and `report` on large geometries against the documented bound;
prints only.

Packets (written into a temp dir): the Qwen-size capture (QH16/KVH2/D256/T5585), an 800 KB packet
with every query head over a long one-channel history (QH256/KVH1/D1/T195312) and a 33 MB float16
packet with T = 8,388,000 (QH1/KVH1/D1). For each, the peak RSS, wall time and exit status of one
whole-process run of `analyze --json`, `compare A COPY --json`, `compare A COPY --emulate default --json`
and `report --out DIR` (its PNGs need /usr/bin/chromium), printed beside the bound of docs/report.md
("Memory"): the loaded interpreter plus the analysis bound for `analyze`, plus twice it for `compare`, plus
the default set's request bound (docs/emulations.md, "Memory bound") with `--emulate default` and for
`report` (its Emulations view runs the default set), which also holds its page (`REPORT_PAGE_BYTES`).

    python benchmarks/bench_memory.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from explorer.analysis.emulation import resolve_all, shape_of
from explorer.analysis.emulation.launch import request_bound
from explorer.analysis.memory import BASE_BYTES, MIB, analysis_bound
from explorer.export.pages import REPORT_PAGE_BYTES
from explorer.packet.admission import admit
from explorer.samples.packets import qwen_full_spec, synthetic_spec, write_packet

from bench_analyze import timed_process

PACKETS = {
    "qwen-size QH16/KVH2/D256/T5585": lambda: qwen_full_spec(),
    "wide QH256/KVH1/D1/T195312": lambda: synthetic_spec(qh=256, kvh=1, tokens=195_312, head_dim=1),
    "long QH1/KVH1/D1/T8388000 float16": lambda: synthetic_spec(
        qh=1, kvh=1, tokens=8_388_000, head_dim=1, kv_dtype="float16", output_dtype="float16"
    ),
}


def _bound(packet: Path) -> int:
    """BASE_BYTES plus the analysis bound of docs/report.md for the packet at `packet`."""
    return BASE_BYTES + analysis_bound(admit(packet))


def _request_bound(packet: Path) -> int:
    """The default set's request bound (docs/emulations.md, "Memory bound") on the packet at `packet`."""
    shape = shape_of(admit(packet).tensors)
    blocks = max(spec.run.parallel_blocks(shape.geometry) for spec in resolve_all("default", shape) if spec.run)
    return request_bound(shape.geometry, blocks)


def _line(label: str, argv: list[str], bound: int | None) -> None:
    seconds, peak_mib, status = timed_process(argv)
    limit = "-" if bound is None else f"{bound / MIB:.0f} MiB"
    share = "" if bound is None else f" ({peak_mib * MIB / bound:.0%} of the bound)"
    print(f"  {label:<28} peak {peak_mib:7.1f} MiB  bound {limit:>9}{share}  {seconds:6.1f} s  exit {status}")


def bench(name: str, packet: Path, copy: Path, out: Path) -> None:
    payload = sum(p.stat().st_size for p in packet.glob("*.bin"))
    bound = _bound(packet)
    print(f"{name}  (payload {payload / 1e6:.2f} MB)")
    explorer = [sys.executable, "-m", "explorer"]
    _line("analyze --json", [*explorer, "analyze", str(packet), "--json"], bound)
    _line("compare --json", [*explorer, "compare", str(packet), str(copy), "--json"], 2 * bound - BASE_BYTES)
    emulations = _request_bound(packet)
    _line(
        "compare --emulate default",
        [*explorer, "compare", str(packet), str(copy), "--json", "--emulate", "default"],
        2 * bound - BASE_BYTES + emulations,
    )
    _line(
        "report --out DIR",
        [*explorer, "report", str(packet), "--out", str(out)],
        bound + emulations + REPORT_PAGE_BYTES,
    )


def main() -> None:
    print(
        f"python {sys.version.split()[0]}; bound = {BASE_BYTES / MIB:.0f} MiB loaded interpreter "
        f"+ analysis bound (docs/report.md, Memory); compare: twice the analysis bound; with emulations (and "
        f"report, whose Emulations view runs the default set) plus the request bound (docs/emulations.md)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        for index, (name, spec) in enumerate(PACKETS.items()):
            packet = write_packet(Path(scratch) / f"packet-{index}", spec())
            copy = Path(scratch) / f"copy-{index}"
            shutil.copytree(packet, copy)
            bench(name, packet, copy, Path(scratch) / f"report-{index}")


if __name__ == "__main__":
    main()
