"""The replay's tables as plain HTML strings, read from the Replay or its report; no UI library."""

from __future__ import annotations

from explorer.foundations.formatting import full_number as number
from explorer.foundations.formatting import location, short_number
from explorer.replay.model import CAPTURE, PARTNER, REPLAY_LIMITATIONS, Replay
from explorer.views.shared.html_summary import reasons_table, refusals_table
from explorer.views.shared.markup import Cell, esc, number_cell, status_badge, table, value_row

REPLAY_STATUS_MEANING = {
    "analyzed": "all three arms admitted; every output compared with the capture (and the partner)",
    "inconclusive": "computed where it could be; an arm is absent, failed or refused, or a reason below applies",
    "refused": "the run cannot be read against its packet; nothing was computed",
}
ZERO_COLOUR = "#cfe8f3"  # a count of 0: the two outputs are byte-identical
COUNT_COLOURS = ("#fee8c8", "#fdbb84", "#fc8d59", "#e34a33", "#b30000")  # more differing elements, darker
DARK_TEXT_FROM = 3  # count colours from this index carry white text
ARM_STATE_COLOURS = {"admitted": "#e8f1e4", "absent": "#eeeeee", "failed": "#fde0c5", "refused": "#f8d0d0"}


def status_html(run: Replay) -> str:
    """Status badge and meaning, the run-level refusals or the inconclusive reasons."""
    badge = status_badge(run.status, css_class="replay-status")
    parts = [f"<p>Replay status: {badge} &nbsp; {esc(REPLAY_STATUS_MEANING[run.status])}</p>"]
    if run.refusals:
        parts.append(refusals_table(run.refusals))
    if run.reasons:
        parts.append(reasons_table(run.reasons, "replay-reasons"))
    return "".join(parts)


def run_table(report: dict) -> str:
    """The run, its packet and partner."""
    rows = [
        ("run", f"<code>{esc(report['run']['path'])}</code>"),
        ("input.json SHA-256", f"<code>{esc(number(report['run']['inputSHA256']))}</code>"),
    ]
    for key in ("packet", "partner"):
        packet = report[key]
        shown = "none" if packet is None else f"<code>{esc(packet['path'])}</code> ({status_badge(packet['status'])})"
        rows.append((key, shown))
    return table(("field", "value"), rows, css_class="replay-run")


def reading_html(report: dict) -> str:
    """The matrix in one sentence (computed by the replay layer), leading the view."""
    return f"<b>Matrix:</b> {esc(report['matrix']['sentence'])}"


def _count_colour(count: int, largest: int) -> tuple[str, str]:
    if count == 0:
        return ZERO_COLOUR, "#000"
    index = min(int(len(COUNT_COLOURS) * count / max(largest, 1)), len(COUNT_COLOURS) - 1)
    return COUNT_COLOURS[index], "#fff" if index >= DARK_TEXT_FROM else "#000"


def matrix_html(run: Replay) -> str:
    """Every output against every other: elements that differ, 0 in its own colour, more in darker shades."""
    matrix = run.matrix
    if matrix is None:
        return "<p><i>No matrix: the run was refused.</i></p>"
    largest = max((max(row) for row in matrix.mismatched), default=0)

    def cell(label: str, other: str, count: int) -> Cell:
        background, colour = _count_colour(count, largest)
        return Cell(
            str(count),
            style=f"text-align:right;background:{background};color:{colour}",
            attributes=f'class="matrix-cell" data-row="{esc(label)}" data-column="{esc(other)}" data-count="{count}" '
            f'title="{esc(label)} vs {esc(other)}: {count} of {matrix.compared} elements differ"',
        )

    rows = [
        [Cell(esc(label), header=True), *(cell(label, other, n) for other, n in zip(matrix.labels, row, strict=True))]
        for label, row in zip(matrix.labels, matrix.mismatched, strict=True)
    ]
    return (
        table(("", *(esc(label) for label in matrix.labels)), rows, css_class="replay-matrix")
        + f'<p class="view-note" style="color:#444;margin:0.2em 0">Elements that differ (bit patterns), of '
        f'{matrix.compared} per output. <span style="background:{ZERO_COLOUR};padding:0 0.4em">0</span>: '
        f"byte-identical outputs; darker shades: more differing elements.</p>"
    )


def receipt_text(receipt: dict) -> str:
    """The receipt in one wrapping line: dispatch and kernel output dtype, pages, partition, segments, the launch."""
    seconds = receipt["seconds"]
    if receipt["exitCode"] is None and seconds is None:
        launch = "not in execution.json"
    else:
        after = "" if seconds is None else f" after {short_number(seconds)} s"
        launch = f"exit code {number(receipt['exitCode'])}{after}"
    return (
        f"{number(receipt['dispatch'])}, {number(receipt['kernelOutputDType'])}; {number(receipt['pages'])} pages, "
        f"partition tokens {number(receipt['partitionTokens'])}, {number(receipt['segmentCount'])} segments; "
        f"{launch}"
    )


def arms_table(report: dict) -> str:
    """Each arm's state, codes and receipt."""
    rows = []
    for name, arm in report["arms"].items():
        state = arm["state"] or "not read"
        rows.append(
            (
                f"<b>{esc(name)}</b>",
                "yes" if arm["ownDispatch"] else "no",
                f'<span class="arm-state" data-arm="{esc(name)}" data-state="{esc(state)}" style="padding:0 0.4em;'
                f'background:{ARM_STATE_COLOURS.get(state, "#fff")}">{esc(state)}</span>',
                esc(", ".join(arm["codes"]) or "-"),
                esc(receipt_text(arm["receipt"])),
            )
        )
    return table(
        ("arm", "the capture's dispatch", "state", "codes", "receipt (result.json, execution.json)"),
        rows,
        css_class="replay-arms",
    )


def problems_html(report: dict) -> str:
    """Every problem of every refused or failed arm (code, pointer into result.json, message)."""
    rows = [
        (esc(name), f"<code>{esc(p['code'])}</code>", f"<code>{esc(number(p['pointer']))}</code>", esc(p["message"]))
        for name, arm in report["arms"].items()
        for p in arm["problems"]
    ]
    return table(("arm", "code", "pointer", "message"), rows, css_class="replay-problems") if rows else ""


def _metric(block: dict | None, key: str) -> str:
    return "-" if block is None else number_cell(block["global"][key], bare=True)


def _at(references: dict, key: str) -> str:
    """'at query head H, channel C' of a worst value, small, under it ('' without one)."""
    where = references["worstAt"][key]
    if where is None:
        return ""
    phrase = location(where["queryHead"], where["channel"])
    return f'<br><span class="worst-at" style="font-size:0.85em;color:#555">at {phrase}</span>'


def _ladder_row(name: str, arm: dict) -> tuple[str, ...]:
    references, tool = arm["references"], arm["toolAnalysis"]
    agrees = tool is not None and all(v["agrees"] for block in tool.values() for v in block.values())
    agreement = "-" if tool is None else "agrees" if agrees else "differs"
    shown = f'<span class="tool-agreement" data-arm="{esc(name)}">{agreement}</span>'
    if references is None:
        return esc(name), *["-"] * 8, shown
    metrics = (
        _metric(references[block], key) + (_at(references, block) if key == "linf" else "")
        for block in ("primary", "rounded", "fp64")
        for key in ("linf", "rmse")
    )
    ulp = number_cell(references["ulp"]["max"], bare=True) + _at(references, "ulp")
    return esc(name), *metrics, esc(str(references["equalToRoundedReference"])), ulp, shown


def ladder_table(report: dict) -> str:
    """Each arm's output against the FP32, rounded and FP64 references, and whether the tool's analysis agrees."""
    header = ("arm", "vs FP32 linf", "rmse", "vs rounded linf", "rmse", "vs FP64 linf", "rmse")
    rows = [_ladder_row(name, arm) for name, arm in report["arms"].items()]
    return table((*header, "equal to rounded ref", "ULP max", "analysis.json"), rows, css_class="replay-ladder")


def readback_table(report: dict) -> str:
    """The paged arms' K/V read back from the cache against the packet's, element by element."""
    rows = [
        (
            esc(name),
            esc(tensor),
            "byte-identical"
            if entry["identical"]
            else f"{entry['mismatched']} elements differ, first at [kvHead, token, channel] {entry['firstDifference']}",
        )
        for name, arm in report["arms"].items()
        if arm["readback"] is not None
        for tensor, entry in arm["readback"].items()
    ]
    if not rows:
        return "<p><i>No paged arm was read: there is no readback.</i></p>"
    return table(("arm", "tensor", "readback"), rows, css_class="replay-readback")


def notes_html(report: dict) -> str:
    items = [*report["notes"], *REPLAY_LIMITATIONS]
    return "<ul>" + "".join(f"<li>{esc(item)}</li>" for item in items) + "</ul>"


def element_html(run: Replay, head: int, channel: int) -> str:
    """One output element: the capture's, the partner's and each read arm's value and bit pattern."""
    rows = []
    shape = run.packet.admission.tensors["output"].shape
    for label, analysis in ((CAPTURE, run.packet), (PARTNER, run.partner)):
        tensors = None if analysis is None else analysis.admission.tensors
        if tensors is None or tensors["output"].shape != shape:
            continue
        tensor = tensors["output"]
        rows.append(
            value_row(label, tensor.values[0, head, 0, channel], tensor.dtype, tensor.bits[0, head, 0, channel])
        )
    rows += [
        value_row(name, arm.output_values[head, channel], arm.output_dtype, arm.output_bits[head, channel])
        for name, arm in run.arms.items()
        if arm.readable
    ]
    return f'<p class="element-title"><b>{location(head, channel).capitalize()}</b></p>' + table(
        ("output", "value", "bits", "dtype"), rows, css_class="replay-element"
    )
