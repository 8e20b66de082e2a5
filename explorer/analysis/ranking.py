"""Per-head ranking numbers and the pair selection key, read off an analysis the core already holds.

Ratios, maxima and keys for sorting and pairing, never verdicts: a linf in units of the head's FP64 noise floor
says how far the output sits from the reference, nothing about whether that is acceptable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from explorer.analysis.result import Analysis, Numerics
from explorer.packet.snapshot import SELECTION_POSITION

# docs/pairs.md, Status and codes: the fields two captures of one selection share, in report order.
_IDENTITY_FIELDS = ("modelID", "artifactSHA256", "inputSHA256")
_SAMPLE_FIELDS = ("seedToken",)
SELECTION_FIELDS = (*_IDENTITY_FIELDS, *SELECTION_POSITION, "scaleBits", *_SAMPLE_FIELDS)


def noise_floor_ratios(numerics: Numerics) -> tuple[float | None, ...]:
    """Per query head: primary linf / FP64 noise-floor linf; None where either is undefined or the floor is 0."""
    pairs = zip(numerics.primary.per_head, numerics.fp64.reference_error.per_head, strict=True)
    return tuple(
        a.linf / f.linf if a.linf is not None and f.linf is not None and f.linf > 0 else None for a, f in pairs
    )


def worst_ulp_per_head(numerics: Numerics) -> tuple[int | None, ...]:
    """Per query head: the largest ULP distance to the rounded reference (None: no finite pair)."""
    distance = numerics.rounded_to_output.ulp.distance
    worst = np.where(distance >= 0, distance, -1).max(axis=1)
    return tuple(int(value) if value >= 0 else None for value in worst)


def ranked_heads(numerics: Numerics) -> list[int]:
    """Query heads by score, then worst ULP, largest first, not compared last: the first is the worst head."""
    scores, ulps = numerics.score.per_head, worst_ulp_per_head(numerics)

    def key(h: int) -> tuple:
        return (scores[h] is None, -(scores[h] or 0.0), ulps[h] is None, -(ulps[h] or 0), h)

    return sorted(range(len(scores)), key=key)


def worst_score_head(numerics: Numerics) -> int | None:
    """The head with the largest score (ties: the larger worst ULP, then the lower head), None when none is compared."""
    return ranked_heads(numerics)[0] if numerics.score.value is not None else None


def worst_head(numerics: Numerics) -> tuple[int | None, float | None, float | None]:
    """(head, primary linf, noise-floor ratio) of the head with the largest defined primary linf, or Nones."""
    defined = [(m.linf, h) for h, m in enumerate(numerics.primary.per_head) if m.linf is not None]
    if not defined:
        return None, None, None
    linf, head = max(defined, key=lambda pair: (pair[0], -pair[1]))
    return head, linf, noise_floor_ratios(numerics)[head]


def selection_key(analysis: Analysis) -> tuple[tuple[str, Any], ...] | None:
    """The partner selection fields (docs/pairs.md, Partners) as ((name, value), ...) in report order: equal keys
    are partners. None when refused or identity, selection or sample is not established."""
    admission = analysis.admission
    if admission.refused or None in (admission.identity, admission.selection, admission.sample):
        return None
    values = {
        **{k: admission.identity[k] for k in _IDENTITY_FIELDS},
        **{k: admission.sample[k] for k in _SAMPLE_FIELDS},
    }
    values.update((k, admission.selection[k]) for k in SELECTION_FIELDS if k not in values)
    return tuple((name, values[name]) for name in SELECTION_FIELDS)
