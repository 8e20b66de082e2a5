"""A replay run's findings: the matrix's sentence, then one sentence per arm with its numbers.

Read from the replay report, so every number is the JSON's; no I/O, no UI. States and counts, never a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from explorer.analysis.findings import Finding, finding
from explorer.foundations.formatting import at_text, short_number
from explorer.replay.text import readback_parts


def _codes(entries: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(dict.fromkeys(entry["code"] for entry in entries))


def _differs(what: str, difference: Mapping[str, Any] | None) -> str | None:
    if difference is None:
        return None
    return f"{difference['mismatched']} of {difference['compared']} elements differ from {what}"


def _references(references: Mapping[str, Any] | None) -> list[str]:
    if references is None:
        return ["no reference (the arm's output was not read, or the packet has no reference)"]
    worst, ulp = references["worstAt"], references["ulp"]
    return [
        f"largest |output - primary reference| {short_number(references['primary']['global']['linf'])}"
        f"{at_text(worst['primary'])}",
        f"ULP max {short_number(ulp['max'])}{at_text(worst['ulp'])} (p99 {short_number(ulp['p99'])}) against the "
        f"rounded reference, {short_number(references['equalToRoundedReference'])} elements equal to it",
    ]


def _emulations(emulations: Sequence[Mapping[str, Any]] | None) -> str | None:
    if emulations is None:
        return None
    return "emulations bit-equal: " + ", ".join(
        f"{e['id']} {short_number(e['bitEqual']['global'])} of {short_number(e['compared'])}" for e in emulations
    )


def arm_finding(name: str, arm: Mapping[str, Any]) -> Finding:
    """One arm's sentence: state (and codes), differences to the capture and the partner, readback, ladder."""
    codes = f" ({_codes(arm['problems'])})" if arm["problems"] else ""
    own = ", the capture's own dispatch" if arm["ownDispatch"] else ""
    parts = [_differs("the capture", arm["capture"]), _differs("the partner", arm["partner"])]
    if arm["readback"] is not None:
        parts.append("readback: " + ", ".join(readback_parts(arm["readback"])))
    if arm["capture"] is not None:
        parts += _references(arm["references"])
    parts.append(_emulations(arm["emulations"]))
    said = "; ".join(part for part in parts if part)
    return finding(
        "arm",
        f"Arm {name}: {arm['state']}{codes}{own}" + (f": {said}." if said else "."),
        arm=name,
        state=arm["state"],
        capture=None if arm["capture"] is None else arm["capture"]["mismatched"],
        partner=None if arm["partner"] is None else arm["partner"]["mismatched"],
    )


def replay_findings(report: Mapping[str, Any]) -> tuple[Finding, ...]:
    """The run's findings in reading order: refusals (then nothing else), the matrix's sentence, the inconclusive
    reasons, one sentence per arm."""
    if report["refusals"]:
        said = "nothing was computed, the run cannot be read against its packet"
        return (_status_finding(report, "Refused", report["refusals"], said),)
    matrix = report["matrix"]
    found = [
        finding("matrix", "Matrix: not computed.")
        if matrix is None
        else finding("matrix", matrix["sentence"], compared=matrix["compared"])
    ]
    if report["reasons"]:
        said = "; ".join(reason["message"] for reason in report["reasons"])
        found.append(_status_finding(report, "Inconclusive", report["reasons"], said))
    return (*found, *(arm_finding(name, arm) for name, arm in report["arms"].items()))


def _status_finding(report: Mapping[str, Any], status: str, entries: Sequence[Mapping[str, Any]], said: str) -> Finding:
    """The run's status sentence: refused or inconclusive, its codes and what they say."""
    codes = [entry["code"] for entry in entries]
    return finding("status", f"{status} ({_codes(entries)}): {said}.", status=report["status"], codes=codes)


def matrix_rows(matrix: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """The matrix as rows of text: the output's label, then its count against every output."""
    return tuple(
        (label, *map(short_number, row)) for label, row in zip(matrix["outputs"], matrix["mismatched"], strict=True)
    )
