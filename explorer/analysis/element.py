"""Every number the analysis holds about one output element (query head, channel); no I/O, no UI.

An element is (head, channel) or its flat index over the [QH, D] output (head * D + channel). Nothing here
computes a new number: values are read from the analysis' arrays (NaN differences, -1 distances become None).
"""

from __future__ import annotations

import math
import re
from dataclasses import fields
from typing import Any

import numpy as np

from explorer.analysis.result import Analysis, Comparison, Rounded, Ulp
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import FIELD_BITS

NO_TENSORS = (
    "no element values: the packet's tensor files did not all verify (refused or unreadable), "
    "so nothing in them is interpreted"
)
NO_NUMERICS = (
    "no reference was computed for this packet (the analysis stopped before numerics): only the output value is known"
)
# "H,C" (query head, channel) or "N" (flat index over [QH, D]): ASCII digits only, as typed or put in a URL.
INDEX_PATTERN = re.compile(r"([0-9]{1,9})(?:,([0-9]{1,9}))?", re.ASCII)
INELIGIBLE = "the head is ineligible (NaN or infinity in its queries, keys or values): no reference"


@record
class RoundedElement(Record):
    """The primary reference of one element rounded (RNE) to `dtype`, and the output's distance to it."""

    dtype: str
    value: float
    bits: int
    hex: str
    difference: float | None
    ulp: int | None


@record
class Element(Record):
    """Everything about output element [head, channel]: values, native patterns, differences (|output - x| in
    FP64), ULP distances; None where undefined, reference fields None when `missing` says why."""

    head: int
    channel: int
    flat_index: int
    kv_head: int | None
    output_dtype: str
    output: float
    output_bits: int
    output_hex: str
    eligible: bool | None
    primary: float | None
    primary_difference: float | None
    fp64: float | None
    fp64_difference: float | None
    rounded_to_output: RoundedElement | None
    rounded_to_kernel: RoundedElement | None
    narrowed_query: float | None
    narrowed_query_difference: float | None
    narrowed_query_reason: str | None
    missing: str | None

    def fields(self) -> tuple[tuple[str, Any], ...]:
        """(label, value) pairs in display order; values are floats, ints, strings or None (not available)."""
        rows: list[tuple[str, Any]] = [
            ("query head", self.head),
            ("channel", self.channel),
            ("flat index [QH, D]", self.flat_index),
            ("KV head", self.kv_head),
            (f"output ({self.output_dtype})", self.output),
            (f"output bits ({self.output_dtype})", self.output_hex),
            ("eligible", self.eligible),
            ("primary FP32 reference", self.primary),
            ("|output - primary|", self.primary_difference),
            ("FP64 value (diagnostic)", self.fp64),
            ("|output - FP64|", self.fp64_difference),
        ]
        for rounded in (self.rounded_to_output, self.rounded_to_kernel):
            if rounded is not None:
                rows += [
                    (f"reference rounded to {rounded.dtype}", rounded.value),
                    (f"reference rounded to {rounded.dtype}, bits", rounded.hex),
                    (f"|output - rounded to {rounded.dtype}|", rounded.difference),
                    (f"ULP distance ({rounded.dtype} units)", rounded.ulp),
                ]
        if self.narrowed_query_reason is None:
            rows += [
                ("narrowed-Q reference (counterfactual)", self.narrowed_query),
                ("|output - narrowed-Q reference|", self.narrowed_query_difference),
            ]
        else:
            rows.append(("narrowed-Q reference (counterfactual)", f"not applicable: {self.narrowed_query_reason}"))
        if self.missing is not None:
            rows.append(("not available", self.missing))
        return tuple(rows)


def hex_pattern(bits: int, dtype: str) -> str:
    """A native bit pattern as 0x-prefixed upper-case hex of the dtype's width."""
    return f"0x{int(bits):0{sum(FIELD_BITS[dtype]) // 4}X}"


def _index(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    return int(value)


def parse_index(text: str) -> tuple[int, int | None]:
    """(head, channel) of "H,C", or (flat index, None) of "N"; ValueError for anything else."""
    match = INDEX_PATTERN.fullmatch(text)
    if match is None:
        raise ValueError(f"element {text[:40]!r} is not H,C (query head, channel) or a flat index")
    return int(match.group(1)), None if match.group(2) is None else int(match.group(2))


def locate(heads: int, channels: int, head: Any, channel: Any = None) -> tuple[int, int]:
    """(head, channel) of (head, channel) or of a flat index over [heads, channels]; IndexError when outside."""
    if channel is None:
        flat = _index(head, "flat index")
        if not 0 <= flat < heads * channels:
            raise IndexError(
                f"flat index {flat} is outside 0..{heads * channels - 1} (output [QH, D] = [{heads}, {channels}])"
            )
        return divmod(flat, channels)
    h, c = _index(head, "head"), _index(channel, "channel")
    if not 0 <= h < heads:
        raise IndexError(f"head {h} is outside 0..{heads - 1} (QH = {heads})")
    if not 0 <= c < channels:
        raise IndexError(f"channel {c} is outside 0..{channels - 1} (D = {channels})")
    return h, c


def _difference(comparison: Comparison, h: int, c: int) -> float | None:
    value = float(comparison.abs_error[h, c])
    return None if math.isnan(value) else value


def _ulp(ulp: Ulp, h: int, c: int) -> int | None:
    distance = int(ulp.distance[h, c])
    return distance if distance >= 0 else None


def _rounded(rounded: Rounded | None, h: int, c: int) -> RoundedElement | None:
    if rounded is None:
        return None
    bits = int(rounded.rounded_bits[h, c])
    return RoundedElement(
        rounded.dtype,
        float(rounded.comparison.reference[h, c]),
        bits,
        hex_pattern(bits, rounded.dtype),
        _difference(rounded.comparison, h, c),
        _ulp(rounded.ulp, h, c),
    )


def element(analysis: Analysis, head: Any, channel: Any = None) -> Element:
    """The record of output element (head, channel), or of a flat index over [QH, D] when `channel` is None;
    ValueError when the tensors did not verify, TypeError for a non-integer index, IndexError outside the output."""
    tensors = analysis.admission.tensors
    if tensors is None or analysis.facts is None:
        raise ValueError(NO_TENSORS)
    output = tensors["output"]
    values, bits = output.values[0, :, 0, :], output.bits[0, :, 0, :]
    heads, channels = values.shape
    h, c = locate(heads, channels, head, channel)
    record = {
        "head": h,
        "channel": c,
        "flat_index": h * channels + c,
        "output_dtype": output.dtype,
        "output": float(values[h, c]),
        "output_bits": int(bits[h, c]),
        "output_hex": hex_pattern(bits[h, c], output.dtype),
    }
    numerics = analysis.numerics
    if numerics is None:
        return Element(**{**dict.fromkeys(item.name for item in fields(Element)), **record, "missing": NO_NUMERICS})
    eligible = bool(numerics.eligible[h])
    narrowed = numerics.narrowed_query
    return Element(
        **record,
        kv_head=numerics.attention[h].kv_head,
        eligible=eligible,
        primary=float(numerics.primary.reference[h, c]) if eligible else None,
        primary_difference=_difference(numerics.primary, h, c),
        fp64=float(numerics.fp64.reference[h, c]) if eligible else None,
        fp64_difference=_difference(numerics.fp64.output_error, h, c),
        rounded_to_output=_rounded(numerics.rounded_to_output, h, c) if eligible else None,
        rounded_to_kernel=_rounded(numerics.rounded_to_kernel, h, c) if eligible else None,
        narrowed_query=float(narrowed.reference[h, c]) if narrowed is not None and eligible else None,
        narrowed_query_difference=_difference(narrowed.comparison, h, c) if narrowed is not None else None,
        narrowed_query_reason=numerics.narrowed_query_reason,
        missing=None if eligible else INELIGIBLE,
    )
