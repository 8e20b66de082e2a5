"""Field rules of the metadata snapshot and its cross-checks with packet.json (never does I/O).

See docs/packet-format.md, Refusal codes: structural problems are `snapshot_invalid` unless a more specific
code applies; a record with a structural problem takes no part in the cross-checks.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any

from explorer.foundations.bounded import quoted, shown, shown_int
from explorer.foundations.record import Record, record
from explorer.packet.formats import DTYPES
from explorer.packet.jsonparse import is_integer
from explorer.packet.model import Problem
from explorer.packet.schema import (
    MISSING,
    Descriptor,
    Field,
    Problems,
    boolean_field,
    integer_field,
    integer_in,
    one_of_field,
    pointer,
    string_field,
)

MAX_RECORDS = 128
MAX_REQUEST_ID = 2**64 - 1
MAX_OUTPUT_INDEX = 1_000_000
MAX_SELECTED_FORWARDS = 128
MAX_EXPECTED_OWNERS = 128
MAX_TOKEN_ID = 2**31 - 1
MAX_SCALE_BITS = 2**32 - 1
MAX_STORAGE_ENTRIES = 64
MAX_OBSERVED_RANK = 8
INVALID, OBSERVED_MISMATCH, RANGE_MISMATCH = "snapshot_invalid", "observed_tensor_mismatch", "visible_range_mismatch"
SAMPLE_OUTCOMES = (
    "not_selected",
    "graph_constructed_unconfirmed",
    "forward_failed",
    "confirmed",
    "discarded",
    "retired_unconfirmed",
)
OBSERVED_TENSORS = ("queries", "incomingKeys", "incomingValues", "output")
RECORD_STRINGS = ("phase", "dispatch")
PRESENCE_FLAGS = ("sinksPresent", "softcapPresent", "spansPresent")
# The one list of selection keys: the record fields that say which step and layer a packet captured. The report's
# selection block, the replay input's selection, the pair's shared fields and the findings' lines derive from it.
SELECTION_POSITION = (
    "requestID",
    "outputIndex",
    "phase",
    "storageLayerIndex",
    "modelLayerIndex",
    "offsetBefore",
    "offsetAfter",
)
SELECTION_KEYS = (*SELECTION_POSITION, "scaleBits", "scale", "dispatch", "kernelOutputDType")  # the report's block
# How the findings name the selection keys they show, in the order they show them (the model layer first; scaleBits
# is shown as the scale). Every key is one of SELECTION_KEYS (tests/packet/test_selection_keys.py).
SELECTION_LABEL = {
    "requestID": "request",
    "outputIndex": "output index",
    "phase": "phase",
    "modelLayerIndex": "layer",
    "storageLayerIndex": "storage layer",
    "offsetBefore": "offset before",
    "offsetAfter": "offset after",
    "scale": "scale",
    "dispatch": "dispatch",
    "kernelOutputDType": "kernel output dtype",
}
SELECTION_LABELS = tuple(SELECTION_LABEL.items())
SAMPLE_KEYS = (
    "forwardSucceeded",
    "sampleOutcome",
    "seedToken",
    "targetToken",
    "selectedForwards",
    "expectedOwnerCount",
    "refusals",
)
RECORD = ("records", 0)


def decode_scale(scale_bits: int) -> float:
    """The binary32 value of a 32-bit pattern, as a Python float (exact)."""
    return struct.unpack("<f", struct.pack("<I", scale_bits))[0]


def _is_scale_bits(value: Any) -> bool:
    return integer_in(value, 0, MAX_SCALE_BITS) and math.isfinite(decode_scale(value)) and decode_scale(value) > 0


CONFIGURATION_FIELDS = (
    integer_field("requestID", 1, MAX_REQUEST_ID),
    integer_field("outputIndex", 1, MAX_OUTPUT_INDEX),
    integer_field("maximumRecords", 1, MAX_RECORDS),
)
# records[0]'s structural rules before its observed tensors.
RECORD_FIELDS = (
    integer_field("requestID"),
    integer_field("outputIndex"),
    *(string_field(key) for key in RECORD_STRINGS),
    *(integer_field(key, 0) for key in ("batchIndex", "storageLayerIndex", "modelLayerIndex", "offsetBefore")),
    integer_field("offsetAfter", 0),
    *(integer_field(key, 1) for key in ("batchSize", "inputWidth")),
    one_of_field("kernelOutputDType", DTYPES),
)
PRESENCE_FIELDS = tuple(boolean_field(flag) for flag in PRESENCE_FLAGS)
SCALE_FIELD = Field(
    "scaleBits",
    _is_scale_bits,
    f"an integer 0..{MAX_SCALE_BITS} whose binary32 value is finite and > 0",
    "scale_invalid",
)
OBSERVED_FIELDS = (
    one_of_field("dtype", DTYPES),
    Field(
        "shape",
        lambda value: (
            isinstance(value, list) and 1 <= len(value) <= MAX_OBSERVED_RANK and all(integer_in(e, 1) for e in value)
        ),
        f"1..{MAX_OBSERVED_RANK} integers >= 1",
    ),
)
SAMPLE_FIELDS = (
    integer_field("selectedForwards", 0, MAX_SELECTED_FORWARDS),
    integer_field("expectedOwnerCount", 1, MAX_EXPECTED_OWNERS),
    boolean_field("forwardSucceeded"),
    Field(
        "sampleOutcome",
        lambda value: isinstance(value, str) and value in SAMPLE_OUTCOMES,
        "one of " + ", ".join(SAMPLE_OUTCOMES),
    ),
    *(
        Field(
            key,
            lambda value: value is MISSING or value is None or integer_in(value, 0, MAX_TOKEN_ID),
            f"absent, null or an integer 0..{MAX_TOKEN_ID}",
        )
        for key in ("seedToken", "targetToken")
    ),
)


@record
class Snapshot(Record):
    """The interpreted snapshot: `record` is records[0] when structurally sound, `selection` and `sample` the
    report's dicts when their fields held their rules (else None)."""

    problems: tuple[Problem, ...]
    record: Mapping[str, Any] | None
    record_count: int | None
    expected_owner_count: int | None
    selection: dict | None
    sample: dict | None
    scale: float | None


def _observed(problems: Problems, where: tuple[str | int, ...], value: Any) -> None:
    if problems.check(isinstance(value, dict), INVALID, pointer(*where), "observed tensor metadata (an object)", value):
        held = problems.fields(INVALID, value, where, OBSERVED_FIELDS)
        strides = value.get("graphConstructionStrides", MISSING)
        valid = isinstance(strides, list) and all(is_integer(s) for s in strides)
        valid = valid and ("shape" not in held or len(strides) == len(held["shape"]))
        rule = "an integer array as long as the shape"
        problems.check(valid, INVALID, pointer(*where, "graphConstructionStrides"), rule, strides)


def _record(problems: Problems, record: dict) -> bool:
    """Structural rules of records[0]; True when none broke (scale_invalid is not structural)."""
    before = len(problems.items)
    problems.fields(INVALID, record, RECORD, RECORD_FIELDS)
    for name in OBSERVED_TENSORS:
        _observed(problems, (*RECORD, name), record.get(name, MISSING))
    storage = record.get("storage", MISSING)
    valid = isinstance(storage, dict) and 1 <= len(storage) <= MAX_STORAGE_ENTRIES
    rule = f"an object of 1..{MAX_STORAGE_ENTRIES} entries"
    if problems.check(valid, INVALID, pointer(*RECORD, "storage"), rule, storage):
        for name, entry in storage.items():
            _observed(problems, (*RECORD, "storage", name), entry)
    problems.fields(INVALID, record, RECORD, PRESENCE_FIELDS)
    structural = len(problems.items) == before
    problems.fields("scale_invalid", record, RECORD, (SCALE_FIELD,))
    return structural


def _cross_checks(problems: Problems, record: dict, configuration: dict, descriptor: Descriptor) -> None:
    for key, high in (("requestID", MAX_REQUEST_ID), ("outputIndex", MAX_OUTPUT_INDEX)):
        configured = configuration.get(key)
        if integer_in(configured, 1, high) and record[key] != configured:
            differs = f"record {key} {shown_int(record[key])} differs from configuration {key} {configured}"
            problems.add("selection_identity_mismatch", pointer(*RECORD, key), differs)
    for name in OBSERVED_TENSORS:
        tensor = descriptor.tensors.get(name)
        if tensor is None or not tensor.valid:
            continue
        observed = record[name]
        if observed["dtype"] != tensor.dtype:
            held_as = f"the record observed {name} as {observed['dtype']}, the packet holds {tensor.dtype}"
            problems.add(OBSERVED_MISMATCH, pointer(*RECORD, name, "dtype"), held_as)
        if observed["shape"] != list(tensor.shape):
            held_as = f"the record observed {name} with shape {shown(observed['shape'])}, the packet holds "
            problems.add(OBSERVED_MISMATCH, pointer(*RECORD, name, "shape"), held_as + shown(list(tensor.shape)))
    stored_keys = descriptor.tensors.get("storedKeys")
    if stored_keys is not None and stored_keys.valid:
        for entry_name, entry in record["storage"].items():
            if entry["dtype"] != stored_keys.dtype:
                held_as = f"storage {quoted(entry_name)} is {entry['dtype']}, storedKeys is {stored_keys.dtype}"
                problems.add(OBSERVED_MISMATCH, pointer(*RECORD, "storage", entry_name, "dtype"), held_as)


def _sample(problems: Problems, snapshot: dict) -> dict | None:
    held = len(problems.fields(INVALID, snapshot, (), SAMPLE_FIELDS)) == len(SAMPLE_FIELDS)
    refusals = snapshot.get("refusals", MISSING)
    if problems.check(isinstance(refusals, dict), INVALID, "/refusals", "an object of refusal name -> count", refusals):
        counts = [
            problems.check(integer_in(count, 1), INVALID, pointer("refusals", name), "an integer count >= 1", count)
            for name, count in refusals.items()
        ]
        held = held and all(counts)
    else:
        held = False
    return {key: snapshot.get(key) for key in SAMPLE_KEYS} if held else None


def check_snapshot(snapshot: dict, descriptor: Descriptor) -> Snapshot:
    """Apply every rule of section 3 to a parsed snapshot, with its cross-checks against packet.json."""
    problems = Problems()
    configuration = snapshot.get("configuration", MISSING)
    held = {}
    if problems.check(isinstance(configuration, dict), INVALID, "/configuration", "an object", configuration):
        held = problems.fields(INVALID, configuration, ("configuration",), CONFIGURATION_FIELDS)
    else:
        configuration = {}
    maximum = held.get("maximumRecords")
    identity_held = "requestID" in held and "outputIndex" in held
    records = snapshot.get("records", MISSING)
    record_count = len(records) if isinstance(records, list) else None
    valid = isinstance(records, list) and 1 <= len(records) <= MAX_RECORDS
    rule = f"an array of 1..{MAX_RECORDS} objects"
    records_held = problems.check(valid, INVALID, "/records", rule, records)
    if records_held and maximum is not None and len(records) > maximum:
        over = f"{len(records)} records, more than maximumRecords {maximum}"
        problems.add("record_budget_exceeded", "/records", over)
    if records_held:
        for index, entry in enumerate(records[1:], start=1):
            problems.check(isinstance(entry, dict), INVALID, pointer("records", index), "an object", entry)
    first = records[0] if record_count else MISSING
    record = None
    if (
        first is not MISSING
        and problems.check(isinstance(first, dict), INVALID, "/records/0", "an object", first)
        and _record(problems, first)
    ):
        record = first
        _cross_checks(problems, record, configuration, descriptor)
    sample = _sample(problems, snapshot)
    scale = None
    selection = None
    if record is not None and identity_held and not any(p.code == "scale_invalid" for p in problems.items):
        scale = decode_scale(record["scaleBits"])
        selection = {key: record.get(key) for key in SELECTION_KEYS}
        selection.update(requestID=configuration["requestID"], outputIndex=configuration["outputIndex"], scale=scale)
    owners = snapshot.get("expectedOwnerCount")
    owners = owners if integer_in(owners, 1, MAX_EXPECTED_OWNERS) else None
    return Snapshot(tuple(problems.items), record, record_count, owners, selection, sample, scale)


def visible_range_problems(descriptor: Descriptor, record: Mapping[str, Any] | None) -> tuple[Problem, ...]:
    """visible_range_mismatch: visibleStart == 0, visibleEnd == offsetAfter == T, offsetAfter == offsetBefore + 1
    (each part only when its inputs held their rules); pointers into packet.json but for offsetAfter's own."""
    problems = Problems()
    start = descriptor.geometry_fields.get("visibleStart")
    if start is not None and start != 0:
        problems.add(RANGE_MISMATCH, "/geometry/visibleStart", f"visibleStart is {shown_int(start)}, not 0")
    end = descriptor.geometry_fields.get("visibleEnd")
    stored_keys = descriptor.tensors.get("storedKeys")
    tokens = stored_keys.shape[2] if descriptor.tensor_set_valid and stored_keys and stored_keys.valid else None
    offset_after = record["offsetAfter"] if record is not None else None
    if end is not None:
        disagreements = [
            f"{label} is {shown_int(value)}"
            for label, value in (("T (storedKeys tokens)", tokens), ("offsetAfter", offset_after))
            if value is not None and value != end
        ]
        if disagreements:
            but = " and ".join(disagreements)
            problems.add(RANGE_MISMATCH, "/geometry/visibleEnd", f"visibleEnd is {shown_int(end)} but {but}")
    if record is not None and record["offsetAfter"] != record["offsetBefore"] + 1:
        after = f"offsetAfter {shown_int(record['offsetAfter'])}"
        not_next = f"{after} is not offsetBefore {shown_int(record['offsetBefore'])} + 1"
        problems.add(RANGE_MISMATCH, pointer(*RECORD, "offsetAfter"), not_next)
    return tuple(problems.items)
