"""Field rules of a replay run's JSON files and their cross-checks with the source packet; pure.

See docs/replay.md, Admission of the run. Every rule returns Problems (code, JSON pointer, bounded message).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from explorer.foundations.bounded import shown
from explorer.foundations.record import Record, record
from explorer.packet.jsonparse import is_integer
from explorer.packet.model import TENSOR_NAMES, Admission, Problem
from explorer.packet.schema import (
    MISSING,
    Field,
    Problems,
    TensorDescriptor,
    integer_field,
    one_of_field,
    pointer,
    sha256_field,
    string_field,
    tensor_descriptor,
)
from explorer.packet.snapshot import RECORD_STRINGS, SELECTION_POSITION
from explorer.replay.model import (
    ARM_TENSORS,
    DISPATCH_MISMATCH,
    DTYPE_MISMATCH,
    EXPECTED_DISPATCH,
    GEOMETRY_MISMATCH,
    INPUT_INVALID,
    MAX_PAGE_ID,
    MAX_SEGMENTS,
    NATIVE,
    OFFSET_MISMATCH,
    PACKET_MISMATCH,
    PAGE_SIZE,
    PAGE_TABLE_INVALID,
    PARTITION_INVALID,
    PARTITION_TOKENS,
    RESULT_INVALID,
    SEGMENTED,
    SEGMENTED_TWO_FROM_TOKENS,
    SEGMENTS_INVALID,
    TENSOR_SET_INVALID,
)

INPUT_SCHEMA = "darkbloom.attention-replay-input.v1"
RESULT_SCHEMA = "darkbloom.attention-replay-result.v1"
ANALYSIS_SCHEMA = "darkbloom.attention-replay-analysis.v1"
CONFIRMED = "confirmed"
IDENTITY_STRINGS = ("modelID", "backend")
IDENTITY_HASHES = ("artifactSHA256", "inputSHA256")
REPLAY_SELECTION = (*SELECTION_POSITION, "dispatch")  # input.json's selection (docs/replay.md)
SELECTION_STRINGS = tuple(key for key in REPLAY_SELECTION if key in RECORD_STRINGS)
SELECTION_INTEGERS = tuple(key for key in REPLAY_SELECTION if key not in SELECTION_STRINGS)
GEOMETRY_KEYS = (
    "queryHeads",
    "kvHeads",
    "length",
    "headDim",
    "inputBytes",
    "pageSize",
    "poolBudgetBytes",
    "segmentTargetBytes",
    "allocationBoundBytes",
)
# input.json's single-predicate field rules: the top level, then each section (its tensors are the packet's rules).
INPUT_FIELDS = (
    one_of_field("schema", (INPUT_SCHEMA,)),
    sha256_field("packetSHA256"),
    sha256_field("metadataSHA256"),
    one_of_field("sampleOutcome", (CONFIRMED,)),
    integer_field("scaleBits"),
)
INPUT_SECTIONS = {
    "identity": (*map(string_field, IDENTITY_STRINGS), *map(sha256_field, IDENTITY_HASHES)),
    "selection": (*map(integer_field, SELECTION_INTEGERS), *map(string_field, SELECTION_STRINGS)),
    "geometry": tuple(map(integer_field, GEOMETRY_KEYS)),
}
INPUT_TENSORS = TENSOR_NAMES[:-1]  # the five inputs: inputBytes sums their bytes
STAGED_SUFFIX = ".bin"
RESULT_SCHEMA_FIELD = one_of_field("schema", (RESULT_SCHEMA,))
GEOMETRY_FIELD = Field("geometry", lambda value: isinstance(value, dict), "an object")
SOURCE_FIELD = Field(  # result.json's partitionGeometrySource: absent, null or a text
    "partitionGeometrySource",
    lambda value: value is MISSING or value is None or isinstance(value, str),
    "a text (or null)",
)


@record
class InputFile(Record):
    """input.json after its field rules: the parsed value (None when a rule broke) and the tensor descriptors."""

    problems: tuple[Problem, ...]
    value: Mapping[str, Any] | None
    tensors: Mapping[str, TensorDescriptor]


def _descriptor_problems(problems: Problems, scratch: Problems, code: str) -> None:
    """Move the descriptor rule problems of `scratch` into `problems` under `code` (path_invalid kept)."""
    for problem in scratch.items:
        problems.add(problem.code if problem.code == "path_invalid" else code, problem.field, problem.message)


def _object(problems: Problems, code: str, parent: Mapping[str, Any], key: str) -> dict | None:
    value = parent.get(key, MISSING)
    return value if problems.check(isinstance(value, dict), code, pointer(key), "an object", value) else None


def check_input(value: dict) -> InputFile:
    """The field rules of input.json (all replay_input_invalid)."""
    problems = Problems()
    problems.fields(INPUT_INVALID, value, (), INPUT_FIELDS)
    for key, rules in INPUT_SECTIONS.items():
        if (section := _object(problems, INPUT_INVALID, value, key)) is not None:
            problems.fields(INPUT_INVALID, section, (key,), rules)
    tensors: dict[str, TensorDescriptor] = {}
    if (section := _object(problems, INPUT_INVALID, value, "tensors")) is not None:
        names, exactly = sorted(section), f"an object of exactly {', '.join(TENSOR_NAMES)}"
        problems.check(names == sorted(TENSOR_NAMES), INPUT_INVALID, "/tensors", exactly, names)
        scratch = Problems()
        for name in TENSOR_NAMES:
            if name in section:
                tensors[name] = tensor_descriptor(scratch, name, section[name])
                file, staged = tensors[name].file, name + STAGED_SUFFIX
                problems.check(file == staged, INPUT_INVALID, pointer("tensors", name, "file"), repr(staged), file)
        _descriptor_problems(problems, scratch, INPUT_INVALID)
    held = not problems.items
    return InputFile(tuple(problems.items), value if held else None, tensors if held else {})


def packet_mismatches(
    value: Mapping[str, Any], tensors: Mapping[str, TensorDescriptor], admission: Admission
) -> tuple[Problem, ...]:
    """replay_packet_mismatch: input.json's hashes, identity, selection, scaleBits and descriptors against the
    packet."""
    problems = Problems()

    def differs(field: str, declared: Any, packet: Any) -> None:
        if declared != packet:
            problems.add(
                PACKET_MISMATCH, field, f"input.json {field} is {shown(declared)}, the packet's is {shown(packet)}"
            )

    differs("/packetSHA256", value["packetSHA256"], admission.packet_sha256)
    differs("/metadataSHA256", value["metadataSHA256"], admission.metadata_sha256)
    for key in (*IDENTITY_STRINGS, *IDENTITY_HASHES):
        differs(pointer("identity", key), value["identity"][key], admission.identity[key])
    for key in (*SELECTION_INTEGERS, *SELECTION_STRINGS):
        differs(pointer("selection", key), value["selection"][key], admission.selection[key])
    differs("/scaleBits", value["scaleBits"], admission.selection["scaleBits"])
    for name, declared in tensors.items():
        packet = admission.tensors[name]
        for part, mine, theirs in (
            ("dtype", declared.dtype, packet.dtype),
            ("shape", list(declared.shape), list(packet.shape)),
            ("byteCount", declared.byte_count, packet.byte_count),
            ("sha256", declared.sha256, packet.sha256),
        ):
            differs(pointer("tensors", name, part), mine, theirs)
    return tuple(problems.items)


def expected_geometry(admission: Admission) -> dict[str, int]:
    """The geometry values section 3 recomputes from the packet."""
    geometry = admission.geometry
    return {
        "queryHeads": geometry["queryHeads"],
        "kvHeads": geometry["kvHeads"],
        "length": geometry["tokens"],
        "headDim": geometry["headDim"],
        "inputBytes": sum(admission.tensors[name].byte_count for name in INPUT_TENSORS),
        "pageSize": PAGE_SIZE,
    }


def geometry_mismatches(geometry: Mapping[str, Any], admission: Admission) -> tuple[Problem, ...]:
    """replay_geometry_mismatch: each recomputed value input.json's geometry does not hold."""
    return tuple(
        Problem(
            GEOMETRY_MISMATCH,
            pointer("geometry", key),
            f"geometry {key} is {shown(geometry[key])}, the packet gives {value}",
        )
        for key, value in expected_geometry(admission).items()
        if geometry[key] != value
    )


# ---------------------------------------------------------------- result.json


@record
class ResultFile(Record):
    """An arm's result.json after its rules: the tensor descriptors that may be read (file, byteCount, sha256 valid)."""

    problems: tuple[Problem, ...]
    value: Mapping[str, Any]
    tensors: Mapping[str, TensorDescriptor]


def _page_table(problems: Problems, arm: str, table: list, tokens: int) -> None:
    if arm == NATIVE:
        problems.check(table == [], PAGE_TABLE_INVALID, "/pageTable", "empty for the native arm", table)
        return
    pages = math.ceil(tokens / PAGE_SIZE)
    problems.check(
        len(table) == pages, PAGE_TABLE_INVALID, "/pageTable", f"{pages} page ids (ceil(T / {PAGE_SIZE}))", table
    )
    outside = [page for page in table if not (is_integer(page) and 1 <= page <= MAX_PAGE_ID)]
    problems.check(not outside, PAGE_TABLE_INVALID, "/pageTable", f"ids in 1..{MAX_PAGE_ID}", outside)
    counts = Counter(page for page in table if is_integer(page))
    twice = sorted(page for page, count in counts.items() if count > 1)
    problems.check(not twice, PAGE_TABLE_INVALID, "/pageTable", "ids that appear once each (no alias)", twice)


def _partition_and_segments(problems: Problems, arm: str, value: Mapping[str, Any], tokens: int) -> None:
    partition = value.get("partitionTokens")
    if arm == NATIVE:
        problems.check(
            partition is None, PARTITION_INVALID, "/partitionTokens", "absent or null for the native arm", partition
        )
    else:
        allowed = " or ".join(map(str, PARTITION_TOKENS))
        valid = is_integer(partition) and partition in PARTITION_TOKENS
        problems.check(valid, PARTITION_INVALID, "/partitionTokens", allowed, partition)
    segments = value.get("segmentCount", MISSING)
    if not problems.check(is_integer(segments), RESULT_INVALID, "/segmentCount", "an integer", segments):
        return
    low = (2 if tokens > SEGMENTED_TWO_FROM_TOKENS else 1) if arm == SEGMENTED else 0
    high = MAX_SEGMENTS if arm == SEGMENTED else 0
    problems.check(
        low <= segments <= high, SEGMENTS_INVALID, "/segmentCount", f"{low}..{high} for {arm} at T {tokens}", segments
    )


def _expected_tensors(arm: str, admission: Admission) -> dict[str, tuple[str, tuple[int, ...]]]:
    """(dtype, shape) of each tensor the arm must write: its output as the queries, the readback as the packet's."""
    sources = {name: admission.tensors["queries" if name == "output" else name] for name in ARM_TENSORS[arm]}
    return {name: (source.dtype, source.shape) for name, source in sources.items()}


def _tensors(
    problems: Problems, arm: str, value: Mapping[str, Any], admission: Admission
) -> dict[str, TensorDescriptor]:
    section = value.get("tensors", MISSING)
    if not problems.check(isinstance(section, dict), RESULT_INVALID, "/tensors", "an object", section):
        return {}
    names, exactly = sorted(section), f"exactly {', '.join(ARM_TENSORS[arm])}"
    if not problems.check(names == sorted(ARM_TENSORS[arm]), TENSOR_SET_INVALID, "/tensors", exactly, names):
        return {}
    readable = {}
    for name, (dtype, shape) in _expected_tensors(arm, admission).items():
        scratch = Problems()
        descriptor = tensor_descriptor(scratch, name, section[name])
        _descriptor_problems(problems, scratch, RESULT_INVALID)
        if not descriptor.valid:
            continue
        got, wanted = [descriptor.dtype, list(descriptor.shape)], f"{dtype} of shape {list(shape)}"
        matches = problems.check(got == [dtype, list(shape)], DTYPE_MISMATCH, pointer("tensors", name), wanted, got)
        if matches and descriptor.file is not None:
            readable[name] = descriptor
    return readable


def check_result(
    arm: str, value: dict, input_sha256: str, input_geometry: Mapping[str, Any], admission: Admission
) -> ResultFile:
    """Every arm rule of section 3 for one result.json; `tensors` are those whose files may be read."""
    problems = Problems()
    tokens = admission.geometry["tokens"]
    digest = Field("inputSHA256", lambda held: held == input_sha256, f"the SHA-256 of input.json, {input_sha256}")
    problems.fields(RESULT_INVALID, value, (), (RESULT_SCHEMA_FIELD, digest, one_of_field("arm", (arm,))))
    kernel = admission.tensors["queries" if arm == NATIVE else "storedKeys"].dtype
    for rule, expected, code, words in (  # a type (replay_result_invalid), then the value the packet gives
        (string_field("dispatch"), EXPECTED_DISPATCH[arm], DISPATCH_MISMATCH, repr(EXPECTED_DISPATCH[arm])),
        (string_field("kernelOutputDType"), kernel, DTYPE_MISMATCH, repr(kernel)),
        (integer_field("offset"), tokens, OFFSET_MISMATCH, f"T = {tokens}"),
        (GEOMETRY_FIELD, dict(input_geometry), OFFSET_MISMATCH, "input.json's geometry"),
    ):
        held = problems.fields(RESULT_INVALID, value, (), (rule,))
        if rule.key in held:
            problems.check(held[rule.key] == expected, code, pointer(rule.key), words, held[rule.key])
    problems.fields(RESULT_INVALID, value, (), (SOURCE_FIELD,))
    table = value.get("pageTable", MISSING)
    if problems.check(isinstance(table, list), RESULT_INVALID, "/pageTable", "an array of page ids", table):
        _page_table(problems, arm, table, tokens)
    _partition_and_segments(problems, arm, value, tokens)
    tensors = _tensors(problems, arm, value, admission)
    return ResultFile(tuple(problems.items), value, tensors)
