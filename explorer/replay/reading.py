"""The replay matrix read in one sentence; pure, from the Matrix and the arm states only.

E.g. "nativeSDPA reproduces the capture bit for bit; pagedFixed and pagedSegmented reproduce the partner bit for bit;
pagedFixed and pagedSegmented are byte-identical." Counts, never a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from explorer.pair.findings import and_list
from explorer.replay.model import ARMS, CAPTURE, PARTNER, ArmResult, Matrix


def _plural(arms: Sequence[str], one: str, many: str) -> str:
    return f"{and_list(arms)} {one if len(arms) == 1 else many}"


def _arm_phrase(matrix: Matrix, arm: str) -> tuple[str, str]:
    """(singular, plural) of what the arm's row says about the captures."""
    row = dict(zip(matrix.labels, matrix.mismatched[matrix.labels.index(arm)], strict=True))
    same = [label for label in (CAPTURE, PARTNER) if label in row and row[label] == 0]
    if same:
        captures = " and ".join(f"the {label}" for label in same)
        return f"reproduces {captures} bit for bit", f"reproduce {captures} bit for bit"
    parts = [f"from the {label} in {row[label]:,}" for label in (CAPTURE, PARTNER) if label in row]
    counts = " and ".join(parts) + f" of {matrix.compared:,} elements"
    return f"differs {counts}", f"differ {counts}"


def _identical_groups(matrix: Matrix, readable: Sequence[str]) -> list[list[str]]:
    """Groups of two or more arms whose outputs are byte-identical (equality is transitive), in arm order."""
    groups: list[list[str]] = []
    for arm in readable:
        row = matrix.mismatched[matrix.labels.index(arm)]
        for group in groups:
            if row[matrix.labels.index(group[0])] == 0:
                group.append(arm)
                break
        else:
            groups.append([arm])
    return [group for group in groups if len(group) > 1]


def matrix_sentence(matrix: Matrix | None, arms: Mapping[str, ArmResult]) -> str | None:
    """The matrix in one sentence (None for a refused run, which has no matrix)."""
    if matrix is None:
        return None
    readable = [arm for arm in ARMS if arm in matrix.labels]
    clauses: dict[str, list[str]] = {}
    plurals: dict[str, str] = {}
    for arm in readable:
        singular, plural = _arm_phrase(matrix, arm)
        clauses.setdefault(singular, []).append(arm)
        plurals[singular] = plural
    parts = [_plural(names, singular, plurals[singular]) for singular, names in clauses.items()]
    parts += [
        f"{and_list(group)} are byte-identical" if len(group) < len(ARMS) else "all three arms are byte-identical"
        for group in _identical_groups(matrix, readable)
    ]
    if len(readable) > 1 and not _identical_groups(matrix, readable):
        parts.append("no two arms are byte-identical")
    parts += [f"{arm} has no output ({arms[arm].state})" for arm in ARMS if arm not in readable]
    return "; ".join(parts) + "."
