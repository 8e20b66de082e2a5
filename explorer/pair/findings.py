"""The pair's findings: one sentence per fact with its numbers, which side is off first; no I/O, no UI.

Leading (docs/pairs.md, "Findings"): which output is nearer the shared primary reference, each side's elements equal to
the rounded reference, which emulation reproduces each side; then inputs, outputs, errors and tokens. Counts, never a
verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from explorer.analysis.blocks import linf_at
from explorer.analysis.findings import Finding, finding, largest_error_finding, reproducing, ulp_caveat
from explorer.foundations.formatting import at_text, short_number
from explorer.pair.emulation import EACH_SIDE_INPUTS
from explorer.pair.model import INPUTS_DIFFER, NEARER_KEYS, NO_REFERENCE, SCALE_DIFFERS, SHAPE_DIFFERS, SIDES, Pair

# Why no nearer count exists, in words (the codes of Pair.nearer_reason).
NEARER_REASONS = {
    INPUTS_DIFFER: "the inputs differ, so each side has its own reference",
    SCALE_DIFFERS: "the scales differ, so each side has its own reference",
    SHAPE_DIFFERS: "the shapes differ, so no element-wise comparison exists",
    NO_REFERENCE: "a side has no reference",
}
# The keys of the leading findings: the facts that say which side is off.
DECIDING = ("nearer", "rounded", "emulations")


def nearer_finding(pair: Pair) -> Finding:
    """Elements nearer the shared primary reference, per side, or why there is no such count."""
    nearer = pair.nearer
    if nearer is None:
        reason = pair.nearer_reason
        why = f"{reason}: {NEARER_REASONS.get(reason, reason)}"
        return finding("nearer", f"Nearer the primary reference: not computed ({why}).", reason=reason)
    c = nearer.global_counts
    total = c.a + c.b + c.tie + c.undefined
    return finding(
        "nearer",
        f"Nearer the primary reference: a {c.a}, b {c.b} of {total} elements "
        f"(equally near {c.tie}, undefined {c.undefined}).",
        **{key: getattr(c, key) for key in NEARER_KEYS},
        compared=total,
    )


def rounded_finding(pair: Pair) -> Finding:
    """Each side's elements equal to its primary reference rounded to its output dtype."""
    ladder = pair.ladder
    if ladder is None:
        return finding("rounded", "Equal to the rounded reference: not computed (neither side has a reference).")
    rows = {side: ladder[side] for side in SIDES}
    output = pair.output
    dtype = output.dtype_a if output is not None and not output.dtypes_differ else "each side's output dtype"
    if all(row is not None for row in rows.values()) and rows["a"].compared == rows["b"].compared:
        counts = (
            f"a {rows['a'].equal_to_rounded_reference} vs b {rows['b'].equal_to_rounded_reference} "
            f"of {rows['a'].compared} elements"
        )
    else:
        counts = ", ".join(
            f"{side} {row.equal_to_rounded_reference} of {row.compared}" if row is not None else f"{side}: no reference"
            for side, row in rows.items()
        )
    numbers = {side: None if row is None else row.equal_to_rounded_reference for side, row in rows.items()}
    numbers.update({f"compared{side.upper()}": None if row is None else row.compared for side, row in rows.items()})
    return finding("rounded", f"Equal to the primary reference rounded to {dtype}: {counts}.", **numbers)


def and_list(names: Sequence[str]) -> str:
    """Names as prose: a; a and b; a, b and c."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def emulations_finding(pair: Pair) -> Finding:
    """Per side, the emulations that reproduce it bit for bit, else the one with the most bit-equal elements."""
    emulation = pair.emulation
    question = "Which emulation reproduces each side"
    if emulation is None:
        return finding("emulations", f"{question}: not computed (no emulation was requested for this pair).")
    if emulation.rows is None:
        matrix = f"{question}: no emulation x side matrix ({emulation.reason})."
        return finding("emulations", matrix, reason=emulation.reason)
    parts, numbers = [], {}
    for side in SIDES:
        found = reproducing([getattr(row, side) for row in emulation.rows])
        if found is None:
            parts.append(f"side {side}: no emulation has numbers")
            continue
        ids, bit_equal, compared = found
        parts.append(
            f"side {side}: {and_list(ids)}, bit for bit ({compared} of {compared})"
            if bit_equal == compared
            else f"side {side}: none bit for bit; the nearest is {ids[0]} ({bit_equal} of {compared})"
        )
        numbers[side] = {"ids": ids, "bitEqual": bit_equal, "compared": compared}
    own = " (each side against the emulations of its own inputs)" if emulation.emulated_on == EACH_SIDE_INPUTS else ""
    return finding("emulations", f"{question}{own}: " + "; ".join(parts) + ".", **numbers)


def inputs_finding(pair: Pair) -> Finding:
    """The input identity, naming the tensors that differ."""
    if pair.inputs is None:
        return finding("inputs", "Inputs not compared element-wise (a side was refused or the shapes differ).")
    if pair.inputs.identical:
        return finding("inputs", "Inputs: all five tensors byte-identical.", identical=True)
    differing = {name: (t.mismatched, t.compared) for name, t in pair.inputs.tensors.items() if not t.identical}
    listed = ", ".join(f"{name} ({n} of {m} elements)" for name, (n, m) in differing.items())
    counts = {name: n for name, (n, _) in differing.items()}
    text = f"Inputs differ: {listed}. Output differences mix input and arithmetic."
    return finding("inputs", text, identical=False, differing=counts)


def output_sentence(pair: Pair) -> str:
    """The incident sentence: N of M output elements differ, and the heads carrying them."""
    output = pair.output
    if output is None:
        return "Outputs not compared element-wise."
    if output.bits is None:
        return (
            f"The output dtypes differ ({output.dtype_a} vs {output.dtype_b}): the {output.compared} output "
            "elements are compared by value only."
        )
    heads = [f"{h} ({n})" for h, n in enumerate(output.bits.per_head) if n]
    return f"{output.bits.mismatched} of {output.compared} output elements differ ({output.dtype_a} bit patterns)" + (
        f", in query heads (count): {', '.join(heads)}." if heads else "."
    )


def output_finding(pair: Pair) -> Finding:
    """The output elements that differ, the largest |a - b| and the largest ULP distance, each at its element."""
    output = pair.output
    text = output_sentence(pair)
    if output is None:
        return finding("output", text)
    difference = output.difference
    numbers: dict[str, Any] = {"mismatched": None if output.bits is None else output.bits.mismatched}
    numbers["compared"] = output.compared
    where = []
    if difference.global_metrics.linf:
        at = linf_at(difference, difference.global_metrics)
        where.append(f"the largest |a - b| is {short_number(difference.global_metrics.linf)}{at_text(at)}")
        numbers.update(linf=difference.global_metrics.linf, linfAt=at)
    if output.ulp is not None and output.ulp.max is not None and output.ulp.max > 0:
        at, said, caveat = ulp_caveat(output.ulp, difference, ("a", "b"), output.dtype_a)
        where.append(f"the largest ULP distance is {output.ulp.max}{at_text(at)}{f' ({said})' if said else ''}")
        numbers.update(ulpMax=output.ulp.max, ulpMaxAt=at, **{f"ulpMax{key}": value for key, value in caveat.items()})
    if where and (output.bits is None or output.bits.mismatched):
        text += " " + "; ".join(where)[0].upper() + "; ".join(where)[1:] + "."
    return finding("output", text, **numbers)


def errors_finding(pair: Pair) -> Finding | None:
    """Each side's largest |output - primary reference| at its element (None when neither side has one)."""
    parts, numbers = [], {}
    for side in SIDES:
        numerics = pair.side(side).numerics
        found = None if numerics is None else largest_error_finding(numerics)
        if found is None:
            continue
        parts.append(f"|{side} - ref| {short_number(found.numbers['linf'])}{at_text(found.numbers['linfAt'])}")
        numbers[side] = dict(found.numbers)
    if not parts:
        return None
    text = "Largest error against each side's own primary reference: " + "; ".join(parts) + "."
    return finding("errors", text, **numbers)


def tokens_finding(pair: Pair) -> Finding:
    tokens = pair.tokens
    if tokens is None:
        return finding("tokens", "Tokens not established (a side was refused).")
    return finding(
        "tokens",
        f"Target tokens {'differ' if tokens.differ else 'equal'}: "
        f"a {short_number(tokens.target_a)}, b {short_number(tokens.target_b)} "
        f"(seed {short_number(tokens.seed_token)}).",
        targetA=tokens.target_a,
        targetB=tokens.target_b,
        seed=tokens.seed_token,
    )


def pair_findings(pair: Pair) -> tuple[Finding, ...]:
    """The pair's findings in reading order: the deciding facts (DECIDING) first, then what and where."""
    if pair.refusals:
        sides = sorted({r.side for r in pair.refusals})
        text = f"Side {' and '.join(sides)} refused at admission: nothing is compared."
        return (finding("refused", text, sides=sides),)
    found = [
        nearer_finding(pair),
        rounded_finding(pair),
        emulations_finding(pair),
        inputs_finding(pair),
        output_finding(pair),
        errors_finding(pair),
        tokens_finding(pair),
    ]
    return tuple(f for f in found if f is not None)
