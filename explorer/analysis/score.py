"""The packet score: each output element's error over its allowance (output rounding plus noise floor).

A score is a ratio, never a verdict. For element `e` of query head `h`:

    allowance(e) = 0.5 * spacing(output dtype, |primary reference e|) + floor(h)
    score(h)     = max_e |output e - primary reference e| / allowance(e)
    score        = max_h score(h)

`floor(h)` is the head's FP64 noise floor (the linf of the primary FP32 reference
against the same formula in FP64); `spacing(dtype, x)` is the distance from `x` to
the next larger value of the output dtype in the binade of `x` (the subnormal
spacing below the normal range). An output equal to the reference rounded to its
dtype scores at most 1; an element k output ULPs away scores about 2k.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from explorer.foundations.record import Record, record
from explorer.packet.dtypes import FIELD_BITS

ROUNDING_ALLOWANCE = 0.5  # in units of the output dtype's spacing: what round-to-nearest may move a value


@record
class Score(Record):
    """The packet score (the largest head score) and its per-head parts (None: not compared)."""

    value: float | None
    per_head: tuple[float | None, ...]
    heads_not_compared: int
    heads: int


def spacing(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64, the shape of `values`: the spacing of `dtype` at |value| for finite values (NaN elsewhere)."""
    _, exponent_bits, mantissa_bits = FIELD_BITS[dtype]
    lowest_binade = 2 - (1 << (exponent_bits - 1))  # the smallest normal exponent, e.g. -126 for float32
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    _, exponent = np.frexp(magnitude)  # magnitude = m * 2**exponent, m in [0.5, 1)
    binade = np.where(magnitude == 0, lowest_binade, np.maximum(exponent - 1, lowest_binade))
    return np.where(np.isfinite(magnitude), np.ldexp(1.0, binade - mantissa_bits), np.nan)


def packet_score(abs_error: np.ndarray, reference: np.ndarray, floors: Sequence[float | None], dtype: str) -> Score:
    """The score of an output of `dtype` from |output - primary reference| [QH, D] (NaN where undefined), the
    reference and each head's FP64 noise floor (None where undefined)."""
    allowance = ROUNDING_ALLOWANCE * spacing(reference, dtype)
    per_head = []
    for h, floor in enumerate(floors):
        row = abs_error[h]
        if floor is None or not np.isfinite(row).all() or not np.isfinite(allowance[h]).all():
            per_head.append(None)
            continue
        per_head.append(float(np.max(row / (allowance[h] + floor))))
    defined = [value for value in per_head if value is not None]
    return Score(max(defined) if defined else None, tuple(per_head), len(per_head) - len(defined), len(per_head))
