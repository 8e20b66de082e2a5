"""A packet's findings: one sentence per fact with its numbers and where its worst value is; no I/O.

The overview's captions, the command line and `NAME.findings.md` (docs/report.md) quote these sentences; they
state, never judge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from explorer.analysis.blocks import linf_at, location_block
from explorer.analysis.metrics import largest_at
from explorer.analysis.ranking import worst_score_head
from explorer.analysis.result import Analysis, Comparison, Numerics, Ulp
from explorer.foundations.formatting import at_text, short_number
from explorer.foundations.record import Record, record
from explorer.packet.model import REFUSED, TENSOR_NAMES

SMALLEST_NORMAL = {"float16": 2.0**-14, "bfloat16": 2.0**-126, "float32": 2.0**-126}  # below it: subnormal or zero


@record
class Finding(Record):
    """One sentence of the findings: `key` names the fact, `numbers` holds the values the sentence states."""

    key: str
    text: str
    numbers: Mapping[str, Any]


def finding(key: str, text: str, **numbers: Any) -> Finding:
    """A Finding whose numbers are the keyword arguments (read-only)."""
    return Finding(key, text, MappingProxyType(numbers))


def largest_error_finding(numerics: Numerics) -> Finding | None:
    """The largest |output - primary reference| (over the eligible heads when only some are) at its element."""
    primary = numerics.primary
    block = primary.global_metrics if primary.eligible_global is None else primary.eligible_global
    if block.linf is None:
        return None
    at = linf_at(primary, block)
    over = "" if primary.eligible_global is None else " (eligible heads)"
    text = f"Largest |output - primary reference|{over}: {short_number(block.linf)}{at_text(at)}."
    return finding("largestError", text, linf=block.linf, linfAt=at)


def ulp_finding(numerics: Numerics) -> Finding | None:
    """The largest ULP distance of the output to the primary reference rounded to the output dtype, at its element."""
    rounded = numerics.rounded_to_output
    ulp = rounded.ulp
    if ulp.max is None:
        return None
    if ulp.max == 0:
        text = f"ULP max 0: every compared element equals the primary reference rounded to {rounded.dtype}."
        return finding("ulp", text, max=0, maxAt=None, p99=ulp.p99)
    at, said, caveat = ulp_caveat(ulp, rounded.comparison, ("output", "rounded reference"), rounded.dtype)
    return finding(
        "ulp",
        f"ULP max {ulp.max}{at_text(at)} (p99 {ulp.p99}) against the primary reference rounded to {rounded.dtype}"
        f"{'' if not said else '; there ' + said}.",
        max=ulp.max,
        maxAt=at,
        p99=ulp.p99,
        **{f"max{key}": value for key, value in caveat.items()},
    )


ULP_CAVEATS = {
    "zero": "have opposite signs, so the count runs through zero and every smaller value",
    "subnormals": "reach the subnormals, where the count runs through steps far finer than the format's precision",
}


def ulp_caveat(
    ulp: Ulp, comparison: Comparison, names: tuple[str, str], dtype: str
) -> tuple[dict[str, int], str, dict[str, Any]]:
    """Where the largest ULP distance between `comparison`'s actual and reference values (called `names`) of `dtype`
    is, and why it is large by construction ("" and {} when it is not): "zero" (opposite signs) or "subnormals", said
    with |difference|; numbers {"Across", "AbsDifference"}."""
    head, channel = largest_at(ulp.distance)
    first, second = float(comparison.actual[head, channel]), float(comparison.reference[head, channel])
    at = location_block((head, channel))
    if math.copysign(1.0, first) != math.copysign(1.0, second) and (first or second):
        across = "zero"
    elif min(abs(first), abs(second)) < SMALLEST_NORMAL[dtype]:
        across = "subnormals"
    else:
        return at, "", {}
    difference = abs(first - second)
    said = (
        f"the {names[0]} {short_number(first)} and the {names[1]} {short_number(second)} {ULP_CAVEATS[across]}, "
        f"|difference| {short_number(difference)}"
    )
    return at, said, {"Across": across, "AbsDifference": difference}


def _status(analysis: Analysis) -> Finding:
    refused = analysis.status == REFUSED
    codes = [p.code for p in (analysis.admission.refusals if refused else analysis.reasons)]
    listed = ", ".join(dict.fromkeys(codes))
    if refused:
        text = f"Refused at admission ({listed}): nothing numeric was computed, the packet cannot be trusted."
    elif codes:
        text = f"Inconclusive ({listed}): what the packet allows is still computed."
    else:
        text = f"Status {analysis.status}."
    return finding("status", text, status=analysis.status, codes=codes)


def _score(numerics: Numerics) -> Finding | None:
    score = numerics.score
    if score.value is None:
        return None
    head = worst_score_head(numerics)
    missing = f"; {score.heads_not_compared} of {score.heads} heads not compared" if score.heads_not_compared else ""
    text = f"Score (error / allowance) {short_number(score.value)} at query head {head}{missing}."
    return finding("score", text, score=score.value, worstHead=head, headsNotCompared=score.heads_not_compared)


def _last_row(analysis: Analysis) -> Finding:
    facts = analysis.facts
    keys, values = facts.last_row_keys, facts.last_row_values
    text = (
        f"Last row: keys {keys.mismatched} of {keys.compared} elements differ, values {values.mismatched} of "
        f"{values.compared}."
    )
    return finding("lastRow", text, keys=keys.mismatched, values=values.mismatched, compared=keys.compared)


def _nonfinite(analysis: Analysis) -> Finding:
    counts = {name: analysis.facts.nonfinite[name] for name in TENSOR_NAMES}
    holding = {name: m for name, m in counts.items() if m.total}
    if not holding:
        return finding("nonfinite", "No NaN and no infinity in any of the six tensors.", tensors={})
    listed = "; ".join(
        f"{name}: NaN {m.nan}, +inf {m.positive_infinity}, -inf {m.negative_infinity}" for name, m in holding.items()
    )
    return finding("nonfinite", f"NaN or infinity in {listed}.", tensors={name: m.total for name, m in holding.items()})


def reproducing(emulations) -> tuple[list[str], int, int] | None:
    """(ids, bit-equal, compared) of the emulations that reproduce an output, else of the nearest (first on a tie)."""
    entries = [e for e in emulations or () if e.bit_equal is not None]
    if not entries:
        return None
    compared = entries[0].compared
    full = [e.id for e in entries if e.bit_equal == compared]
    if full:
        return full, compared, compared
    best = max(entries, key=lambda e: e.bit_equal)
    return [best.id], best.bit_equal, compared


def _emulations(analysis: Analysis) -> Finding | None:
    found = reproducing(analysis.emulations)
    if found is None:
        return None
    ids, bit_equal, compared = found
    text = (
        f"Reproduces the output bit for bit ({compared} of {compared}): {', '.join(ids)}."
        if bit_equal == compared
        else f"No emulation reproduces the output bit for bit; the nearest is {ids[0]} ({bit_equal} of {compared})."
    )
    return finding("emulations", text, ids=ids, bitEqual=bit_equal, compared=compared)


def builds_finding(analysis: Analysis) -> Finding | None:
    """Which engine build (and GPU class) wrote the packet, when the builds set was computed (emulation-v4 §2)."""
    if analysis.emulations is None:
        return None
    from explorer.analysis.emulation.attribution import packet_attribution  # loaded only with emulations

    found = packet_attribution(analysis)
    if found is None:
        return None
    return finding("builds", found.sentence, builds=found.block, reason=found.reason)


def packet_findings(analysis: Analysis) -> tuple[Finding, ...]:
    """The packet's findings in reading order (only the status for a refused packet), the builds sentence first."""
    if analysis.status == REFUSED:
        return (_status(analysis),)
    found = [builds_finding(analysis), _status(analysis)]
    numerics = analysis.numerics
    if numerics is not None:
        found += [_score(numerics), largest_error_finding(numerics), ulp_finding(numerics), _emulations(analysis)]
    if analysis.facts is not None:
        found += [_last_row(analysis), _nonfinite(analysis)]
    return tuple(f for f in found if f is not None)
