"""Which engine build (and GPU class) wrote a packet: the `builds` block and its sentence.

Read from the scored entries of an `--emulate builds` request (or the sweep, which holds it); no numerics, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from explorer.analysis.emulation.builds import BUILDS, SHIPPED_FIRST
from explorer.analysis.emulation.ids import parse_id
from explorer.analysis.emulation.kernels import (
    BUILDS_NAME,
    CURRENT,
    DISPATCHER_SOURCES,
    EARLY,
    GPU_CLASSES,
    MLX_SDPA,
    PAGED_TWO_PASS,
)
from explorer.analysis.emulation.run import shape_of
from explorer.analysis.emulation.spec import EmulationSpec, PacketShape, launch_key, resolve, resolve_all
from explorer.analysis.result import Analysis, Emulation
from explorer.foundations.record import Record, record

PAGED_BACKEND = "paged"


@record
class Attribution(Record):
    """The report's `builds` block (None with `reason` on a paged packet) and the sentence that leads the views."""

    block: Mapping[str, Any] | None
    reason: str | None
    sentence: str


def _row_specs(shape: PacketShape) -> dict[tuple[str, str], EmulationSpec]:
    """(build, device) -> the resolved mlx_sdpa of that build on that GPU class."""
    return {
        (build, device): resolve(parse_id(f"{MLX_SDPA}(device={device},build={build})"), shape)
        for build in BUILDS
        for device in GPU_CLASSES
    }


def _table(
    rows: Mapping[tuple[str, str], EmulationSpec], entries: Mapping[tuple[str, str], Emulation]
) -> list[dict[str, Any]]:
    return [
        {
            "build": build,
            "device": device,
            "kernel": spec.resolved["kernel"] + (" (_gqa)" if spec.resolved.get("gqaHeadsPerSimdgroup") else ""),
            "blocks": spec.resolved["blocks"],
            "partialDType": spec.run.partial_dtype if spec.run is not None and spec.resolved["blocks"] else None,
            "bitEqual": entries[build, device].bit_equal,
            "bitEqualDecisive": entries[build, device].bit_equal_decisive,
        }
        for (build, device), spec in rows.items()
    ]


def _devices(table: Sequence[Mapping[str, Any]], build: str, count: int) -> list[str]:
    return [row["device"] for row in table if row["build"] == build and row["bitEqual"] == count]


def _entry(table: Sequence[Mapping[str, Any]], build: str, count: int) -> dict[str, Any]:
    return {"build": build, "devices": _devices(table, build, count), "bitEqual": count}


def _indistinguishable(rows: Mapping[tuple[str, str], EmulationSpec]) -> list[list[str]]:
    """Groups of two or more builds whose launch is the same on every GPU class here (names sorted)."""
    groups: dict[tuple, list[str]] = {}
    for build in BUILDS:
        groups.setdefault(tuple(launch_key(rows[build, device]) for device in GPU_CLASSES), []).append(build)
    return sorted(sorted(group) for group in groups.values() if len(group) > 1)


def builds_block(shape: PacketShape, emulations: Sequence[Emulation]) -> dict[str, Any] | None:
    """The `builds` block when every launch of the builds set was scored in `emulations`, else None."""
    by_id = {e.id: e for e in emulations}
    rows = _row_specs(shape)
    representatives = {launch_key(s): s.id for s in resolve_all(BUILDS_NAME, shape) if s.kernel == MLX_SDPA}
    ids = {key: representatives.get(launch_key(spec)) for key, spec in rows.items()}
    if any(found not in by_id for found in ids.values()):
        return None
    table = _table(rows, {key: by_id[found] for key, found in ids.items()})
    compared = next(iter(by_id.values())).compared
    # no element compared: nothing is reproduced
    reproducing = [_entry(table, build, compared) for build in BUILDS if compared and _devices(table, build, compared)]
    counted = [row for row in table if row["bitEqual"] is not None]
    closest = None
    if not reproducing and counted:
        best = max(counted, key=lambda row: row["bitEqual"])  # the first in table order on a tie
        closest = _entry(table, best["build"], best["bitEqual"])
    return {
        "reproducing": reproducing,
        "closest": closest,
        "indistinguishable": _indistinguishable(rows),
        "table": table,
    }


def _on(devices: Sequence[str]) -> str:
    return "every GPU class" if len(devices) == len(GPU_CLASSES) else f"{'/'.join(devices)}-class GPUs"


def _differing(block: Mapping[str, Any], build: str, compared: int) -> str:
    """How many elements a build's launches leave different: one count, or a count per group of GPU classes."""
    by_count: dict[int, list[str]] = {}
    for row in block["table"]:
        if row["build"] == build and row["bitEqual"] is not None:
            by_count.setdefault(compared - row["bitEqual"], []).append(row["device"])
    if not by_count:
        return "not emulated here"
    if len(by_count) == 1:
        return f"{next(iter(by_count)):,} of {compared:,} elements differ"
    counts = sorted(by_count.items(), reverse=True)
    said = (f"{n:,} {'differs' if n == 1 else 'differ'} on {_on(devices)}" for n, devices in counts)
    return f"of {compared:,} elements, " + ", ".join(said)


def _same_as(block: Mapping[str, Any], build: str) -> list[str]:
    group = next((g for g in block["indistinguishable"] if build in g), [build])
    return [b for b in SHIPPED_FIRST if b in group and b != build]


def builds_sentence(block: Mapping[str, Any], compared: int) -> str:
    """ "Reproduced bit for bit by the launch of B on s/d-class GPUs (upstream launches the same kernel here); not by
    C (786 of 4,096 elements differ)", or the closest when no build reproduces every element (never a guess)."""
    reproducing = {entry["build"]: entry["devices"] for entry in block["reproducing"]}
    named: list[str] = []
    parts = []
    for build in (b for b in SHIPPED_FIRST if b in reproducing and b not in named):  # one named, its twins after
        same = [b for b in _same_as(block, build) if b in reproducing and b not in named]
        named += [build, *same]
        also = f" ({', '.join(same)} {'launches' if len(same) == 1 else 'launch'} the same kernel here)" if same else ""
        parts.append(f"{build} on {_on(reproducing[build])}{also}")
    others = [f"{b} ({_differing(block, b, compared)})" for b in SHIPPED_FIRST if b not in reproducing]
    if parts:
        sentence = "Reproduced bit for bit by the launch of " + "; of ".join(parts)
        return sentence + (f"; not by {', '.join(others)}." if others else ".")
    closest = block["closest"]
    if closest is None:
        return "No build's launch has numbers on this packet: none is attributed."
    return (
        f"No build's launch reproduces the output bit for bit (none is attributed); the closest is "
        f"{closest['build']} on {_on(closest['devices'])} ({closest['bitEqual']:,} of {compared:,} elements "
        f"equal); the others: {', '.join(others)}."
    )


PAGED_IDS = {CURRENT: PAGED_TWO_PASS, EARLY: f"{PAGED_TWO_PASS}(dispatcher={EARLY})"}  # normalised on every packet


def paged_sentence(dispatch: str | None, counts: Mapping[str, tuple[int | None, int, str | None]]) -> str:
    """The paged packet's sentence: the paged kernel wrote it, and what its emulation under each dispatcher
    reproduces; `counts`: dispatcher -> (bit-equal or None, compared, why not emulated)."""
    said = []
    for dispatcher, (bit_equal, compared, not_emulated) in counts.items():
        where = f"the {dispatcher} dispatcher ({DISPATCHER_SOURCES[dispatcher]})"
        found = f"not emulated ({not_emulated})" if bit_equal is None else f"{bit_equal:,} of {compared:,} elements"
        said.append(f"{where}: {found}" + ("" if bit_equal is None else " bit-equal"))
    return (
        f"Written by the engine's paged kernel (dispatch {dispatch}), not by an MLX build's launch: no build is "
        f"attributed; the paged kernel's emulation under {'; under '.join(said)}."
    )


def attribution(
    shape: PacketShape, emulations: Sequence[Emulation] | None, backend: str | None, dispatch: str | None
) -> Attribution | None:
    """The builds attribution of a packet's scored emulations; None when the builds set was not among them."""
    if not emulations or shape.geometry is None:
        return None
    block = builds_block(shape, emulations)
    by_id = {e.id: e for e in emulations}
    if block is None or any(found not in by_id for found in PAGED_IDS.values()):
        return None
    if backend == PAGED_BACKEND:
        counts = {
            dispatcher: (by_id[found].bit_equal, by_id[found].compared, by_id[found].not_emulated)
            for dispatcher, found in PAGED_IDS.items()
        }
        reason = (
            f"the packet's backend is paged (dispatch {dispatch}): its output was written by the engine's paged "
            "kernel, which is not MLX's launch, so no MLX build is attributed"
        )
        return Attribution(None, reason, paged_sentence(dispatch, counts))
    return Attribution(MappingProxyType(block), None, builds_sentence(block, emulations[0].compared))


def report_sentence(report: Mapping[str, Any]) -> str | None:
    """The builds sentence of a report dict; None when the builds set was not computed."""
    entries = {e["id"]: e for e in report.get("emulations") or ()}
    if report.get("builds") is not None:
        return builds_sentence(report["builds"], next(iter(entries.values()))["compared"])
    if report.get("buildsReason") is None:
        return None
    counts = {}
    for dispatcher, found in PAGED_IDS.items():
        entry = entries[found]
        bit_equal = None if entry["bitEqual"] is None else entry["bitEqual"]["global"]
        counts[dispatcher] = (bit_equal, entry["compared"], entry["notEmulated"])
    return paged_sentence((report.get("selection") or {}).get("dispatch"), counts)


def packet_attribution(analysis: Analysis, emulations: Sequence[Emulation] | None = None) -> Attribution | None:
    """The builds attribution of an analysed packet's emulations (or of `emulations` a view scored on it)."""
    admission = analysis.admission
    emulations = analysis.emulations if emulations is None else emulations
    if emulations is None or admission.tensors is None:
        return None
    return attribution(
        shape_of(admission.tensors),
        emulations,
        (admission.identity or {}).get("backend"),
        (admission.selection or {}).get("dispatch"),
    )
