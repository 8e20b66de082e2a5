"""Emulation tables as header and rows of plain strings (the CLI prints them, views escape them).

Rows in the report's table order (bitEqualDecisive, else bitEqual, largest first), the baseline always last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

BASELINE_LABEL = "rounded reference (baseline)"
REAL_LIBRARY = "the real library, on this machine"  # an mlx_run row: not an emulation
CPU_DEVICE = "cpu"  # the device of a library run that took MLX's CPU path (the packets come from a GPU kernel)
CPU_PATH = (
    "; here MLX's CPU path, which rounds every step to the packet's dtype, so it is expected to differ from a GPU "
    "kernel's output"
)
SIDES = ("a", "b")


def _of(count: int | None, total: int | None) -> str:
    if count is None:
        return "-"
    return f"{count} of {total}" if total is not None else str(count)


def _note(entry: dict[str, Any]) -> str:
    library = entry.get("library")
    if entry.get("kernel") == "mlx_run":
        ran = f": {library['name']} {library['version']} on the {library['device']}" if library else ""
        path = CPU_PATH if library and library["device"] == CPU_DEVICE else ""
        return REAL_LIBRARY + ran + path + (f"; no numbers: {entry['notEmulated']}" if entry.get("notEmulated") else "")
    if entry.get("notEmulated"):
        return f"not emulated: {entry['notEmulated']}"
    resolved = entry.get("resolved")
    if resolved:
        return f"ran {resolved['kernel']}" + (f", {resolved['blocks']} blocks" if resolved["blocks"] else "")
    return ""


def _global(block: dict[str, Any] | None) -> int | None:
    return None if block is None else block["global"]


def emulation_table(
    emulations: Sequence[dict[str, Any]], decisive: dict[str, Any] | None, baseline: dict[str, Any]
) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of one packet's emulations: decisive, bit-equal, ULP max and a note; baseline last."""
    compared = emulations[0]["compared"] if emulations else None
    on = _global(decisive)
    header = [
        "emulation",
        f"bit-equal on the {on} decisive" if on is not None else "bit-equal on decisive",
        f"bit-equal (of {compared})",
        "ULP max",
        "note",
    ]
    rows = [
        [
            e["id"],
            _of(_global(e["bitEqualDecisive"]), on),
            _of(_global(e["bitEqual"]), compared),
            "-" if e["ulp"] is None or e["ulp"]["max"] is None else str(e["ulp"]["max"]),
            _note(e),
        ]
        for e in emulations
    ]
    rows.append(
        [
            BASELINE_LABEL,
            _of(_global(baseline["bitEqualDecisive"]), on),
            _of(_global(baseline["bitEqual"]), compared),
            "",
            "no kernel arithmetic: plain rounding",
        ]
    )
    return header, rows


def pair_emulation_table(
    matrix: dict[str, Any], differing: dict[str, Any] | None, decisive: dict[str, dict[str, Any] | None]
) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a pair's emulation x side matrix: per side decisive, differing and all elements; baseline last.

    `decisive` is the report's emulationDecisive: each side's column under its own count (each side's own inputs).
    """
    on, apart = {side: _global(decisive[side]) for side in SIDES}, _global(differing)
    rows_in = matrix["rows"]
    compared = rows_in[0]["compared"] if rows_in else {"a": None, "b": None}
    header = [
        "emulation",
        *(f"decisive {side} (of {on[side]})" for side in SIDES),
        *(f"differing {side} (of {apart})" for side in SIDES),
        *(f"bit-equal {side} (of {compared[side]})" for side in SIDES),
    ]

    def cells(row: dict[str, Any]) -> list[str]:
        return [
            *(_of(_global(row["bitEqualDecisive"][side]), None) for side in SIDES),
            *(_of(row["bitEqualDiffering"][side], None) for side in SIDES),
            *(_of(_global(row["bitEqual"][side]), None) for side in SIDES),
        ]

    rows = [[row["id"] + (" (not emulated)" if row.get("notEmulated") else ""), *cells(row)] for row in rows_in]
    rows.append([BASELINE_LABEL, *cells(matrix["baseline"])])
    return header, rows
