"""Verdict words no report may hold, and every string and key of a report to look for them in."""

from __future__ import annotations

import re
from typing import Any

VERDICT_WORDS = re.compile(r"\b(pass(es|ed)?|fail(s|ed|ure)?|ok|okay|acceptable|unacceptable)\b", re.IGNORECASE)


def strings_and_keys(value: Any):
    """Every key and string value of a JSON-like value, depth first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_and_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_and_keys(item)
    elif isinstance(value, str):
        yield value
