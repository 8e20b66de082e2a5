"""The terminal summary of a packet report (`explorer analyze` without --json) and of one element.

Reads the report dict through its typed blocks (analysis/typed.py) and returns lines, which the command line
escapes; the emulation table comes from the caller (explorer/views/packet/emulation_tables.py, a higher layer).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from explorer.analysis.typed import Identity, Metrics, PacketReport, Reason, Refusal, RoundedReference, ScoreBlock
from explorer.foundations.formatting import at_text, short_number, text_table

HEX_WIDTH = 8  # hex digits of a float32 scale's bits
EmulationTable = Callable[..., tuple[Sequence[str], Sequence[Sequence[str]]]]  # (entries, decisive, baseline)


def _metric_cells(block: Metrics) -> list[str]:
    return [*(short_number(block[key]) for key in ("linf", "rmse", "relativeL2")), block["undefinedReason"] or ""]


def _identity_lines(identity: Identity | None) -> list[str]:
    if identity is None:
        return ["Identity: not established"]
    lines = ["Identity (declared, not authenticated):"]
    lines += [f"  {key}: {identity[key]}" for key in ("modelID", "artifactSHA256", "inputSHA256", "backend")]
    return lines


def _selection_lines(report: PacketReport) -> list[str]:
    lines = []
    selection, geometry, sample = report["selection"], report["geometry"], report["sample"]
    if geometry is not None:
        lines.append(
            f"Geometry: QH {geometry['queryHeads']}, KVH {geometry['kvHeads']} "
            f"(group {geometry['groupSize']}), D {geometry['headDim']}, T {geometry['tokens']}"
        )
    if selection is not None:
        lines.append(
            f"Selection: request {selection['requestID']}, output index {selection['outputIndex']}, "
            f"{selection['phase']}, layer {selection['modelLayerIndex']} (storage {selection['storageLayerIndex']}), "
            f"offset {selection['offsetBefore']} -> {selection['offsetAfter']}, scale "
            f"{short_number(selection['scale'])} (0x{selection['scaleBits']:0{HEX_WIDTH}X}), dispatch "
            f"{selection['dispatch']}, kernel output {selection['kernelOutputDType']}"
        )
    if sample is not None:
        lines.append(
            f"Sample: {sample['sampleOutcome']}, forward succeeded {json.dumps(sample['forwardSucceeded'])}, "
            f"tokens {sample['seedToken']} -> {sample['targetToken']}, selected forwards {sample['selectedForwards']}"
        )
    return lines


def _tensor_lines(report: PacketReport) -> list[str]:
    lines = []
    tensors = report["tensors"]
    if tensors is not None:
        kinds = ("nan", "signalingNan", "positiveInfinity", "negativeInfinity")
        rows = [
            [name, facts["dtype"], "x".join(map(str, facts["shape"])), *(str(facts["nonfinite"][k]) for k in kinds)]
            for name, facts in tensors.items()
        ]
        lines += ["Tensors:", *text_table(["tensor", "dtype", "shape", "NaN", "sNaN", "+inf", "-inf"], rows)]
    last_row = report["lastRow"]
    if last_row is not None:
        for part in ("keys", "values"):
            facts = last_row[part]
            flips = facts["bitFlips"]
            lines.append(
                f"Last row {part}: {facts['mismatched']} of {facts['compared']} elements differ (bit flips: sign "
                f"{flips['sign']}, exponent {flips['exponent']}, mantissa {flips['mantissa']})"
            )
    return lines


def _ulp_line(block: RoundedReference) -> str:
    ulp = block["ulp"]
    return (
        f"{block['label']}: ULP max {short_number(ulp['max'])}{at_text(ulp['maxAt'])}, "
        f"p99 {short_number(ulp['p99'])}, nonfinite pairs {ulp['nonfinitePairs']}"
    )


def _largest_error_line(primary) -> list[str]:
    """The largest |output - primary reference| and its element (over the eligible heads when only some are)."""
    block = primary["global"] if primary["eligibleGlobal"] is None else primary["eligibleGlobal"]
    if block["linf"] is None:
        return []
    over = "" if primary["eligibleGlobal"] is None else " (eligible heads)"
    return [f"Largest |output - primary reference|{over}: {short_number(block['linf'])}{at_text(block['linfAt'])}"]


def _reference_lines(report: PacketReport) -> list[str]:
    reference = report["reference"]
    if reference is None:
        return ["Reference: not computed"]
    primary, rounded = reference["primary"], reference["roundedToOutputDType"]
    score: ScoreBlock | None = report.get("score")
    scores = (score or {}).get("perHead") or [None] * len(primary["perHead"])
    header = ["head", "kv", "score", "linf", "rmse", "relativeL2", "undefined"]
    rows = [
        [str(head["queryHead"]), str(head["kvHead"]), short_number(value), *_metric_cells(head)]
        for head, value in zip(primary["perHead"], scores, strict=True)
    ]
    rows.append(["all", "", short_number(score["value"]) if score else "-", *_metric_cells(primary["global"])])
    if primary["eligibleGlobal"] is not None:
        rows.append(["eligible", "", "", *_metric_cells(primary["eligibleGlobal"])])
    if not rounded["identity"]:
        header.append(f"linf vs {rounded['dtype']}-rounded ref")
        cells = [short_number(block["linf"]) for block in (*rounded["perHead"], rounded["global"])]
        # the rounded block has no eligible-heads aggregate: that row, when present, gets an empty cell
        for row, cell in zip(rows, cells + [""] * (len(rows) - len(cells)), strict=True):
            row.append(cell)
    lines = [f"Reference: {primary['label']}", *text_table(header, rows), *_largest_error_line(primary)]
    lines.append(_ulp_line(rounded))
    if reference["roundedToKernelOutputDType"] is not None:
        lines.append(_ulp_line(reference["roundedToKernelOutputDType"]))
    return lines


def _emulation_lines(report: PacketReport, emulation_table: EmulationTable) -> list[str]:
    if report["emulationsRequested"] is None:
        return []
    if report["emulations"] is None:
        return [
            f"Emulations requested ({len(report['emulationsRequested'])}): not computed, "
            "no reference exists for this packet"
        ]
    decisive = report["emulationDecisive"]
    return [
        "Kernel emulations (counterfactuals, not the reference), ordered by the decisive elements "
        f"(where they disagree: {'none computed' if decisive is None else decisive['global']}):",
        *text_table(*emulation_table(report["emulations"], decisive, report["emulationBaseline"])),
    ]


def _score_lines(report: PacketReport) -> list[str]:
    score = report.get("score")
    if score is None:
        return []
    head = "" if score["worstHead"] is None else f" (query head {score['worstHead']})"
    missing = score["headsNotCompared"]
    missing_text = f"; {missing} of {len(score['perHead'])} heads not compared" if missing else ""
    return [f"Score (error / allowance, docs/report.md): {short_number(score['value'])}{head}{missing_text}"]


def listed(heading: str, items: Sequence[str], bullet: str = "  - ") -> list[str]:
    """`heading:` over its items, one a line; nothing when there are none (the text summaries' one layout)."""
    return [f"{heading}:", *(bullet + item for item in items)] if items else []


def reasons_lines(reasons: Sequence[Reason]) -> list[str]:
    """The inconclusive reasons under their heading, one a line (none: nothing)."""
    return listed(f"Inconclusive reasons ({len(reasons)})", [f"{r['code']}  {r['message']}" for r in reasons], "  ")


def refusal_line(refusal: Refusal) -> str:
    """A packet's refusal as the summaries list it: code, field (or the packet.json itself) and message."""
    field = "(packet.json)" if refusal["field"] is None else refusal["field"]
    return f"{refusal['code']}  {field}  {refusal['message']}"


def _missing_packet(report: PacketReport) -> str | None:
    """The one line for a packet path with nothing there (path_missing of the path itself), else None."""
    refusals = report["refusals"]
    if len(refusals) == 1 and refusals[0]["code"] == "path_missing" and refusals[0]["field"] is None:
        return f"{refusals[0]['message']} (path_missing)"
    return None


def _builds_lines(report: PacketReport) -> list[str]:
    """Which build wrote the packet (`--emulate builds` or the sweep; emulation-v4): its sentence leads."""
    from explorer.analysis.emulation.attribution import report_sentence  # the emulation machinery loads when asked

    sentence = report_sentence(report)
    return [] if sentence is None else [f"Builds: {sentence}"]


def summary_lines(report: PacketReport, emulation_table: EmulationTable) -> list[str]:
    """The summary of a packet report, most telling first; `emulation_table` gives that table's header and rows."""
    if (line := _missing_packet(report)) is not None:
        return [line]
    lines = [f"Status: {report['status']}", *_builds_lines(report), *_score_lines(report)]
    if report["refusals"]:
        lines += listed(f"Refusals ({len(report['refusals'])})", [refusal_line(p) for p in report["refusals"]], "  ")
        lines.append("Nothing numeric was computed: the packet cannot be trusted.")
    lines += reasons_lines(report["inconclusiveReasons"])
    if report["status"] != "refused":
        lines += _reference_lines(report) + _emulation_lines(report, emulation_table)
    lines.append(f"Packet: {report['packet']['path']}")
    if report["status"] != "refused":
        lines += _identity_lines(report["identity"]) + _selection_lines(report) + _tensor_lines(report)
    return lines + listed("Limitations", report["limitations"])


def _exact(value: Any) -> str:
    """An element field as JSON would print it: floats in full (repr), None as null, booleans lower-case."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def element_lines(record) -> list[str]:
    """The --element section of the summary: every field of the element record, values exact (repr)."""
    fields = record.fields()
    width = max(len(label) for label, _ in fields)
    return [
        "",
        f"Element {record.head},{record.channel} (flat index {record.flat_index}):",
        *(f"  {label.ljust(width)}  {_exact(value)}" for label, value in fields),
    ]


def element_unavailable_lines(text: str, error: Exception) -> list[str]:
    """The --element section when the element has no record (a refused packet, no reference)."""
    return ["", f"Element {text}: not available: {error}"]
