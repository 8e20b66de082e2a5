"""Strict JSON rules for the parser itself and for packet.json and the metadata file on disk.

Strict JSON rules (docs/packet-format.md, How files are read) for the parser itself and for packet.json and
the metadata file on disk.
"""

from __future__ import annotations

import json

import pytest

from explorer.packet.admission import admit
from explorer.packet.jsonparse import MAX_DEPTH, MAX_INT_DIGITS, OversizedInteger, is_integer, parse_json_object
from explorer.samples.packets import packet_descriptor, synthetic_spec
from explorer.samples.writer import metadata_bytes

from packet_support import build, problems, reason_codes

DEEP = 100_000  # arrays: 200,000 bytes, within the 256 KiB limit
DEEP_OBJECTS = 50_000  # objects with empty keys: 250,000 bytes
BIG_DIGITS = 5_000
PLACEHOLDER = "__raw__"


def nested(depth: int) -> bytes:
    """An object whose innermost value sits `depth` levels deep (the root object is level 1)."""
    return b'{"":' * depth + b"1" + b"}" * depth


def nested_arrays(depth: int) -> bytes:
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


INVALID_DOCUMENTS = {
    "duplicate-key": b'{"a": 1, "b": {"c": 1, "c": 2}}',
    "nan": b'{"a": NaN}',
    "infinity": b'{"a": Infinity}',
    "minus-infinity": b'{"a": [-Infinity]}',
    "overflow": b'{"a": 1e400}',
    "overflow-long-mantissa": b'{"a": ' + b"9" * 400 + b".0}",
    "lone-high-surrogate": b'{"a": "\\ud800"}',
    "lone-low-surrogate-key": b'{"\\udc00": 1}',
    "deep-objects": nested(DEEP_OBJECTS),
    "deep-arrays": nested_arrays(DEEP),
    "one-level-too-deep": nested(MAX_DEPTH + 1),
    "invalid-utf8": b'{"a": "\xc3\x28"}',
    "utf8-encoded-surrogate": b'{"a": "\xed\xa0\x80"}',
    "utf16": '{"a": 1}'.encode("utf-16"),
    "bom": b'\xef\xbb\xbf{"a": 1}',
    "array-root": b"[1, 2]",
    "string-root": b'"packet"',
    "number-root": b"7",
    "null-root": b"null",
    "syntax": b'{"a": 1,}',
    "trailing-data": b'{"a": 1} {}',
    "empty": b"",
    "control-character": b'{"a": "\x01"}',
}


@pytest.mark.parametrize("name", list(INVALID_DOCUMENTS))
def test_parser_refuses(name):
    parsed = parse_json_object(INVALID_DOCUMENTS[name])
    assert parsed.value is None and parsed.error


def test_parser_accepts_the_maximum_depth_and_surrogate_pairs():
    assert parse_json_object(nested(MAX_DEPTH)).error is None
    assert parse_json_object(nested_arrays(MAX_DEPTH)).error is None
    assert parse_json_object(b'{"a": "\\ud83d\\ude00", "b": "[[[{{{"}').value == {"a": "\U0001f600", "b": "[[[{{{"}


def test_integers_past_the_digit_limit_never_reach_int():
    parsed = parse_json_object(b'{"a": -' + b"7" * BIG_DIGITS + b', "b": ' + b"1" * MAX_INT_DIGITS + b"}")
    assert parsed.error is None
    assert parsed.value["a"] == OversizedInteger(digits=BIG_DIGITS, negative=True)
    assert not is_integer(parsed.value["a"])
    assert is_integer(parsed.value["b"]) and parsed.value["b"] == int("1" * MAX_INT_DIGITS)


def test_integer_means_no_fraction_no_exponent_and_no_bool():
    value = parse_json_object(b'{"i": 1, "f": 1.0, "e": 1e2, "t": true, "z": -0}').value
    assert [is_integer(value[k]) for k in "ifetz"] == [True, False, False, False, True]


# ---------------------------------------------------------------- on disk


@pytest.mark.parametrize("name", list(INVALID_DOCUMENTS))
def test_packet_json_refused(tmp_path, name):
    path = build(tmp_path / "packet")
    (path / "packet.json").write_bytes(INVALID_DOCUMENTS[name])
    admission = admit(path)
    assert problems(admission) == [("json_invalid", None)]
    assert admission.packet_sha256 is not None and admission.packet_json is None


@pytest.mark.parametrize("name", [name for name in INVALID_DOCUMENTS if INVALID_DOCUMENTS[name]])
def test_metadata_refused(tmp_path, name):
    admission = admit(build(tmp_path / "packet", metadata=INVALID_DOCUMENTS[name]))
    assert problems(admission) == [("json_invalid", "/metadata/file")]
    assert admission.snapshot is None and admission.selection is None and admission.sample is None
    assert admission.metadata_sha256 is not None  # the file verified; only its JSON is refused


def test_empty_metadata_cannot_declare_its_length(tmp_path):
    # byteCount must be 1..262144, so an empty metadata file is refused by its descriptor and not read.
    admission = admit(build(tmp_path / "packet", metadata=b""))
    assert problems(admission) == [("field_invalid", "/metadata/byteCount")]
    assert admission.metadata_sha256 is None and admission.snapshot_text is None


def _raw_json(document: dict, raw: str) -> bytes:
    """`document` serialized with every PLACEHOLDER string replaced by the raw JSON text `raw`."""
    return json.dumps(document).replace(json.dumps(PLACEHOLDER), raw).encode()


BIG = "9" * BIG_DIGITS


@pytest.mark.parametrize(
    "key, expected",
    [
        (("metadata", "recordIndex"), [("field_invalid", "/metadata/recordIndex")]),
        (("capture", "tensorPayloadBytes"), [("field_invalid", "/capture/tensorPayloadBytes")]),
        (("geometry", "visibleStart"), [("field_invalid", "/geometry/visibleStart")]),
        (("identity", "modelID"), [("field_invalid", "/identity/modelID")]),
        (("identity", "ignoredExtra"), []),
    ],
)
def test_huge_integer_in_packet_json(tmp_path, key, expected):
    path = build(tmp_path / "packet")
    descriptor = packet_descriptor(synthetic_spec())
    descriptor[key[0]][key[1]] = PLACEHOLDER
    (path / "packet.json").write_bytes(_raw_json(descriptor, BIG))
    admission = admit(path)
    assert problems(admission) == expected
    assert reason_codes(admission) == []


@pytest.mark.parametrize(
    "pointer, expected",
    [
        (("seedToken",), [("snapshot_invalid", "/seedToken")]),
        (("configuration", "requestID"), [("snapshot_invalid", "/configuration/requestID")]),
        (("records", 0, "scaleBits"), [("scale_invalid", "/records/0/scaleBits")]),
        (("records", 0, "offsetBefore"), [("snapshot_invalid", "/records/0/offsetBefore")]),
        (("ignoredExtra",), []),
    ],
)
def test_huge_integer_in_the_snapshot(tmp_path, pointer, expected):
    snapshot = json.loads(metadata_bytes(synthetic_spec()))
    parent = snapshot
    for token in pointer[:-1]:
        parent = parent[token]
    parent[pointer[-1]] = PLACEHOLDER
    admission = admit(build(tmp_path / "packet", metadata=_raw_json(snapshot, "-" + BIG)))
    assert problems(admission) == expected


def test_deep_nesting_in_an_ignored_key_of_packet_json(tmp_path):
    path = build(tmp_path / "packet")
    descriptor = packet_descriptor(synthetic_spec())
    descriptor["note"] = PLACEHOLDER
    # "note" is level 2, so MAX_DEPTH - 1 nested arrays reach exactly MAX_DEPTH.
    for depth, expected in ((MAX_DEPTH - 1, []), (MAX_DEPTH, [("json_invalid", None)])):
        (path / "packet.json").write_bytes(_raw_json(descriptor, "[" * depth + "]" * depth))
        assert problems(admit(path)) == expected


def test_packet_text_is_kept_for_the_raw_view(tmp_path):
    path = build(tmp_path / "packet")
    (path / "packet.json").write_bytes(b'{"a": NaN}')
    assert admit(path).packet_text == '{"a": NaN}'
