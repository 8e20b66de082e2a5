"""Reading a replay run directory with the packet rules: its JSON files, arm directories and launches.

Every file is opened below the one open run directory by explorer.packet.files (no link followed out, regular files
only, read once and hashed as read); never computes numerics.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from explorer.foundations.bounded import clip, shown
from explorer.foundations.record import Record, record
from explorer.packet.admission import CPU_MAX_QUERY_HEADS
from explorer.packet.files import JSON_SIZE_LIMIT, PacketRoot, read_json_file
from explorer.packet.jsonparse import ParsedJson, is_integer, parse_json_object, parse_json_value
from explorer.packet.model import Problem
from explorer.replay.checks import ANALYSIS_SCHEMA
from explorer.replay.model import ARMS, TOOL_METRICS

INPUT_JSON = "input.json"
RESULT_JSON = "result.json"
EXECUTION_JSON = "execution.json"
ANALYSIS_JSON = "analysis.json"
# analysis.json blocks read for the cross-check: the tool's key -> the explorer's name.
TOOL_BLOCKS = {"originalQueryReference": "primary", "referenceRoundedToOutputDType": "rounded"}

# The bound on analysis.json: what the tool writes for the largest admissible geometry (docs/replay.md).
# Per query head it writes one metric entry in each of 3 arms x 4 comparisons (FP32 reference, rounded,
# narrowed-Q counterfactual and its difference from the reference), 3 arm-against-arm comparisons and
# one reference-stage entry; an entry pretty-printed (queryHead, kvHead, three floats of at most 24
# characters, an undefinedReason, two nonfinite count objects) stays under 1 KiB. Each arm's result.json
# is echoed as its receipt: admitted at most JSON_SIZE_LIMIT bytes, and nesting it deeper adds at most
# as many bytes of indentation as the shortest line has, so at most twice that. Identity, selection,
# the global blocks and the limitations fit in 64 KiB. At 256 query heads: 4 MiB + 1.5 MiB + 64 KiB.
ANALYSIS_ENTRIES_PER_HEAD = 3 * 4 + 3 + 1
ANALYSIS_ENTRY_BYTES = 1024
ANALYSIS_RECEIPT_BYTES = 2 * JSON_SIZE_LIMIT
ANALYSIS_FIXED_BYTES = 64 * 1024
ANALYSIS_JSON_LIMIT = (
    CPU_MAX_QUERY_HEADS * ANALYSIS_ENTRIES_PER_HEAD * ANALYSIS_ENTRY_BYTES
    + len(ARMS) * ANALYSIS_RECEIPT_BYTES
    + ANALYSIS_FIXED_BYTES
)


@record
class JsonDocument(Record):
    """One JSON file of the run: `value` when read and parsed, else `problem` (its packet code and message)."""

    problem: Problem | None
    value: Any
    sha256: str | None
    identity: tuple[int, int] | None


@record
class Launch(Record):
    """One arm's entry of execution.json."""

    exit_code: int | None
    failure: str | None
    seconds: float | None

    @property
    def failed(self) -> bool:
        return self.exit_code != 0 or self.failure is not None


def read_json(
    root: PacketRoot,
    relative: str,
    parse: Callable[[bytes], ParsedJson] = parse_json_object,
    limit: int = JSON_SIZE_LIMIT,
) -> JsonDocument:
    """`relative` read as packet.json is (json_too_large past `limit`, path_escape, ...) and parsed strictly
    (json_invalid)."""
    file = read_json_file(root, relative, limit)
    if file.problem is not None:
        return JsonDocument(file.problem, None, None, None)
    parsed = parse(file.data)
    if parsed.error is not None:
        problem = Problem("json_invalid", None, f"{relative} is not valid JSON: {clip(parsed.error)}")
        return JsonDocument(problem, None, file.sha256, file.identity)
    return JsonDocument(None, parsed.value, file.sha256, file.identity)


def read_execution(root: PacketRoot) -> JsonDocument:
    """execution.json, whose root is an array."""
    return read_json(root, EXECUTION_JSON, parse_json_value)


def read_analysis(root: PacketRoot) -> JsonDocument:
    """analysis.json, at most ANALYSIS_JSON_LIMIT bytes (its size checked before it is read)."""
    return read_json(root, ANALYSIS_JSON, limit=ANALYSIS_JSON_LIMIT)


def arm_present(root: PacketRoot, arm: str) -> bool:
    """True when anything stands at `ARM` in the run directory (a link is not followed to find out)."""
    try:
        os.stat(arm, dir_fd=root.fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # something is there; reading its result.json says what
    return True


def _number(value: Any) -> tuple[bool, float | None]:
    """(usable, value): a finite number or null."""
    if value is None:
        return True, None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        return False, None
    return True, float(value)


def _unused(name: str, document: JsonDocument) -> tuple[str, ...]:
    """The note on a file that could not be read (none when it is simply absent)."""
    missing = document.problem.code == "path_missing"
    return () if missing else (f"{name} was not used: {document.problem.message}",)


def launches(document: JsonDocument) -> tuple[dict[str, Launch], tuple[str, ...]]:
    """Each arm's launch (the last entry naming it) and notes on what was unusable; ({}, note) without the file."""
    if document.problem is not None:
        return {}, _unused(EXECUTION_JSON, document)
    if not isinstance(document.value, list):
        return {}, (f"{EXECUTION_JSON} was not used: its root is not an array",)
    found: dict[str, Launch] = {}
    notes = []
    for index, entry in enumerate(document.value):
        fields = entry if isinstance(entry, dict) else {}
        arm, exit_code, failure = fields.get("arm"), fields.get("exitCode"), fields.get("failure")
        if (
            arm not in ARMS
            or not (exit_code is None or is_integer(exit_code))
            or not (failure is None or isinstance(failure, str))
        ):
            notes.append(
                f"{EXECUTION_JSON} entry {index} was not used: arm {shown(arm)}, exitCode "
                f"{shown(exit_code)}, failure {shown(failure)}"
            )
            continue
        found[arm] = Launch(exit_code, failure, _number(fields.get("seconds"))[1])
    return found, tuple(notes)


def tool_metrics(
    document: JsonDocument,
) -> tuple[dict[str, dict[str, dict[str, float | None]]] | None, tuple[str, ...]]:
    """Per arm {primary|rounded: {linf, rmse, relativeL2}} from analysis.json, or None with a note when unusable; an
    arm the file does not describe (or describes in another shape) is left out, with a note."""
    if document.problem is not None:
        return None, _unused(ANALYSIS_JSON, document)
    value = document.value
    if value.get("schema") != ANALYSIS_SCHEMA or not isinstance(value.get("arms"), dict):
        return None, (f"{ANALYSIS_JSON} was not used: not of schema {ANALYSIS_SCHEMA} with an arms object",)
    found, notes = {}, []
    for arm in ARMS:
        entry = value["arms"].get(arm)
        blocks = {}
        for key, name in TOOL_BLOCKS.items():
            block = entry.get(key) if isinstance(entry, dict) else None
            metrics = block.get("global") if isinstance(block, dict) else None
            if not isinstance(metrics, dict):
                break
            usable = {metric: _number(metrics.get(metric)) for metric in TOOL_METRICS}
            if not all(held for held, _ in usable.values()):
                break
            blocks[name] = {metric: number for metric, (_, number) in usable.items()}
        if len(blocks) == len(TOOL_BLOCKS):
            found[arm] = blocks
        else:
            notes.append(f"{ANALYSIS_JSON} gives no usable {' and '.join(TOOL_BLOCKS)} global metrics for {arm}")
    return found, tuple(notes)


def arm_file(arm: str, relative: str) -> str:
    """The path inside RUN of a file the arm's result.json names."""
    return f"{arm}/{relative}"


def result_path(arm: str) -> str:
    return arm_file(arm, RESULT_JSON)
