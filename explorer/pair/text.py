"""The terminal summary of a comparison report (`explorer compare` without --json), findings first.

Pure text from the typed blocks (pair/typed.py); the emulation table's rows come from the caller (views draw it too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from explorer.analysis.text import listed, reasons_lines, refusal_line
from explorer.foundations.formatting import at_text, short_number, text_table
from explorer.pair.typed import Inputs, LadderRow, Output, PairReport, Side

SIDES = ("a", "b")
# The ladder's blocks (report key -> column label), each a linf and an rmse column.
LADDER_BLOCKS = {"primary": "primary", "roundedToOutputDType": "rounded", "fp64OutputError": "FP64"}
LADDER_HEADER = (
    "side",
    "backend",
    *(column for label in LADDER_BLOCKS.values() for column in (f"vs {label} linf", "rmse")),
    "equal to rounded ref",
)
PairEmulationTable = Callable[..., tuple[Sequence[str], Sequence[Sequence[str]]]]  # (matrix, differing, decisive)


def _side_line(name: str, side: Side) -> str:
    line = f"  {name}: {side['path']}  status {side['status']}"
    if side["status"] == "refused":
        return line + " (nothing in it is interpreted)"
    return (
        f"{line}, backend {short_number(side['backend'])}, dispatch {short_number(side['dispatch'])}, "
        f"output {short_number(side['outputDType'])}, kernel output {short_number(side['kernelOutputDType'])}"
    )


def _heads_with(per_head: list[int]) -> str:
    heads = [f"{head} ({count})" for head, count in enumerate(per_head) if count]
    return ", ".join(heads) if heads else "none"


def _input_lines(inputs: Inputs | None) -> list[str]:
    if inputs is None:
        return ["Inputs: not compared element-wise (the shapes differ)"]
    verdict = "byte-identical" if inputs["identical"] else "not byte-identical"
    rows = [
        [name, "yes" if t["identical"] else "no", f"{t['mismatched']} of {t['compared']}", _heads_with(t["perHead"])]
        for name, t in inputs["tensors"].items()
    ]
    return [
        f"Inputs: all five tensors {verdict}" if inputs["identical"] else f"Inputs: {verdict}",
        *text_table(["tensor", "identical", "elements differing", "heads (count)"], rows),
    ]


def _output_lines(output: Output | None) -> list[str]:
    if output is None:
        return ["Output: not compared"]
    dtypes = output["dtypes"]
    if output["outputDTypesDiffer"]:
        lines = [
            f"Output: dtypes differ (a {dtypes['a']}, b {dtypes['b']}): no bitwise comparison of the "
            f"{output['compared']} elements"
        ]
    else:
        flips, ulp = output["bitFlips"], output["ulp"]
        lines = [
            f"Output: {output['mismatched']} of {output['compared']} output elements differ ({dtypes['a']} bit "
            f"patterns), in query heads (count): {_heads_with(output['perHead'])}",
            f"  bit flips: sign {flips['sign']}, exponent {flips['exponent']}, mantissa {flips['mantissa']}; "
            f"ULP distance a vs b: max {short_number(ulp['max'])}{at_text(ulp['maxAt'])}, "
            f"p99 {short_number(ulp['p99'])}, nonfinite pairs {ulp['nonfinitePairs']}",
            "  ULP histogram: " + ", ".join(f"[{low}, {high}] {count}" for low, high, count in ulp["histogram"]),
        ]
    difference = output["difference"]["global"]
    linf, rmse, relative = (short_number(difference[k]) for k in ("linf", "rmse", "relativeL2"))
    undefined = f" ({difference['undefinedReason']})" if difference["undefinedReason"] else ""
    at = at_text(difference["linfAt"])
    lines.append(f"  a vs b (b as reference): linf {linf}{at}, rmse {rmse}, relativeL2 {relative}{undefined}")
    return lines


def _ladder_cells(row: LadderRow | None) -> list[str]:
    if row is None:
        return ["-"] * (len(LADDER_HEADER) - 2)
    cells = [short_number(row[block][k]) for block in LADDER_BLOCKS for k in ("linf", "rmse")]
    return [*cells, f"{row['equalToRoundedReference']} of {row['compared']}"]


def _ladder_lines(report: PairReport) -> list[str]:
    ladder = report["ladder"]
    if ladder is None:
        return ["Ladder: no reference on either side"]
    rows = [[name, short_number(report[name]["backend"]), *_ladder_cells(ladder[name])] for name in SIDES]
    where = [
        f"{name} {short_number(ladder[name]['primary']['linf'])}{at_text(ladder[name]['primary']['linfAt'])}"
        for name in SIDES
        if ladder[name] is not None and ladder[name]["primary"]["linf"] is not None
    ]
    return (
        ["Ladder (each side against its own references, global):"]
        + text_table(LADDER_HEADER, rows)
        + (["  largest |side - primary reference|: " + "; ".join(where)] if where else [])
    )


def _token_lines(report: PairReport) -> list[str]:
    tokens = report["tokens"]
    if tokens is None:
        return ["Tokens: not established"]
    target = tokens["targetToken"]
    differ = "differ" if tokens["targetTokensDiffer"] else "equal"
    return [
        f"Tokens: seed {short_number(tokens['seedToken'])} -> target a {short_number(target['a'])}, "
        f"target b {short_number(target['b'])} ({differ})"
    ]


def _nearer_lines(report: PairReport) -> list[str]:
    nearer = report["nearerPrimaryReference"]
    if nearer is None:
        return [f"Nearer the primary reference: not computed ({report['nearerReason']})"]
    counts = nearer["global"]
    return [
        f"Nearer the primary reference (|a - ref| vs |b - ref|): a {counts['a']}, b {counts['b']}, "
        f"tie {counts['tie']}, undefined {counts['undefined']}"
    ]


def _emulation_lines(report: PairReport, emulation_table: PairEmulationTable) -> list[str]:
    """The emulation x side matrix: per side, the decisive, differing and all output elements bit-equal to each."""
    if report["emulationsRequested"] is None:
        return []
    matrix = report["emulationMatrix"]
    if matrix is None:
        return [f"Kernel emulations: no emulation x side matrix ({report['emulationMatrixReason']})"]
    return [
        f"Kernel emulations (counterfactuals, not the reference; emulated on {matrix['emulatedOn']}): "
        "output elements bit-equal to each",
        *text_table(*emulation_table(matrix, report["emulationDiffering"], report["emulationDecisive"])),
    ]


def _compared_lines(report: PairReport, emulation_table: PairEmulationTable) -> list[str]:
    """What was compared: inputs, output, nearer, ladder, tokens, emulations and the selection differences."""
    lines = _input_lines(report["inputs"]) + _output_lines(report["output"])
    lines += _nearer_lines(report) + _ladder_lines(report) + _token_lines(report)
    lines += _emulation_lines(report, emulation_table)
    if report["selectionDifferences"]:
        lines.append("Selection differences:")
        lines += text_table(
            ["field", "a", "b"],
            [[d["field"], short_number(d["a"]), short_number(d["b"])] for d in report["selectionDifferences"]],
        )
    return lines


def summary_lines(report: PairReport, findings: Sequence[str], emulation_table: PairEmulationTable) -> list[str]:
    """The summary of a comparison report (docs/pairs.md), led by the pair's finding sentences (pair/findings.py: which
    side is off first). `emulation_table(matrix, differing, decisive)`: that table's header and rows."""
    lines = ["Pair:", _side_line("a", report["a"]), _side_line("b", report["b"]), f"Status: {report['status']}"]
    lines += listed("Findings", findings)
    if report["refusals"]:
        refusals = [f"side {p['side']}: {refusal_line(p)}" for p in report["refusals"]]
        lines += listed(f"Refusals ({len(refusals)})", refusals, "  ")
        lines.append("Nothing was compared: a refused packet cannot be trusted.")
    lines += reasons_lines(report["inconclusiveReasons"])
    if report["status"] != "refused":
        lines += _compared_lines(report, emulation_table)
    return lines + listed("Notes", report["notes"]) + listed("Limitations", report["limitations"])
