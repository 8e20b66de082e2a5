"""build_replay_report: a Replay as the JSON-ready replay report (docs/replay.md); no I/O, no UI.

Every float is finite or None (json.dumps(allow_nan=False) holds). Keys beyond the contract's list: `reasons`, per arm
`problems`, `matrix.compared`, `emulationsRequested`, `runtime` and `limitations`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from explorer.analysis.blocks import (
    LIMITATIONS,
    comparison_block,
    emulation_block,
    finite,
    location_block,
    plain,
    runtime,
    ulp_block,
)
from explorer.analysis.result import Analysis
from explorer.packet.model import Problem
from explorer.replay.model import REPLAY_LIMITATIONS, ArmResult, Matrix, OutputDifference, Readback, Replay
from explorer.replay.reading import matrix_sentence

REPLAY_SCHEMA = "explorer.replay-report.v1"


def _problem(problem: Problem) -> dict[str, Any]:
    return {"code": problem.code, "message": problem.message, "pointer": problem.field}


def _packet(analysis: Analysis | None) -> dict[str, Any] | None:
    if analysis is None:
        return None
    path = analysis.admission.path
    return {"name": os.path.basename(os.path.normpath(path)), "path": path, "status": analysis.status}


def _difference(difference: OutputDifference | None) -> dict[str, Any] | None:
    if difference is None:
        return None
    return {
        "identical": difference.identical,
        "compared": difference.compared,
        "mismatched": difference.mismatched,
        "perHead": list(difference.per_head),
        "firstPositions": [list(p) for p in difference.first_positions],
    }


def _receipt(arm: ArmResult) -> dict[str, Any]:
    receipt = arm.receipt
    return {
        "dispatch": plain(receipt.dispatch),
        "kernelOutputDType": plain(receipt.kernel_output_dtype),
        "partitionTokens": plain(receipt.partition_tokens),
        "segmentCount": plain(receipt.segment_count),
        "pages": receipt.pages,
        "exitCode": receipt.exit_code,
        "seconds": finite(receipt.seconds),
    }


def _references(arm: ArmResult, group: int) -> dict[str, Any] | None:
    references = arm.references
    if references is None:
        return None
    return {
        "primary": comparison_block(references.primary, group),
        "rounded": comparison_block(references.rounded, group),
        "fp64": comparison_block(references.fp64, group),
        "ulp": ulp_block(references.ulp),
        "equalToRoundedReference": references.equal_to_rounded_reference,
        "worstAt": {key: location_block(where) for key, where in references.worst.items()},
    }


def _tool(arm: ArmResult) -> dict[str, Any] | None:
    if arm.tool_analysis is None:
        return None
    return {
        block: {
            metric: {
                "tool": value.tool,
                "explorer": value.explorer,
                "agrees": value.agrees,
                "range": None if value.low is None else [value.low, value.high],
            }
            for metric, value in values.items()
        }
        for block, values in arm.tool_analysis.items()
    }


def _readback(back: Readback) -> dict[str, Any]:
    return {"identical": back.identical, "mismatched": back.mismatched, "firstDifference": plain(back.first)}


def _arm(arm: ArmResult, group: int) -> dict[str, Any]:
    return {
        "state": arm.state,
        "codes": list(arm.codes),
        "problems": [_problem(p) for p in arm.problems],
        "ownDispatch": arm.own_dispatch,
        "receipt": _receipt(arm),
        "capture": _difference(arm.capture),
        "partner": _difference(arm.partner),
        "readback": None if arm.readback is None else {name: _readback(b) for name, b in arm.readback.items()},
        "references": _references(arm, group),
        "emulations": None if arm.emulations is None else [emulation_block(e, group) for e in arm.emulations],
        "toolAnalysis": _tool(arm),
    }


def _matrix(matrix: Matrix, arms: Mapping[str, ArmResult]) -> dict[str, Any]:
    mismatched = [list(row) for row in matrix.mismatched]
    sentence = matrix_sentence(matrix, arms)
    return {"outputs": list(matrix.labels), "mismatched": mismatched, "compared": matrix.compared, "sentence": sentence}


def build_replay_report(run: Replay) -> dict[str, Any]:
    """The report of docs/replay.md, The report for `run` (complete for every status)."""
    geometry = None if run.packet is None else run.packet.admission.geometry
    group = geometry["groupSize"] if geometry else 1
    matrix = run.matrix
    return {
        "schema": REPLAY_SCHEMA,
        "status": run.status,
        "codes": list(run.codes),
        "refusals": [_problem(p) for p in run.refusals],
        "reasons": [{"code": r.code, "message": r.message} for r in run.reasons],
        "run": {
            "path": run.path,
            "inputSHA256": run.input_sha256,
            "packetSHA256": run.packet_sha256,
            "geometry": plain(run.geometry),
        },
        "packet": _packet(run.packet),
        "partner": _packet(run.partner),
        "arms": {name: _arm(arm, group) for name, arm in run.arms.items()},
        "matrix": None if matrix is None else _matrix(matrix, run.arms),
        "emulationsRequested": None if run.emulations_requested is None else list(run.emulations_requested),
        "notes": list(run.notes),
        "runtime": runtime(),
        "limitations": [*LIMITATIONS, *REPLAY_LIMITATIONS],
    }
