"""The terminal summary of a replay report (`explorer replay` without --json): matrix, then each arm.

Pure text from the typed blocks (replay/typed.py); the command line escapes what is not printable.
"""

from __future__ import annotations

from explorer.analysis.text import listed, reasons_lines
from explorer.foundations.formatting import at_text, short_number, text_table
from explorer.replay.typed import (
    Arm,
    CaptureDifference,
    Matrix,
    PacketLine,
    ReadbackEntry,
    Receipt,
    References,
    ReplayReport,
    ToolValue,
)

LADDER_BLOCKS = (("primary", "FP32 reference"), ("rounded", "rounded reference"), ("fp64", "FP64"))


def matrix_heading(matrix: Matrix) -> str:
    """The matrix table's heading, with the elements each output holds."""
    return f"Elements that differ, every output against every other (of {matrix['compared']} each)"


def matrix_lines(matrix: Matrix | None) -> list[str]:
    """The incident's table, led by its reading in one sentence: elements that differ between every two outputs."""
    if matrix is None:
        return ["Matrix: not computed"]
    labels = matrix["outputs"]
    rows = [[label, *map(str, row)] for label, row in zip(labels, matrix["mismatched"], strict=True)]
    return [f"Reading: {matrix['sentence']}", f"{matrix_heading(matrix)}:", *text_table(["", *labels], rows)]


def _receipt(receipt: Receipt) -> str:
    seconds = receipt["seconds"]
    return (
        f"    receipt: dispatch {short_number(receipt['dispatch'])}, "
        f"kernel output {short_number(receipt['kernelOutputDType'])}, "
        f"pages {short_number(receipt['pages'])}, partition tokens {short_number(receipt['partitionTokens'])}, "
        f"segments {short_number(receipt['segmentCount'])}, exit code {short_number(receipt['exitCode'])}, "
        f"{'-' if seconds is None else short_number(seconds) + ' s'}"
    )


def _difference(label: str, difference: CaptureDifference | None) -> str:
    if difference is None:
        return f"{label} not compared"
    return f"{label} {difference['mismatched']} of {difference['compared']} elements differ"


def readback_parts(readback: dict[str, ReadbackEntry]) -> list[str]:
    """Each read-back tensor against the packet's stored bytes: byte-identical, or how many elements differ and the
    first (the text's and the findings' one wording)."""
    return [
        f"{name} byte-identical"
        if entry["identical"]
        else f"{name} {entry['mismatched']} elements differ, first at [kvHead, token, channel] "
        f"{entry['firstDifference']}"
        for name, entry in readback.items()
    ]


def _ladder(references: References | None) -> list[str]:
    if references is None:
        return ["    ladder: no reference (the arm's output was not read, or the packet has no reference)"]
    worst, ulp = references["worstAt"], references["ulp"]
    return [
        "    ladder (linf: largest |output - reference|, where it is):",
        *(
            f"      vs {label}: linf {short_number(references[key]['global']['linf'])}{at_text(worst[key])}, "
            f"rmse {short_number(references[key]['global']['rmse'])}"
            for key, label in LADDER_BLOCKS
        ),
        f"      equal to the rounded reference: {references['equalToRoundedReference']}; ULP vs it: max "
        f"{short_number(ulp['max'])}{at_text(worst['ulp'])}, p99 {short_number(ulp['p99'])}",
    ]


def _tool(tool: dict[str, dict[str, ToolValue]] | None) -> str:
    if tool is None:
        return "    analysis.json: no entry to set beside the explorer's"
    differing = [
        f"{block} {metric} (tool {short_number(value['tool'])}, explorer {short_number(value['explorer'])})"
        for block, values in tool.items()
        for metric, value in values.items()
        if not value["agrees"]
    ]
    if not differing:
        return (
            "    analysis.json: the tool's primary and rounded linf, rmse, relativeL2 lie within what a second "
            "correct FP32 reference can give around the explorer's"
        )
    return "    analysis.json: outside what a second correct FP32 reference can give, in " + "; ".join(differing)


def _arm_lines(name: str, arm: Arm) -> list[str]:
    own = ", the capture's own dispatch" if arm["ownDispatch"] else ""
    codes = f" ({', '.join(arm['codes'])})" if arm["codes"] else ""
    lines = [f"  {name}: {arm['state']}{codes}{own}", _receipt(arm["receipt"])]
    lines += [f"    {p['code']}  {p['pointer'] or ''}  {p['message']}" for p in arm["problems"]]
    if arm["capture"] is not None:
        lines.append(
            "    " + _difference("vs capture:", arm["capture"]) + "; " + _difference("vs partner:", arm["partner"])
        )
    if arm["readback"] is not None:
        lines.append("    readback: " + "; ".join(readback_parts(arm["readback"])))
    if arm["capture"] is not None:
        lines += [*_ladder(arm["references"]), _tool(arm["toolAnalysis"])]
    if arm["emulations"] is not None:
        lines += [
            f"    emulation {e['id']}: {e['bitEqual']['global']} of {e['compared']} bit-equal"
            for e in arm["emulations"]
        ]
    return lines


def _packet(label: str, packet: PacketLine | None) -> str:
    if packet is None:
        return f"{label}: none"
    return f"{label}: {packet['path']} ({packet['status']})"


def summary_lines(report: ReplayReport) -> list[str]:
    """The summary of a replay report: run, status, matrix, per arm state / receipt / readback / ladder / tool."""
    lines = [
        f"Replay run: {report['run']['path']}",
        _packet("Packet", report["packet"]),
        _packet("Partner", report["partner"]),
        f"Status: {report['status']}",
    ]
    refusals = [f"{p['code']}  {p['pointer'] or ''}  {p['message']}" for p in report["refusals"]]
    if refusals:
        lines += listed(f"Refusals ({len(refusals)})", refusals, "  ")
        lines.append("Nothing was computed: the run cannot be read against its packet.")
    else:
        lines += matrix_lines(report["matrix"]) + reasons_lines(report["reasons"]) + ["Arms:"]
        for name, arm in report["arms"].items():
            lines += _arm_lines(name, arm)
    return lines + listed("Notes", report["notes"]) + listed("Limitations", report["limitations"])
