"""Strict JSON parsing of untrusted bytes (docs/packet-format.md, How files are read); no I/O.

Beyond the standard library: UTF-8 only; duplicated keys, `NaN` / `Infinity`, overflowing numbers, lone
surrogates, nesting deeper than `MAX_DEPTH` (measured by one linear scan before the recursive parser runs) and
a root that is not an object are invalid. Integers of more than `MAX_INT_DIGITS` digits become an
`OversizedInteger`, which every integer rule finds out of range.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from explorer.foundations.bounded import quoted
from explorer.foundations.record import Record, record

MAX_DEPTH = 64
MAX_INT_DIGITS = 4000

# The characters the depth scan acts on: string delimiters, escapes and brackets.
_SCANNED = re.compile(r'["\\\[\]{}]')
_SURROGATE = re.compile("[\ud800-\udfff]")


@record
class OversizedInteger(Record):
    """A JSON integer literal with more than MAX_INT_DIGITS digits, kept only by its digit count."""

    digits: int
    negative: bool

    def __str__(self) -> str:
        return f"{'-' if self.negative else ''}<integer of {self.digits} digits>"


@record
class ParsedJson(Record):
    """The outcome of parsing: `value` when valid, else `error`; `text` when the bytes were UTF-8."""

    value: Any
    text: str | None
    error: str | None


_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class _Rejected(ValueError):
    """A rule of this module broken inside a json hook."""


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if isinstance(value, OversizedInteger):
        return "integer (out of range)"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def is_integer(value: Any) -> bool:
    """True for a JSON integer (never a bool, float or OversizedInteger)."""
    return type(value) is int


def _parse_int(literal: str) -> int | OversizedInteger:
    digits = len(literal) - literal.startswith("-")
    if digits > MAX_INT_DIGITS:
        return OversizedInteger(digits=digits, negative=literal.startswith("-"))
    return int(literal)


def _parse_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _Rejected(f"number {literal[:40]} overflows to infinity")
    return value


def _parse_constant(name: str) -> float:
    raise _Rejected(f"non-standard constant {name}")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise _Rejected(f"duplicated key {quoted(key)}")
        result[key] = value
    return result


def _max_depth(text: str) -> int:
    """Deepest bracket nesting outside string literals, in one pass (no recursion, no backtracking)."""
    depth = deepest = 0
    in_string = False
    escaped_at = -1  # index of the character a backslash escapes
    for match in _SCANNED.finditer(text):
        char, at = match.group(), match.start()
        if at == escaped_at:
            continue
        if in_string:
            if char == "\\":
                escaped_at = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a lone surrogate, searched depth-first (depth is bounded)."""
    if isinstance(value, str):
        return value if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        items = [item for pair in value.items() for item in pair]
    elif isinstance(value, list):
        items = value
    else:
        return None
    return next((found for item in items if (found := _lone_surrogate(item)) is not None), None)


def parse_json_value(data: bytes) -> ParsedJson:
    """Parse `data` strictly, whatever JSON value its root is (a replay's execution.json is an array). Never raises."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return ParsedJson(None, None, f"not UTF-8: {error}")
    depth = _max_depth(text)
    if depth > MAX_DEPTH:
        return ParsedJson(None, text, f"nested {depth} levels deep, more than {MAX_DEPTH}")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_object,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_parse_constant,
        )
    except (json.JSONDecodeError, _Rejected, RecursionError) as error:
        return ParsedJson(None, text, str(error))
    if (surrogate := _lone_surrogate(value)) is not None:
        shown = surrogate.encode("utf-8", "backslashreplace")[:60]
        return ParsedJson(None, text, f"a string holds a lone surrogate: {shown!r}")
    return ParsedJson(value, text, None)


def parse_json_object(data: bytes) -> ParsedJson:
    """Parse `data` strictly; the root must be an object. Never raises for any input bytes."""
    parsed = parse_json_value(data)
    if parsed.error is None and not isinstance(parsed.value, dict):
        return ParsedJson(None, parsed.text, f"the root is {json_type(parsed.value)}, not an object")
    return parsed
