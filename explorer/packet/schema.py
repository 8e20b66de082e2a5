"""Field rules of packet.json and the tensor geometry between its descriptors (never does I/O).

See docs/packet-format.md, Refusal codes: a rule row naming its own code gives it for every violation of that
row (missing key and wrong type included); the two relation rows (`byteCount` vs the shape,
`tensorPayloadBytes` vs the sum) refuse a non-integer with `field_invalid`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from explorer.foundations.bounded import clip, quoted, shown, shown_int, shown_list
from explorer.foundations.record import Record, record
from explorer.packet.files import JSON_SIZE_LIMIT, TENSOR_SIZE_LIMIT, relative_path_problem
from explorer.packet.formats import DTYPES, ITEM_SIZE
from explorer.packet.jsonparse import is_integer, json_type
from explorer.packet.model import TENSOR_NAMES, Problem

SCHEMA = "darkbloom.attention-packet.v1"
BACKENDS = ("paged", "contiguous")
EVALUATION_STATUSES = ("completed", "failed", "not_evaluated")
BYTE_ORDER = "little"
MODEL_ID_MAX_CHARS = 512
MAX_RECORD_INDEX = 127
MIN_VISIBLE_END = 1
TENSOR_RANK = 4
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
SHA256_RULE = "64 lowercase hex characters"
MISSING = object()  # a key absent from its object
PAYLOAD_TOTAL = "/capture/tensorPayloadBytes"

KV_TENSORS = ("storedKeys", "storedValues", "incomingKeys", "incomingValues")
SINGLE_TOKEN_TENSORS = ("queries", "output", "incomingKeys", "incomingValues")
STORED_TENSORS = ("storedKeys", "storedValues")
QUERY_HEAD_TENSORS = ("queries", "output")


def describe(value: Any) -> str:
    """A short rendering of a captured value for messages (bounded whatever the value)."""
    if value is MISSING:
        return "nothing (the key is absent)"
    return f"{json_type(value)} {shown(value)}"


def pointer(*parts: str | int) -> str:
    """The JSON pointer of the given path (RFC 6901 escaping)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def integer_in(value: Any, low: int, high: int | None = None) -> bool:
    return is_integer(value) and value >= low and (high is None or value <= high)


def is_sha256(value: Any) -> bool:
    return isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None


def row_major_strides(shape: tuple[int, ...]) -> list[int]:
    return [math.prod(shape[axis + 1 :]) for axis in range(len(shape))]


class Problems:
    """An accumulating list of refusals."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, code: str, field: str | None, message: str) -> None:
        self.items.append(Problem(code, field, message))

    def check(self, holds: bool, code: str, field: str, rule: str, value: Any) -> bool:
        """Record a problem unless `holds`; return `holds`."""
        if not holds:
            self.add(code, field, f"{clip(field)} must be {rule}; got {describe(value)}")
        return holds

    def fields(self, code: str, section: Mapping[str, Any], where: tuple[str, ...], rules: tuple[Field, ...]) -> dict:
        """Check each row of `rules` on `section` (at the pointer `where`, a row's own code before `code`) in order;
        the values that held, by key."""
        held = {}
        for rule in rules:
            value = section.get(rule.key, MISSING)
            if self.check(rule.holds(value), rule.code or code, pointer(*where, rule.key), rule.rule, value):
                held[rule.key] = value
        return held


# ---------------------------------------------------------------- field rules as table rows


@record
class Field(Record):
    """One field rule that is a single predicate: the key, the predicate, the rule's words and its own code (if any)."""

    key: str
    holds: Callable[[Any], bool]
    rule: str
    code: str | None = None


def sha256_field(key: str) -> Field:
    return Field(key, is_sha256, SHA256_RULE)


def integer_field(key: str, low: int | None = None, high: int | None = None) -> Field:
    """An integer, with an optional inclusive range: "an integer", "an integer >= 1", "an integer 0..127"."""
    if low is None:
        return Field(key, is_integer, "an integer")
    bounds = f">= {low}" if high is None else f"{low}..{high}"
    return Field(key, lambda value: integer_in(value, low, high), f"an integer {bounds}")


def string_field(key: str) -> Field:
    return Field(key, lambda value: isinstance(value, str), "a string")


def boolean_field(key: str) -> Field:
    return Field(key, lambda value: isinstance(value, bool), "a boolean")


def one_of_field(key: str, allowed: tuple[str, ...], code: str | None = None) -> Field:
    """A string among `allowed` ("'paged' or 'contiguous'"; one allowed value reads as that value)."""
    return Field(key, lambda value: isinstance(value, str) and value in allowed, " or ".join(map(repr, allowed)), code)


IDENTITY_FIELDS = (
    Field(
        "modelID",
        lambda value: isinstance(value, str) and 1 <= len(value) <= MODEL_ID_MAX_CHARS,
        f"a string of 1..{MODEL_ID_MAX_CHARS} characters",
    ),
    one_of_field("backend", BACKENDS),
    sha256_field("artifactSHA256"),
    sha256_field("inputSHA256"),
)
METADATA_FIELDS = (
    integer_field("byteCount", 1, JSON_SIZE_LIMIT),
    sha256_field("sha256"),
    integer_field("recordIndex", 0, MAX_RECORD_INDEX),
)
GEOMETRY_FIELDS = (
    string_field("attention"),
    boolean_field("isBidirectional"),
    boolean_field("sharesKV"),
    boolean_field("mtpEnabled"),
    integer_field("visibleStart"),
    integer_field("visibleEnd", MIN_VISIBLE_END),
)
CAPTURE_FIELDS = (
    one_of_field("evaluationStatus", EVALUATION_STATUSES),
    integer_field("tensorPayloadBytes", 1, TENSOR_SIZE_LIMIT),
)
# A tensor entry's single-predicate rules, each with its own code (the module docstring's convention).
TENSOR_FORMAT_FIELDS = (
    one_of_field("dtype", DTYPES, "dtype_unsupported"),
    one_of_field("byteOrder", (BYTE_ORDER,), "byte_order_unsupported"),
    Field(
        "shape",
        lambda value: isinstance(value, list) and len(value) == TENSOR_RANK and all(integer_in(e, 1) for e in value),
        f"{TENSOR_RANK} integers >= 1",
        "shape_invalid",
    ),
)


@record
class TensorDescriptor(Record):
    """One tensor entry of packet.json, each part None when it broke its rule; `valid` False with any section 2
    problem (then no section 4 check), `declared_size` product(shape) x item size when both are valid."""

    name: str
    file: str | None
    dtype: str | None
    shape: tuple[int, ...] | None
    byte_count: int | None
    sha256: str | None
    valid: bool
    declared_size: int | None
    byte_count_valid: bool


@record
class Descriptor(Record):
    """packet.json after the section 2 field rules: the values that held their rule (None otherwise)."""

    problems: tuple[Problem, ...]
    identity: dict | None  # the report's identity dict, when all four fields held
    metadata_file: str | None
    metadata_byte_count: int | None
    metadata_sha256: str | None
    record_index: int | None
    geometry_fields: Mapping[str, Any]  # attention, the three flags, visibleStart, visibleEnd (those that held)
    evaluation_status: str | None
    tensor_set_valid: bool
    tensors: Mapping[str, TensorDescriptor]


def _section(problems: Problems, packet: dict, key: str) -> dict | None:
    value = packet.get(key, MISSING)
    if problems.check(isinstance(value, dict), "field_invalid", pointer(key), "an object", value):
        return value
    return None


def _file_path(problems: Problems, base: str, value: Any) -> str | None:
    where = f"{base}/file"
    if not problems.check(isinstance(value, str), "field_invalid", where, "a relative path string", value):
        return None
    if (why := relative_path_problem(value)) is not None:
        problems.add("path_invalid", where, f"{where} {quoted(value)}: {why}")
        return None
    return value


def _section_fields(problems: Problems, packet: dict, key: str, rules: tuple[Field, ...]) -> dict:
    section = _section(problems, packet, key)
    return {} if section is None else problems.fields("field_invalid", section, (key,), rules)


def _identity(problems: Problems, packet: dict) -> dict | None:
    held = _section_fields(problems, packet, "identity", IDENTITY_FIELDS)
    if len(held) < len(IDENTITY_FIELDS):
        return None
    identity = {key: held[key] for key in ("modelID", "artifactSHA256", "inputSHA256", "backend")}
    return {**identity, "authenticated": False}


def _metadata(problems: Problems, packet: dict) -> tuple[str | None, int | None, str | None, int | None]:
    section = _section(problems, packet, "metadata")
    if section is None:
        return None, None, None, None
    file = _file_path(problems, "/metadata", section.get("file", MISSING))
    held = problems.fields("field_invalid", section, ("metadata",), METADATA_FIELDS)
    return file, held.get("byteCount"), held.get("sha256"), held.get("recordIndex")


def tensor_descriptor(problems: Problems, name: str, entry: Any) -> TensorDescriptor:
    """The section 2 rules of one tensor entry (at `/tensors/NAME`); its problems go into `problems`."""
    base = pointer("tensors", name)
    if not problems.check(isinstance(entry, dict), "field_invalid", base, "an object", entry):
        return TensorDescriptor(name, None, None, None, None, None, False, None, False)
    before = len(problems.items)
    file = _file_path(problems, base, entry.get("file", MISSING))
    held = problems.fields("field_invalid", entry, ("tensors", name), TENSOR_FORMAT_FIELDS)
    dtype = held.get("dtype")
    shape = tuple(held["shape"]) if "shape" in held else None
    if shape is not None:
        strides = entry.get("packedStrides", MISSING)
        expected = row_major_strides(shape)
        packed = (
            isinstance(strides, list)
            and len(strides) == TENSOR_RANK
            and all(is_integer(s) and s == e for s, e in zip(strides, expected, strict=True))
        )
        rule = f"the row-major strides {shown_list(expected)} of the shape"
        problems.check(packed, "strides_not_packed", f"{base}/packedStrides", rule, strides)
    declared = math.prod(shape) * ITEM_SIZE[dtype] if shape is not None and dtype is not None else None
    byte_count = entry.get("byteCount", MISSING)
    count_held = problems.check(is_integer(byte_count), "field_invalid", f"{base}/byteCount", "an integer", byte_count)
    if count_held:
        matches = byte_count >= 1 and (declared is None or byte_count == declared)
        rule = "product(shape) x item size" + (f" = {shown_int(declared)}" if declared else " (>= 1)")
        count_held = problems.check(matches, "byte_count_shape_mismatch", f"{base}/byteCount", rule, byte_count)
    sha256 = problems.fields("field_invalid", entry, ("tensors", name), (sha256_field("sha256"),)).get("sha256")
    # path_invalid is a section 5 problem: it does not keep the entry out of the section 4 checks.
    valid = all(problem.code == "path_invalid" for problem in problems.items[before:])
    count = byte_count if is_integer(byte_count) else None
    return TensorDescriptor(name, file, dtype, shape, count, sha256, valid, declared, count_held)


def _tensors(problems: Problems, packet: dict) -> tuple[bool, dict[str, TensorDescriptor]]:
    section = packet.get("tensors", MISSING)
    if not isinstance(section, dict):
        message = f"/tensors must be an object with exactly the six tensors; got {describe(section)}"
        problems.add("tensor_set_invalid", "/tensors", message)
        return False, {}
    missing = [name for name in TENSOR_NAMES if name not in section]
    extra = sorted(name for name in section if name not in TENSOR_NAMES)
    if missing or extra:
        problems.add(
            "tensor_set_invalid",
            "/tensors",
            f"/tensors must hold exactly {', '.join(TENSOR_NAMES)}; missing {missing or 'none'}, "
            f"unexpected {shown_list(extra) if extra else 'none'}",
        )
    return not (missing or extra), {
        name: tensor_descriptor(problems, name, section[name]) for name in TENSOR_NAMES if name in section
    }


def check_descriptor(packet: dict) -> Descriptor:
    """Apply every field rule of section 2 to a parsed packet.json (payload total included)."""
    problems = Problems()
    problems.fields("schema_unsupported", packet, (), (one_of_field("schema", (SCHEMA,)),))
    identity = _identity(problems, packet)
    metadata = _metadata(problems, packet)  # file, byteCount, sha256, recordIndex
    geometry_fields = _section_fields(problems, packet, "geometry", GEOMETRY_FIELDS)
    capture = _section_fields(problems, packet, "capture", CAPTURE_FIELDS)
    evaluation_status, payload_total = capture.get("evaluationStatus"), capture.get("tensorPayloadBytes")
    set_valid, tensors = _tensors(problems, packet)
    if set_valid and payload_total is not None and all(t.byte_count_valid for t in tensors.values()):
        total = sum(t.byte_count for t in tensors.values())
        if total != payload_total:
            sums = f"the six byteCounts sum to {shown_int(total)}"
            problems.add("payload_total_mismatch", PAYLOAD_TOTAL, f"{PAYLOAD_TOTAL} is {payload_total}; {sums}")
    return Descriptor(
        tuple(problems.items), identity, *metadata, geometry_fields, evaluation_status, set_valid, tensors
    )


def payload_limits(tensors: Mapping[str, TensorDescriptor]) -> tuple[tuple[Problem, ...], frozenset[str]]:
    """payload_too_large by declared sizes (one tensor, then the sum), and the tensors not to open."""
    over = {
        name: t.declared_size
        for name, t in tensors.items()
        if t.declared_size is not None and t.declared_size > TENSOR_SIZE_LIMIT
    }
    if over:
        return tuple(
            Problem(
                "payload_too_large",
                pointer("tensors", name, "shape"),
                f"{name} declares {shown_int(size)} bytes, more than {TENSOR_SIZE_LIMIT}",
            )
            for name, size in over.items()
        ), frozenset(over)
    total = sum(t.declared_size for t in tensors.values() if t.declared_size is not None)
    if total > TENSOR_SIZE_LIMIT:
        message = f"the tensors declare {shown_int(total)} bytes together, more than {TENSOR_SIZE_LIMIT}"
        return (Problem("payload_too_large", "/tensors", message),), frozenset(tensors)
    return (), frozenset()


def tensor_geometry(descriptor: Descriptor) -> tuple[tuple[Problem, ...], dict | None]:
    """Section 4 checks between the valid tensor descriptors (none with an invalid tensor set), and the geometry
    dict (docs/report.md) when all six are valid and their shapes agree."""
    if not descriptor.tensor_set_valid:
        return (), None
    shapes = {name: t.shape for name, t in descriptor.tensors.items() if t.valid}
    issues = [f"{name} has batch {shown_int(shape[0])}, not 1" for name, shape in shapes.items() if shape[0] != 1]
    issues += [
        f"{name} has {shown_int(shapes[name][2])} tokens, not 1"
        for name in SINGLE_TOKEN_TENSORS
        if name in shapes and shapes[name][2] != 1
    ]
    groups = {
        "query heads of queries/output": {shapes[n][1] for n in QUERY_HEAD_TENSORS if n in shapes},
        "KV heads of the K/V tensors": {shapes[n][1] for n in KV_TENSORS if n in shapes},
        "head dimensions": {shape[3] for shape in shapes.values()},
        "token counts of storedKeys/storedValues": {shapes[n][2] for n in STORED_TENSORS if n in shapes},
    }
    issues += [
        f"different {label}: {shown_list(sorted(values))}" for label, values in groups.items() if len(values) > 1
    ]
    query_heads, kv_heads = groups["query heads of queries/output"], groups["KV heads of the K/V tensors"]
    if len(query_heads) == 1 and len(kv_heads) == 1 and min(query_heads) % min(kv_heads):
        issues.append(
            f"{shown_int(min(query_heads))} query heads are not a multiple of {shown_int(min(kv_heads))} KV heads"
        )
    problems = [Problem("tensor_geometry_mismatch", "/tensors", "; ".join(issues))] if issues else []
    kv_dtypes = {descriptor.tensors[n].dtype for n in KV_TENSORS if n in shapes}
    if len(kv_dtypes) > 1:
        listing = ", ".join(f"{n} {descriptor.tensors[n].dtype}" for n in KV_TENSORS if n in shapes)
        problems.append(Problem("kv_dtype_mismatch", "/tensors", f"the K/V tensors must share one dtype: {listing}"))
    if issues or len(shapes) != len(TENSOR_NAMES):
        return tuple(problems), None
    qh, kvh = shapes["queries"][1], shapes["storedKeys"][1]
    return tuple(problems), {
        "queryHeads": qh,
        "kvHeads": kvh,
        "groupSize": qh // kvh,
        "headDim": shapes["queries"][3],
        "tokens": shapes["storedKeys"][2],
    }
