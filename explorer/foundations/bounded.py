"""Bounded renderings of untrusted values for messages; never does I/O.

A message never formats an unbounded integer (Python refuses one of over 4,300 digits) or string: texts and lists
are cut with a count, huge integers shown by digit count; the full value stays in the structured fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

MESSAGE_TEXT_CHARS = 120  # characters of a name, path or string value shown in a message
MESSAGE_INTEGER_DIGITS = 40  # an integer with more digits is shown by its digit count
MESSAGE_LIST_ITEMS = 8  # items of a list shown in a message
_LOG10_2 = math.log10(2)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
UNDECODABLE_BYTES = range(0xDC80, 0xDD00)  # surrogateescape's stand-ins for the bytes 0x80..0xFF of a file name


def digit_count(value: int) -> int:
    """Decimal digits of abs(value), computed without converting it to text."""
    magnitude = abs(value)
    if magnitude < 10:
        return 1
    estimate = int((magnitude.bit_length() - 1) * _LOG10_2) + 1  # exact or one short
    return estimate + (magnitude >= 10**estimate)


def shown_int(value: int) -> str:
    """`value` in decimal, or "a 5000-digit number" past MESSAGE_INTEGER_DIGITS."""
    digits = digit_count(value)
    if digits <= MESSAGE_INTEGER_DIGITS:
        return str(value)
    return f"a {'negative ' if value < 0 else ''}{digits}-digit number"


def clip(text: str, limit: int = MESSAGE_TEXT_CHARS) -> str:
    """`text` cut to `limit` characters, with the count of those left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def quoted(text: str) -> str:
    """repr() of a clipped text: a name or path as a message shows it."""
    return repr(clip(text))


def shown(value: Any) -> str:
    """One value for a message: integers by shown_int, strings quoted and clipped, lists by shown_list."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return shown_int(value)
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, (list, tuple)):
        return shown_list(value)
    return clip(str(value))


def shown_list(items: Iterable[Any], limit: int = MESSAGE_LIST_ITEMS) -> str:
    """`[a, b, ...]` with at most `limit` items shown and the count of those left out."""
    items = list(items)
    text = ", ".join(shown(item) for item in items[:limit])
    if len(items) > limit:
        text += f", ... ({len(items) - limit} more)"
    return f"[{text}]"


def _escaped_surrogate(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if code in UNDECODABLE_BYTES else f"\\u{code:04x}"


def escaped_bytes(text: str) -> str:
    """`text` with each undecodable file-name byte as \\xNN and any other lone surrogate as \\uNNNN (valid UTF-8)."""
    return _LONE_SURROGATE.sub(_escaped_surrogate, text)


def terminal_text(line: str) -> str:
    """`line` as a terminal shows it: undecodable bytes as \\xNN (docs/hostile-environment.md), every other
    non-printable character escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in escaped_bytes(line))


def terminal_lines(lines: Iterable[str]) -> str:
    """Each line as terminal_text, each ended by a newline."""
    return "".join(terminal_text(line) + "\n" for line in lines)
