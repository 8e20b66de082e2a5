"""The numbers of a replay (docs/replay.md, What is computed); pure, no I/O.

Outputs are compared by the bit patterns of their exact float32 promotions: +0 and -0 differ, a NaN equals only the same
pattern.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np

from explorer.analysis.metrics import compare, readonly, rounded
from explorer.analysis.result import Analysis, Emulation, Numerics
from explorer.replay.model import FIRST_POSITIONS_LIMIT, ArmReferences, Matrix, OutputDifference, Readback

PRIMARY_LABEL = "replay arm {arm} output vs primary reference (original-Q FP32 softmax attention)"
ROUNDED_LABEL = "replay arm {arm} output vs primary reference rounded (RNE) to {dtype}; ULP in {dtype} units"
FP64_LABEL = "replay arm {arm} output vs the same formula evaluated in FP64 (diagnostic, not the reference)"


def float32_patterns(values: np.ndarray) -> np.ndarray:
    """The bit patterns of float32 values (a view)."""
    return np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)


def output_difference(values: np.ndarray, other: np.ndarray) -> OutputDifference:
    """`values` against `other`, both float32 [QH, D], element by element."""
    differs = float32_patterns(values) != float32_patterns(other)
    where = np.flatnonzero(differs)
    first = np.unravel_index(where[:FIRST_POSITIONS_LIMIT], differs.shape)
    return OutputDifference(
        identical=where.size == 0,
        compared=int(differs.size),
        mismatched=int(where.size),
        per_head=tuple(int(n) for n in differs.sum(axis=1)),
        first_positions=tuple(zip(*(axis.tolist() for axis in first), strict=True)),
        differs=readonly(differs),
    )


def readback(name: str, replayed: np.ndarray, captured: np.ndarray, same_sha256: bool) -> Readback:
    """A stored tensor read back [KVH, T, D] against the packet's, by native bit patterns.

    `same_sha256`: both files (same dtype and shape) hash to one SHA-256, so they hold the same bytes and no element is
    compared (the content identity every cache of the explorer already rests on).
    """
    if same_sha256:
        return Readback(name, True, 0, None)
    where = np.flatnonzero(replayed != captured)
    first = tuple(int(i) for i in np.unravel_index(where[0], replayed.shape)) if where.size else None
    return Readback(name, where.size == 0, int(where.size), first)


def arm_references(arm: str, values: np.ndarray, bits: np.ndarray, dtype: str, numerics: Numerics) -> ArmReferences:
    """Blocks C and U of the arm's output against the packet's primary, rounded and FP64 references."""
    eligible, reference = numerics.eligible, numerics.primary.reference
    near = rounded(ROUNDED_LABEL.format(arm=arm, dtype=dtype), dtype, values, bits, reference, eligible)
    equal = int(np.count_nonzero((bits == near.rounded_bits)[eligible]))
    primary = compare(PRIMARY_LABEL.format(arm=arm), values, reference, eligible)
    fp64 = compare(FP64_LABEL.format(arm=arm), values, numerics.fp64.reference, eligible)
    worst = {
        "primary": worst_position(primary.abs_error),
        "rounded": worst_position(near.comparison.abs_error),
        "fp64": worst_position(fp64.abs_error),
        "ulp": worst_position(near.ulp.distance),
    }
    return ArmReferences(
        primary=primary,
        rounded=near.comparison,
        fp64=fp64,
        ulp=near.ulp,
        equal_to_rounded_reference=equal,
        worst=MappingProxyType(worst),
    )


def worst_position(values: np.ndarray) -> tuple[int, int] | None:
    """[query head, channel] of the largest defined value of a [QH, D] map (the first in row-major order on a tie).

    Undefined elements are NaN (error maps) or negative (ULP distances); None when none is defined.
    """
    defined = np.where(np.isnan(values), -1, values) if values.dtype.kind == "f" else values
    if defined.size == 0 or defined.max() < 0:
        return None
    head, channel = np.unravel_index(int(np.argmax(defined)), defined.shape)
    return int(head), int(channel)


def arm_emulations(packet: Analysis, values: np.ndarray, bits: np.ndarray, dtype: str) -> tuple[Emulation, ...] | None:
    """The packet's emulations scored against the arm's output (None without them or in another output dtype)."""
    if packet.emulations is None or packet.admission.tensors["output"].dtype != dtype:
        return None
    # the emulation machinery (and the pair's emulated outputs) load only for a replay with emulations
    from explorer.analysis.emulation import score
    from explorer.pair.emulation import emulated_outputs

    numerics = packet.numerics
    return tuple(
        score(emulated, values, bits, numerics.primary.reference, numerics.eligible)
        for emulated in emulated_outputs(packet)
    )


def matrix(outputs: Sequence[tuple[str, np.ndarray]]) -> Matrix:
    """Elements differing between every two of the labelled float32 [QH, D] outputs (symmetric, diagonal 0)."""
    patterns = [float32_patterns(values) for _, values in outputs]
    counts = [
        [0 if i == j else int(np.count_nonzero(a != b)) for j, b in enumerate(patterns)] for i, a in enumerate(patterns)
    ]
    return Matrix(
        tuple(label for label, _ in outputs),
        tuple(tuple(row) for row in counts),
        int(patterns[0].size) if patterns else 0,
    )
