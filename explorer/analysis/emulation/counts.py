"""What a count can tell apart: decisive elements, counts on them, the baseline and the table order."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from explorer.analysis.result import Baseline, Decisive, Emulation, EmulationCounts

DECISIVE_POSITIONS = 100  # positions listed in `decisive` (row-major)


def head_counts(mask: np.ndarray, eligible: np.ndarray) -> tuple[int, tuple[int | None, ...]]:
    """(global over eligible heads, per head with None for an ineligible one) counts of a bool mask [QH, D]."""
    per_head = np.count_nonzero(mask, axis=1)
    return (
        int(per_head[eligible].sum()),
        tuple(int(n) if ok else None for n, ok in zip(per_head, eligible, strict=True)),
    )


def decisive(emulations: Sequence[Emulation], eligible: np.ndarray) -> Decisive | None:
    """The eligible elements where the emulations with numbers are not all bit-identical; None with fewer than two."""
    held = [e.bits for e in emulations if e.bits is not None]
    if len(held) < 2:
        return None
    first = held[0]
    mask = np.zeros(first.shape, dtype=bool)
    for bits in held[1:]:
        mask |= bits != first
    mask &= eligible[:, None]
    count, per_head = head_counts(mask, eligible)
    positions = tuple((int(h), int(c)) for h, c in np.argwhere(mask)[:DECISIVE_POSITIONS])
    mask.flags.writeable = False
    return Decisive(count, per_head, positions, mask)


def bit_equal(bits: np.ndarray, output_bits: np.ndarray, eligible: np.ndarray) -> tuple[int, tuple[int | None, ...]]:
    """(global, per head) counts of the output elements whose bit pattern equals `bits` (eligible heads only)."""
    return head_counts(output_bits == bits, eligible)


def equal_on(
    bits: np.ndarray, output_bits: np.ndarray, mask: np.ndarray, eligible: np.ndarray
) -> tuple[int, tuple[int | None, ...]]:
    """(global, per head) counts of the elements of `mask` where `output_bits` equals `bits` (eligible heads only)."""
    return head_counts((output_bits == bits) & mask, eligible)


def with_counts(
    emulations: Sequence[Emulation], output_bits: np.ndarray, rounded_bits: np.ndarray, eligible: np.ndarray
) -> tuple[tuple[Emulation, ...], EmulationCounts]:
    """The emulations with their `bit_equal_decisive` set, and the decisive elements and baseline row."""
    found = decisive(emulations, eligible)

    def counted(e: Emulation) -> Emulation:
        if found is None or e.bits is None:
            return e
        count, per_head = equal_on(e.bits, output_bits, found.mask, eligible)
        return dataclasses.replace(e, bit_equal_decisive=count, bit_equal_decisive_per_head=per_head)

    on_decisive = (None, None) if found is None else equal_on(rounded_bits, output_bits, found.mask, eligible)
    baseline = Baseline(*bit_equal(rounded_bits, output_bits, eligible), *on_decisive)
    return tuple(map(counted, emulations)), EmulationCounts(found, baseline)


def rank_key(emulation: Emulation) -> tuple[int, int]:
    """(0 with numbers, 1 without; minus the count that orders it): bitEqualDecisive, else bitEqual."""
    if emulation.bit_equal is None:
        return (1, 0)
    count = emulation.bit_equal if emulation.bit_equal_decisive is None else emulation.bit_equal_decisive
    return (0, -count)


def ranked(emulations: Sequence[Emulation]) -> tuple[Emulation, ...]:
    """The table order: by bitEqualDecisive (else bitEqual), largest first, ties in request order; no numbers last."""
    return tuple(sorted(emulations, key=rank_key))  # sorted is stable: ties keep the request order
