"""The `explorer` command line (analyze, compare, replay, report, samples, triage, campaign).

Renders the report dict and imports the UI only for `report`.
"""

from __future__ import annotations

from explorer.foundations.parallel import single_threaded_blas
from explorer.packet.admission import ReadAhead

single_threaded_blas()  # before numpy loads, for callers of main() too

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import explorer  # noqa: E402
from explorer.analysis.memory import MEMORY_BOUND_EXCEEDED  # noqa: E402
from explorer.foundations.bounded import clip  # noqa: E402
from explorer.foundations.formatting import at_text, short_number  # noqa: E402

EXIT_ANALYZED = 0
EXIT_DONE = 0  # help, version, samples written
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_REFUSED = 4
EXIT_BY_STATUS = {"analyzed": EXIT_ANALYZED, "inconclusive": EXIT_INCONCLUSIVE, "refused": EXIT_REFUSED}

JSON_INDENT = 2
HEX_WIDTH = 8


class UsageError(Exception):
    """A problem with the command line itself (exit status 2)."""


def terminal_columns(fallback: int = 80) -> int:
    """The columns shutil.get_terminal_size() reports: $COLUMNS, else the terminal on stdout's, else `fallback`."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = fallback
    return columns or fallback


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter at the width argparse itself picks, read without importing shutil: argparse makes
    a formatter for every argument added, and the first one imported shutil with bz2 and lzma (2.7 ms of every
    command)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    """argparse's parser with HelpFormatter by default; the subcommands' parsers are made of this class too."""

    def __init__(self, *args, formatter_class: type[argparse.HelpFormatter] = HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


# ---------------------------------------------------------------- human summary


def _printable(line: str) -> str:
    """`line` with every non-printable character (terminal escapes, newlines from packet text) escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in line)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    return [
        "  " + "  ".join(str(cell).rjust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in (header, *rows)
    ]


def _metric_cells(block: dict) -> list[str]:
    return [
        short_number(block["linf"]),
        short_number(block["rmse"]),
        short_number(block["relativeL2"]),
        block["undefinedReason"] or "",
    ]


def _identity_lines(identity: dict | None) -> list[str]:
    if identity is None:
        return ["Identity: not established"]
    lines = ["Identity (declared, not authenticated):"]
    lines += [f"  {key}: {identity[key]}" for key in ("modelID", "artifactSHA256", "inputSHA256", "backend")]
    return lines


def _selection_lines(report: dict) -> list[str]:
    lines = []
    selection, geometry, sample = report["selection"], report["geometry"], report["sample"]
    if geometry is not None:
        lines.append(
            f"Geometry: QH {geometry['queryHeads']}, KVH {geometry['kvHeads']} "
            f"(group {geometry['groupSize']}), D {geometry['headDim']}, T {geometry['tokens']}"
        )
    if selection is not None:
        lines.append(
            f"Selection: request {selection['requestID']}, output index {selection['outputIndex']}, "
            f"{selection['phase']}, layer {selection['modelLayerIndex']} "
            f"(storage {selection['storageLayerIndex']}), offset {selection['offsetBefore']} -> "
            f"{selection['offsetAfter']}, scale {short_number(selection['scale'])} "
            f"(0x{selection['scaleBits']:0{HEX_WIDTH}X}), dispatch {selection['dispatch']}, "
            f"kernel output {selection['kernelOutputDType']}"
        )
    if sample is not None:
        lines.append(
            f"Sample: {sample['sampleOutcome']}, forward succeeded {json.dumps(sample['forwardSucceeded'])}, "
            f"tokens {sample['seedToken']} -> {sample['targetToken']}, "
            f"selected forwards {sample['selectedForwards']}"
        )
    return lines


def _tensor_lines(report: dict) -> list[str]:
    lines = []
    tensors = report["tensors"]
    if tensors is not None:
        rows = [
            [
                name,
                facts["dtype"],
                "x".join(str(n) for n in facts["shape"]),
                str(facts["nonfinite"]["nan"]),
                str(facts["nonfinite"]["signalingNan"]),
                str(facts["nonfinite"]["positiveInfinity"]),
                str(facts["nonfinite"]["negativeInfinity"]),
            ]
            for name, facts in tensors.items()
        ]
        lines += ["Tensors:", *_table(["tensor", "dtype", "shape", "NaN", "sNaN", "+inf", "-inf"], rows)]
    last_row = report["lastRow"]
    if last_row is not None:
        for part in ("keys", "values"):
            facts = last_row[part]
            flips = facts["bitFlips"]
            lines.append(
                f"Last row {part}: {facts['mismatched']} of {facts['compared']} elements differ "
                f"(bit flips: sign {flips['sign']}, exponent {flips['exponent']}, "
                f"mantissa {flips['mantissa']})"
            )
    return lines


def _ulp_line(block: dict) -> str:
    ulp = block["ulp"]
    return (
        f"{block['label']}: ULP max {short_number(ulp['max'])}{at_text(ulp['maxAt'])}, "
        f"p99 {short_number(ulp['p99'])}, nonfinite pairs {ulp['nonfinitePairs']}"
    )


def _largest_error_line(primary: dict) -> list[str]:
    """The largest |output - primary reference| and its element (over the eligible heads when only some are)."""
    block = primary["global"] if primary["eligibleGlobal"] is None else primary["eligibleGlobal"]
    if block["linf"] is None:
        return []
    over = "" if primary["eligibleGlobal"] is None else " (eligible heads)"
    return [f"Largest |output - primary reference|{over}: {short_number(block['linf'])}{at_text(block['linfAt'])}"]


def _reference_lines(report: dict) -> list[str]:
    reference = report["reference"]
    if reference is None:
        return ["Reference: not computed"]
    primary, rounded = reference["primary"], reference["roundedToOutputDType"]
    scores = (report.get("score") or {}).get("perHead") or [None] * len(primary["perHead"])
    header = ["head", "kv", "score", "linf", "rmse", "relativeL2", "undefined"]
    rows = [
        [str(head["queryHead"]), str(head["kvHead"]), short_number(score), *_metric_cells(head)]
        for head, score in zip(primary["perHead"], scores, strict=True)
    ]
    rows.append(
        [
            "all",
            "",
            short_number(report["score"]["value"]) if report.get("score") else "-",
            *_metric_cells(primary["global"]),
        ]
    )
    if primary["eligibleGlobal"] is not None:
        rows.append(["eligible", "", "", *_metric_cells(primary["eligibleGlobal"])])
    if not rounded["identity"]:
        header.append(f"linf vs {rounded['dtype']}-rounded ref")
        cells = [short_number(block["linf"]) for block in (*rounded["perHead"], rounded["global"])]
        # the rounded block has no eligible-heads aggregate: that row, when present, gets an empty cell
        for row, cell in zip(rows, cells + [""] * (len(rows) - len(cells)), strict=True):
            row.append(cell)
    lines = [f"Reference: {primary['label']}", *_table(header, rows), *_largest_error_line(primary), _ulp_line(rounded)]
    if reference["roundedToKernelOutputDType"] is not None:
        lines.append(_ulp_line(reference["roundedToKernelOutputDType"]))
    return lines


def _emulation_lines(report: dict) -> list[str]:
    from explorer.views.packet.emulation_tables import emulation_table

    if report["emulationsRequested"] is None:
        return []
    if report["emulations"] is None:
        return [
            f"Emulations requested ({len(report['emulationsRequested'])}): not computed, "
            "no reference exists for this packet"
        ]
    decisive = report["emulationDecisive"]
    return [
        "Kernel emulations (counterfactuals, not the reference), ordered by the decisive elements "
        f"(where they disagree: {'none computed' if decisive is None else decisive['global']}):",
        *_table(*emulation_table(report["emulations"], decisive, report["emulationBaseline"])),
    ]


def _builds_lines(report: dict) -> list[str]:
    """Which build wrote the packet (`--emulate builds` or the sweep; emulation-v4): its sentence leads."""
    from explorer.analysis.emulation.attribution import report_sentence

    sentence = report_sentence(report)
    return [] if sentence is None else [f"Builds: {sentence}"]


def _score_lines(report: dict) -> list[str]:
    """The score line: the packet score (error / allowance) and its head, and the heads not compared."""
    score = report.get("score")
    if score is None:
        return []
    per_head = score["perHead"]
    head = "" if score["worstHead"] is None else f" (query head {score['worstHead']})"
    missing = (
        f"; {score['headsNotCompared']} of {len(per_head)} heads not compared" if score["headsNotCompared"] else ""
    )
    return [f"Score (error / allowance, docs/report.md): {short_number(score['value'])}{head}{missing}"]


def _missing_packet(report: dict) -> str | None:
    """The one line for a packet path with nothing there (path_missing of the path itself), else None."""
    refusals = report["refusals"]
    if len(refusals) == 1 and refusals[0]["code"] == "path_missing" and refusals[0]["field"] is None:
        return f"{refusals[0]['message']} (path_missing)"
    return None


def summary(report: dict) -> str:
    """The human summary of a report dict (docs/report.md, The report's keys), most telling first: status, score and the
    per-head table, then the packet's identity; one line when there is no packet at all."""
    if (line := _missing_packet(report)) is not None:
        return _printable(line) + "\n"
    lines = [f"Status: {report['status']}", *_builds_lines(report), *_score_lines(report)]
    if report["refusals"]:
        lines.append(f"Refusals ({len(report['refusals'])}):")
        lines += [
            f"  {p['code']}  {p['field'] if p['field'] is not None else '(packet.json)'}  {p['message']}"
            for p in report["refusals"]
        ]
        lines.append("Nothing numeric was computed: the packet cannot be trusted.")
    if report["inconclusiveReasons"]:
        lines.append(f"Inconclusive reasons ({len(report['inconclusiveReasons'])}):")
        lines += [f"  {r['code']}  {r['message']}" for r in report["inconclusiveReasons"]]
    if report["status"] != "refused":
        lines += _reference_lines(report) + _emulation_lines(report)
    lines.append(f"Packet: {report['packet']['path']}")
    if report["status"] != "refused":
        lines += _identity_lines(report["identity"]) + _selection_lines(report) + _tensor_lines(report)
    lines.append("Limitations:")
    lines += [f"  - {text}" for text in report["limitations"]]
    return "".join(_printable(line) + "\n" for line in lines)


# ---------------------------------------------------------------- commands


def element_lines(analysis, text: str) -> list[str]:
    """The --element section of the summary: every field of the element record, values exact (repr)."""
    from explorer.analysis.element import parse_index

    head, channel = parse_index(text)
    try:
        record = analysis.element(head, channel)
    except ValueError as error:
        return ["", f"Element {text}: not available: {error}"]
    except IndexError as error:
        raise UsageError(f"--element {text}: {error}") from None
    fields = record.fields()
    width = max(len(label) for label, _ in fields)
    return [
        "",
        f"Element {record.head},{record.channel} (flat index {record.flat_index}):",
        *(f"  {label.ljust(width)}  {_exact(value)}" for label, value in fields),
    ]


def _exact(value: Any) -> str:
    """An element field as JSON would print it: floats in full (repr), None as null, booleans lower-case."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def _check_output(output: str | None) -> None:
    """A usage error when --output names something that exists (it is never overwritten)."""
    if output is not None and os.path.lexists(output):
        raise UsageError(f"--output {clip(output)} already exists; it is never overwritten")


def _deliver(args: argparse.Namespace, report: dict, summary_text: Callable[[], str]) -> None:
    """The JSON report to --output and on stdout with --json, else the text summary: the indented JSON (Python's
    slow pure encoder) is made only when one of them asks for it."""
    wanted = args.json or args.output is not None
    text = json.dumps(report, allow_nan=False, indent=JSON_INDENT) + "\n" if wanted else ""
    _write_output(args.output, text)
    _emit(text if args.json else summary_text())


def _write_output(output: str | None, text: str) -> None:
    """Write `text` to a new --output file, whole or not at all (never overwritten)."""
    if output is not None:
        from explorer.foundations.safeio import write_new  # only a line with --output loads it

        try:
            write_new(output, text)
        except FileExistsError:
            raise UsageError(f"--output {clip(output)} already exists; it is never overwritten") from None
        except OSError as error:
            raise UsageError(f"cannot write --output {clip(output)}: {_reason(error)}") from None


def _reason(error: OSError) -> str:
    """An OSError's own words (strerror), else its text, bounded."""
    return error.strerror or clip(str(error))


def _check_emulate(emulate: list[str] | None) -> None:
    """A usage error for an unknown kernel, parameter or value, before any packet is read."""
    if emulate is not None:
        from explorer.analysis.emulation import EmulationIdError, expand

        try:
            expand(emulate)
        except EmulationIdError as error:
            raise UsageError(f"--emulate: {error}") from None


def _discard_stdout() -> None:
    """Point standard output at /dev/null, so that what is still buffered is dropped quietly at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _emit(text: str) -> None:
    """Write `text` to standard output now. A reader that went away (closed pipe) ends the output quietly,
    as Unix tools do; any other write error (a full device) is a usage error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    except OSError as error:
        _discard_stdout()
        raise UsageError(f"cannot write to standard output: {_reason(error)}") from None


def _check_element(element: str | None, as_json: bool) -> None:
    """A usage error for an --element that is not H,C or a flat index, or that comes with --json."""
    if element is not None:
        from explorer.analysis.element import parse_index

        if as_json:
            raise UsageError("--element prints into the summary; --json prints exactly the report")
        try:
            parse_index(element)
        except ValueError as error:
            raise UsageError(str(error)) from None


def _run_analyze(args: argparse.Namespace) -> int:
    _check_output(args.output)
    _check_emulate(args.emulate)
    _check_element(args.element, args.json)
    from explorer.analysis.analyze import analyze

    analysis = analyze(args.packet, emulate=args.emulate, admission=args.admitted)
    report = analysis.report()
    _deliver(
        args,
        report,
        lambda: (
            summary(report)
            + (
                ""
                if args.element is None
                else "".join(_printable(line) + "\n" for line in element_lines(analysis, args.element))
            )
        ),
    )
    return EXIT_BY_STATUS[report["status"]]


def _run_report(args: argparse.Namespace) -> int:
    # loads panel, holoviews, bokeh, playwright only here
    from explorer.export.pages import RenderError, choose_export_dir, write_report

    analysis = explorer.analyze(args.packet)
    out = choose_export_dir(args.out)
    try:
        paths = write_report(analysis, out)
    except RenderError as error:
        raise UsageError(f"{error}; nothing was written") from None
    except OSError as error:
        raise UsageError(
            f"cannot write the report into {clip(str(out))}: {_reason(error)}; nothing was written"
        ) from None
    _emit("".join(_printable(str(path)) + "\n" for path in (paths.html, paths.report, *paths.pngs, paths.findings)))
    return EXIT_BY_STATUS[analysis.status]


def _run_samples(args: argparse.Namespace) -> int:
    from explorer.samples import write_all

    try:
        written = write_all(args.out, full=args.full, campaign=args.campaign)
    except OSError as error:
        raise UsageError(f"cannot write samples into --out {clip(args.out)}: {_reason(error)}") from None
    _emit("".join(f"{path}\n" for path in written))
    return EXIT_DONE


# ---------------------------------------------------------------- explorer compare (docs/pairs.md)

EXIT_BY_PAIR_STATUS = {"compared": EXIT_ANALYZED, "inconclusive": EXIT_INCONCLUSIVE, "refused": EXIT_REFUSED}
SIDES = ("a", "b")


def _side_line(name: str, side: dict) -> str:
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


def _pair_input_lines(inputs: dict | None) -> list[str]:
    if inputs is None:
        return ["Inputs: not compared element-wise (the shapes differ)"]
    verdict = "byte-identical" if inputs["identical"] else "not byte-identical"
    rows = [
        [name, "yes" if t["identical"] else "no", f"{t['mismatched']} of {t['compared']}", _heads_with(t["perHead"])]
        for name, t in inputs["tensors"].items()
    ]
    return [
        f"Inputs: all five tensors {verdict}" if inputs["identical"] else f"Inputs: {verdict}",
        *_table(["tensor", "identical", "elements differing", "heads (count)"], rows),
    ]


def _pair_output_lines(output: dict | None) -> list[str]:
    if output is None:
        return ["Output: not compared"]
    dtypes = output["dtypes"]
    if output["outputDTypesDiffer"]:
        lines = [
            f"Output: dtypes differ (a {dtypes['a']}, b {dtypes['b']}): no bitwise comparison of the "
            f"{output['compared']} elements"
        ]
    else:
        flips = output["bitFlips"]
        ulp = output["ulp"]
        lines = [
            f"Output: {output['mismatched']} of {output['compared']} output elements differ ({dtypes['a']} bit "
            f"patterns), in query heads (count): {_heads_with(output['perHead'])}",
            f"  bit flips: sign {flips['sign']}, exponent {flips['exponent']}, mantissa {flips['mantissa']}; "
            f"ULP distance a vs b: max {short_number(ulp['max'])}{at_text(ulp['maxAt'])}, "
            f"p99 {short_number(ulp['p99'])}, "
            f"nonfinite pairs {ulp['nonfinitePairs']}",
            "  ULP histogram: " + ", ".join(f"[{low}, {high}] {count}" for low, high, count in ulp["histogram"]),
        ]
    difference = output["difference"]["global"]
    lines.append(
        "  a vs b (b as reference): linf {}{}, rmse {}, relativeL2 {}{}".format(
            short_number(difference["linf"]),
            at_text(difference["linfAt"]),
            *(short_number(difference[k]) for k in ("rmse", "relativeL2")),
            f" ({difference['undefinedReason']})" if difference["undefinedReason"] else "",
        )
    )
    return lines


def _pair_ladder_lines(report: dict) -> list[str]:
    ladder = report["ladder"]
    if ladder is None:
        return ["Ladder: no reference on either side"]
    header = [
        "side",
        "backend",
        "vs primary linf",
        "rmse",
        "vs rounded linf",
        "rmse",
        "vs FP64 linf",
        "rmse",
        "equal to rounded ref",
    ]
    rows = []
    for name in SIDES:
        row = ladder[name]
        if row is None:
            rows.append([name, short_number(report[name]["backend"]), *["-"] * 7])
            continue
        cells = [
            short_number(row[block][k])
            for block in ("primary", "roundedToOutputDType", "fp64OutputError")
            for k in ("linf", "rmse")
        ]
        rows.append(
            [
                name,
                short_number(report[name]["backend"]),
                *cells,
                f"{row['equalToRoundedReference']} of {row['compared']}",
            ]
        )
    where = [
        f"{name} {short_number(ladder[name]['primary']['linf'])}{at_text(ladder[name]['primary']['linfAt'])}"
        for name in SIDES
        if ladder[name] is not None and ladder[name]["primary"]["linf"] is not None
    ]
    return (
        ["Ladder (each side against its own references, global):"]
        + _table(header, rows)
        + (["  largest |side - primary reference|: " + "; ".join(where)] if where else [])
    )


def _pair_token_lines(report: dict) -> list[str]:
    tokens = report["tokens"]
    if tokens is None:
        return ["Tokens: not established"]
    target = tokens["targetToken"]
    differ = "differ" if tokens["targetTokensDiffer"] else "equal"
    return [
        f"Tokens: seed {short_number(tokens['seedToken'])} -> target a {short_number(target['a'])}, "
        f"target b {short_number(target['b'])} ({differ})"
    ]


def _pair_nearer_lines(report: dict) -> list[str]:
    nearer = report["nearerPrimaryReference"]
    if nearer is None:
        return [f"Nearer the primary reference: not computed ({report['nearerReason']})"]
    counts = nearer["global"]
    return [
        f"Nearer the primary reference (|a - ref| vs |b - ref|): a {counts['a']}, b {counts['b']}, "
        f"tie {counts['tie']}, undefined {counts['undefined']}"
    ]


def _pair_emulation_lines(report: dict) -> list[str]:
    """The emulation x side matrix: per side, the decisive, differing and all output elements bit-equal to each."""
    from explorer.views.packet.emulation_tables import pair_emulation_table

    if report["emulationsRequested"] is None:
        return []
    matrix = report["emulationMatrix"]
    if matrix is None:
        return [f"Kernel emulations: no emulation x side matrix ({report['emulationMatrixReason']})"]
    return [
        f"Kernel emulations (counterfactuals, not the reference; emulated on {matrix['emulatedOn']}): "
        "output elements bit-equal to each",
        *_table(*pair_emulation_table(matrix, report["emulationDiffering"], report["emulationDecisive"])),
    ]


def compare_summary(report: dict, findings: Sequence[str] = ()) -> str:
    """The human summary of a comparison report (docs/pairs.md), led by the pair's finding sentences
    (explorer.pair.findings: which side is off first)."""
    lines = ["Pair:", _side_line("a", report["a"]), _side_line("b", report["b"]), f"Status: {report['status']}"]
    if findings:
        lines.append("Findings:")
        lines += [f"  - {text}" for text in findings]
    if report["refusals"]:
        lines.append(f"Refusals ({len(report['refusals'])}):")
        lines += [
            f"  side {p['side']}: {p['code']}  {p['field'] if p['field'] is not None else '(packet.json)'}  "
            f"{p['message']}"
            for p in report["refusals"]
        ]
        lines.append("Nothing was compared: a refused packet cannot be trusted.")
    if report["inconclusiveReasons"]:
        lines.append(f"Inconclusive reasons ({len(report['inconclusiveReasons'])}):")
        lines += [f"  {r['code']}  {r['message']}" for r in report["inconclusiveReasons"]]
    if report["status"] != "refused":
        lines += _pair_input_lines(report["inputs"]) + _pair_output_lines(report["output"])
        lines += _pair_nearer_lines(report) + _pair_ladder_lines(report) + _pair_token_lines(report)
        lines += _pair_emulation_lines(report)
        if report["selectionDifferences"]:
            lines.append("Selection differences:")
            lines += _table(
                ["field", "a", "b"],
                [[d["field"], short_number(d["a"]), short_number(d["b"])] for d in report["selectionDifferences"]],
            )
    if report["notes"]:
        lines.append("Notes:")
        lines += [f"  - {text}" for text in report["notes"]]
    lines.append("Limitations:")
    lines += [f"  - {text}" for text in report["limitations"]]
    return "".join(_printable(line) + "\n" for line in lines)


def _run_compare(args: argparse.Namespace) -> int:
    from explorer.pair.findings import pair_findings
    from explorer.pair.model import SamePacketError

    _check_output(args.output)
    _check_emulate(args.emulate)
    try:
        pair = explorer.compare(args.a, args.b, emulate=args.emulate)
    except SamePacketError as error:
        raise UsageError(str(error)) from None
    report = pair.report()
    _deliver(args, report, lambda: compare_summary(report, [finding.text for finding in pair_findings(pair)]))
    return EXIT_BY_PAIR_STATUS[report["status"]]


def _add_report_options(command, report: str, emulate_help: str) -> None:
    """--json, --output and --emulate, shared by analyze and compare."""
    command.add_argument("--json", action="store_true", help=f"print the JSON {report} instead of a summary")
    command.add_argument("--output", metavar="FILE", help=f"also write the JSON {report} to FILE (never overwritten)")
    command.add_argument(
        "--emulate", action="append", metavar="ID", help=f"{emulate_help} (repeatable; quote ids with parentheses)"
    )


def _add_compare(commands) -> None:
    compare = commands.add_parser(
        "compare",
        help="compare two captures of one selection (e.g. the paged and the contiguous backend)",
        description="Exit status: 0 compared, 3 inconclusive, 4 refused (either side), 2 usage error (also: A and "
        "B are the same packet.json), 1 internal error.",
    )
    compare.add_argument("a", metavar="A", help="side a: a packet directory or its packet.json")
    compare.add_argument("b", metavar="B", help="side b: a packet directory or its packet.json")
    _add_report_options(
        compare,
        "comparison report",
        "also run kernel arithmetic emulations and report the "
        "emulation x side matrix: 'default', 'sweep' or an id as for "
        "analyze",
    )
    compare.set_defaults(run=_run_compare)


ROOT_SHOWN = 200  # characters of a ROOT argument echoed in a message


def _run_replay(args: argparse.Namespace) -> int:
    from explorer.replay.model import AmbiguousPacketError
    from explorer.replay.text import summary_lines

    _check_output(args.output)
    _check_emulate(args.emulate)
    try:
        report = explorer.replay(
            args.run_directory, packet=args.packet, partner=args.partner, emulate=args.emulate
        ).report()
    except AmbiguousPacketError as error:
        raise UsageError(str(error)) from None
    _deliver(args, report, lambda: "".join(_printable(line) + "\n" for line in summary_lines(report)))
    return EXIT_BY_STATUS[report["status"]]


def _add_replay(commands) -> None:
    replay = commands.add_parser(
        "replay",
        help="read an operator replay run against its packet: every arm's output against every capture",
        description="Exit status: 0 analyzed, 3 inconclusive, 4 refused, 2 usage error (also: two packets beside "
        "RUN match its packetSHA256), 1 internal error.",
    )
    replay.add_argument(
        "run_directory", metavar="RUN", help="the replay tool's run directory (input.json, ARM/result.json, ...)"
    )
    replay.add_argument(
        "--packet",
        metavar="PACKET",
        help="the source packet (default: the packet beside RUN whose packet.json hashes to its packetSHA256)",
    )
    replay.add_argument(
        "--partner",
        metavar="PACKET",
        help="a second capture of the same selection (e.g. the other backend), compared with every arm",
    )
    _add_report_options(
        replay,
        "replay report",
        "also run kernel arithmetic emulations on the packet and score "
        "each arm's output against them: 'default' or an id as for analyze",
    )
    replay.set_defaults(run=_run_replay)


def _checked_root(args: argparse.Namespace):
    """ROOT resolved, after the usage checks of ROOT, --jobs, --timeout and --scheduler (triage and campaign)."""
    from pathlib import Path

    shown = _printable(args.root[:ROOT_SHOWN]) + ("..." if len(args.root) > ROOT_SHOWN else "")
    try:
        root = Path(args.root).resolve()
        is_directory = root.is_dir()
    except (OSError, ValueError, RuntimeError) as error:  # too long, a NUL byte, a link loop
        raise UsageError(f"ROOT {shown}: {getattr(error, 'strerror', None) or error}") from None
    if not is_directory:
        raise UsageError(f"ROOT {shown} is not a directory")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: at least 1")
    if args.timeout is not None and not 0 < args.timeout < float("inf"):
        raise UsageError(f"--timeout {args.timeout}: a positive number of seconds")
    if args.scheduler is not None:
        _check_scheduler(args.scheduler)
    return root


def _run_triage(args: argparse.Namespace) -> int:
    from explorer.catalog.triage import Sink, run
    from explorer.catalog.workers import default_jobs

    root = _checked_root(args)
    table, sink = run(
        root,
        jobs=args.jobs or default_jobs(),
        as_json=args.json,
        out=sys.stdout,
        err=sys.stderr,
        timeout=args.timeout,
        scheduler=args.scheduler,
    )
    table_sink = Sink(sys.stderr) if args.json else sink
    table_sink.write("".join(_printable(line) + "\n" for line in table.splitlines()))
    error = sink.error or table_sink.error
    if error is not None:
        _discard_stdout()
        raise UsageError(f"cannot write to standard output: {error.strerror or error}")
    if not sink.open:  # the reader went away: what is still buffered is dropped quietly
        _discard_stdout()
    return EXIT_DONE


def _check_scheduler(scheduler: str) -> None:
    """A usage error for a --scheduler that is malformed or cannot be used (Dask missing, local:N out of range)."""
    try:
        from explorer.catalog.cluster import local_workers
    except ImportError as error:
        raise UsageError(f"--scheduler needs Dask: pip install -e '.[cluster]' ({error})") from None
    try:
        local_workers(scheduler)
    except ValueError as error:
        raise UsageError(f"--scheduler: {error}") from None


def _add_analyze(commands) -> None:
    analyze = commands.add_parser(
        "analyze",
        help="admit and analyze one packet",
        description="Exit status: 0 analyzed, 3 inconclusive, 4 refused, 2 usage error, 1 internal error.",
    )
    analyze.add_argument("packet", metavar="PACKET", help="a packet directory or its packet.json")
    _add_report_options(
        analyze,
        "report",
        "also run kernel arithmetic emulations: 'default' (the default set), 'builds' (which MLX build wrote it), "
        "'sweep' (every launch rule and hypothesis, a few seconds) or an id such "
        "as 'mlx_two_pass(partialDType=float32)'",
    )
    analyze.add_argument(
        "--element",
        metavar="H,C",
        help="also print every number about output element H,C (query head, channel) or N "
        "(flat index over [QH, D]); not with --json",
    )
    analyze.set_defaults(run=_run_analyze)


def _add_report(commands) -> None:
    report = commands.add_parser(
        "report",
        help="write a standalone HTML page, the JSON report and one PNG per view",
        description="Writes <name>.html (every view, opens offline), <name>.report.json and <name>-<view>.png "
        "into DIR, all of them or none; existing files are never overwritten. PNGs are rendered by "
        "/usr/bin/chromium (Debian package chromium). Exit status as for analyze; 2 also when chromium "
        "is missing or the files cannot be written (then nothing is written).",
    )
    report.add_argument("packet", metavar="PACKET", help="a packet directory or its packet.json")
    report.add_argument(
        "--out",
        metavar="DIR",
        help="directory to write into (created if needed; default $EXPLORER_EXPORT_DIR or ./exports, as the app)",
    )
    report.set_defaults(run=_run_report)


def _add_triage(commands) -> None:
    triage = commands.add_parser(
        "triage",
        help="summarize every packet under a root in parallel: statuses, ratios, pairs",
        description="Every directory holding packet.json one or two levels below ROOT, analyzed in worker "
        "processes. Exit status 0 when it ran, whatever the packets' statuses; 2 usage error.",
    )
    triage.add_argument("root", metavar="ROOT", help="the directory to search for packets")
    triage.add_argument(
        "--json", action="store_true", help="one JSON line per packet on stdout (the summary table goes to stderr)"
    )
    _add_run_options(triage)
    triage.set_defaults(run=_run_triage)


def _add_run_options(command) -> None:
    """--jobs, --timeout and --scheduler, shared by triage and campaign."""
    from explorer.catalog.limits import DEFAULT_TIMEOUT_S, MAX_JOBS  # only a triage line (or help) loads them

    command.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help=f"worker processes (default: all cores; at most one per packet and {MAX_JOBS})",
    )
    command.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds one packet may take before its worker is ended and the packet reported as "
        f"error, code timeout (default {DEFAULT_TIMEOUT_S:g})",
    )
    command.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster at ADDRESS (tcp://host:8786), or 'local:N' for a local cluster "
        "of N worker processes; needs pip install -e '.[cluster]' and paths the workers can read",
    )


def _add_samples(commands) -> None:
    samples = commands.add_parser("samples", help="write the curated sample packets")
    samples.add_argument("--out", required=True, metavar="DIR", help="directory to write the samples into")
    samples.add_argument(
        "--full",
        action="store_true",
        help="also write the full-size Qwen3.6 packet (QH16/KVH2/D256/T5585, about 11.4 MB)",
    )
    samples.add_argument(
        "--campaign",
        action="store_true",
        help="also write a synthetic capture campaign (2 backends x 4 layers x 3 steps, QH16/KVH2/D64)",
    )
    samples.set_defaults(run=_run_samples)


# ---------------------------------------------------------------- explorer campaign (docs/campaigns.md)


def _run_campaign(args: argparse.Namespace) -> int:
    import json
    import time

    from explorer.campaigns.report import build_campaign_report, campaign_text
    from explorer.campaigns.run import run_campaigns
    from explorer.catalog.triage import Progress, Sink, engine_text
    from explorer.catalog.workers import default_jobs

    root = _checked_root(args)
    _check_emulate(args.emulate)
    backends = None
    if args.backends is not None:
        backends = tuple(part.strip() for part in args.backends.split(","))
        if len(backends) != 2 or not all(backends) or backends[0] == backends[1]:
            raise UsageError(f"--backends {clip(args.backends)}: two different backends, A,B")
    jobs = args.jobs or default_jobs()
    started = time.perf_counter()
    run = run_campaigns(
        root,
        jobs=jobs,
        scheduler=args.scheduler,
        timeout=args.timeout,
        request=args.request,
        backends=backends,
        emulate=None if args.emulate is None else tuple(args.emulate),
        progress=lambda total: Progress(total, sys.stderr).step,
    )
    report = build_campaign_report(run)
    sink = Sink(sys.stdout)
    if args.json:
        sink.write(json.dumps(report, allow_nan=False) + "\n")
    else:
        lines = campaign_text(report)
        lines.append(f"({engine_text(jobs, run.packets, args.scheduler)}, {time.perf_counter() - started:.2f} s)")
        sink.write("".join(_printable(line) + "\n" for line in lines))
    if sink.error is not None:
        _discard_stdout()
        raise UsageError(f"cannot write to standard output: {sink.error.strerror or sink.error}")
    if not sink.open:
        _discard_stdout()
    return EXIT_DONE


def _add_campaign(commands) -> None:
    campaign = commands.add_parser(
        "campaign",
        help="grid one request captured on two backends at many layers and steps; name where it diverges",
        description="Every packet one or two levels below ROOT, grouped by model, artifact, input and request; each "
        "campaign's cells (steps x layers) get a state and the first kernel-originated difference is "
        "named (docs/campaigns.md). Exit status 0 when it ran, whatever the states; 2 usage error.",
    )
    campaign.add_argument("root", metavar="ROOT", help="the directory to search for packets")
    campaign.add_argument(
        "--json",
        action="store_true",
        help="print the JSON report (attention-explorer.campaign.v1) instead of the grids",
    )
    campaign.add_argument("--request", metavar="ID", help="only the campaign(s) of this requestID")
    campaign.add_argument(
        "--backends", metavar="A,B", help="the two backends to compare (default: the two with the most packets)"
    )
    campaign.add_argument(
        "--emulate",
        action="append",
        metavar="ID",
        help="run kernel emulations on each campaign's first outputs-differ cell: 'default' or an "
        "id as for analyze (repeatable)",
    )
    _add_run_options(campaign)
    campaign.set_defaults(run=_run_campaign)


# The subcommands in the order `explorer --help` lists them.
COMMANDS = {
    "analyze": _add_analyze,
    "report": _add_report,
    "triage": _add_triage,
    "samples": _add_samples,
    "compare": _add_compare,
    "replay": _add_replay,
    "campaign": _add_campaign,
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `command` (one of COMMANDS), only that subcommand's.

    The parser of a command line naming its command holds that subcommand alone: building every
    subcommand costs about 10 ms of a process start (argparse formats each argument's help once as it is
    added). Its messages and help are the same; a line naming no known command gets the whole parser.
    """
    parser = Parser(prog="explorer", description="Admit and analyze attention packets.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {explorer.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if command is None or name == command:
            add(commands)
    return parser


def main(argv: Sequence[str] | None = None, *, ahead: ReadAhead | None = None) -> int:
    """Run the command line; returns the exit status. `ahead`: the packet being read ahead (explorer/launch.py)."""
    for stream in (sys.stdout, sys.stderr):  # a character the encoding lacks is escaped, never an exit 1
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")
    arguments = sys.argv[1:] if argv is None else list(argv)
    named = arguments[0] if arguments and arguments[0] in COMMANDS else None
    try:
        args = build_parser(named).parse_args(arguments)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_DONE
    args.admitted = ahead.admission_of(args.packet) if ahead is not None and args.command == "analyze" else None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # numeric warnings never reach the terminal
            warnings.simplefilter("ignore")
            return args.run(args)
    except UsageError as error:
        print(_printable(f"explorer: usage error: {error}"), file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:  # the environment, not the program: analyze itself reports memory_bound_exceeded
        print(
            f"explorer: out of memory ({MEMORY_BOUND_EXCEEDED}): the process cannot hold what this command "
            "needs; see docs/report.md, Memory",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except Exception as error:  # a programming error, never packet content
        print(_printable(f"explorer: internal error: {type(error).__name__}: {error}"), file=sys.stderr)
        return EXIT_INTERNAL
