"""The `explorer` command line (analyze, report, samples, triage); renders the report dict and imports the UI only for `report`."""

from __future__ import annotations

import os

# The reference's matrix products are about a millisecond each; on a busy 2-core
# machine a second BLAS thread costs far more than it saves. Set before numpy loads.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _variable in BLAS_THREAD_VARIABLES:
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from typing import Any, Sequence  # noqa: E402

import explorer  # noqa: E402

EXIT_ANALYZED = 0
EXIT_DONE = 0  # help, version, samples written
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_REFUSED = 4
EXIT_BY_STATUS = {"analyzed": EXIT_ANALYZED, "inconclusive": EXIT_INCONCLUSIVE, "refused": EXIT_REFUSED}

JSON_INDENT = 2
FLOAT_FORMAT = "{:.6g}"
HEX_WIDTH = 8


class UsageError(Exception):
    """A problem with the command line itself (exit status 2)."""


# ---------------------------------------------------------------- human summary


def _printable(line: str) -> str:
    """`line` with every non-printable character (terminal escapes, newlines from packet text) escaped."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in line)


def _number(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return FLOAT_FORMAT.format(value)
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    return ["  " + "  ".join(str(cell).rjust(width) for cell, width in zip(line, widths)).rstrip()
            for line in (header, *rows)]


def _metric_cells(block: dict) -> list[str]:
    return [_number(block["linf"]), _number(block["rmse"]), _number(block["relativeL2"]),
            block["undefinedReason"] or ""]


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
        lines.append(f"Geometry: QH {geometry['queryHeads']}, KVH {geometry['kvHeads']} "
                     f"(group {geometry['groupSize']}), D {geometry['headDim']}, T {geometry['tokens']}")
    if selection is not None:
        lines.append(f"Selection: request {selection['requestID']}, output index {selection['outputIndex']}, "
                     f"{selection['phase']}, layer {selection['modelLayerIndex']} "
                     f"(storage {selection['storageLayerIndex']}), offset {selection['offsetBefore']} -> "
                     f"{selection['offsetAfter']}, scale {_number(selection['scale'])} "
                     f"(0x{selection['scaleBits']:0{HEX_WIDTH}X}), dispatch {selection['dispatch']}, "
                     f"kernel output {selection['kernelOutputDType']}")
    if sample is not None:
        lines.append(f"Sample: {sample['sampleOutcome']}, forward succeeded {json.dumps(sample['forwardSucceeded'])}, "
                     f"tokens {sample['seedToken']} -> {sample['targetToken']}, "
                     f"selected forwards {sample['selectedForwards']}")
    return lines


def _tensor_lines(report: dict) -> list[str]:
    lines = []
    tensors = report["tensors"]
    if tensors is not None:
        rows = [[name, facts["dtype"], "x".join(str(n) for n in facts["shape"]),
                 str(facts["nonfinite"]["nan"]), str(facts["nonfinite"]["signalingNan"]),
                 str(facts["nonfinite"]["positiveInfinity"]), str(facts["nonfinite"]["negativeInfinity"])]
                for name, facts in tensors.items()]
        lines += ["Tensors:"] + _table(["tensor", "dtype", "shape", "NaN", "sNaN", "+inf", "-inf"], rows)
    last_row = report["lastRow"]
    if last_row is not None:
        for part in ("keys", "values"):
            facts = last_row[part]
            flips = facts["bitFlips"]
            lines.append(f"Last row {part}: {facts['mismatched']} of {facts['compared']} elements differ "
                         f"(bit flips: sign {flips['sign']}, exponent {flips['exponent']}, "
                         f"mantissa {flips['mantissa']})")
    return lines


def _ulp_line(block: dict) -> str:
    ulp = block["ulp"]
    return (f"{block['label']}: ULP max {_number(ulp['max'])}, p99 {_number(ulp['p99'])}, "
            f"nonfinite pairs {ulp['nonfinitePairs']}")


def _reference_lines(report: dict) -> list[str]:
    reference = report["reference"]
    if reference is None:
        return ["Reference: not computed"]
    primary, rounded = reference["primary"], reference["roundedToOutputDType"]
    header = ["head", "kv", "linf", "rmse", "relativeL2", "undefined"]
    rows = [[str(head["queryHead"]), str(head["kvHead"]), *_metric_cells(head)] for head in primary["perHead"]]
    rows.append(["all", "", *_metric_cells(primary["global"])])
    if primary["eligibleGlobal"] is not None:
        rows.append(["eligible", "", *_metric_cells(primary["eligibleGlobal"])])
    if not rounded["identity"]:
        header.append(f"linf vs {rounded['dtype']}-rounded ref")
        cells = [_number(block["linf"]) for block in (*rounded["perHead"], rounded["global"])]
        for row, cell in zip(rows, cells + [""]):  # the rounded block has no eligible-heads aggregate
            row.append(cell)
    lines = [f"Reference: {primary['label']}"] + _table(header, rows) + [_ulp_line(rounded)]
    if reference["roundedToKernelOutputDType"] is not None:
        lines.append(_ulp_line(reference["roundedToKernelOutputDType"]))
    return lines


def summary(report: dict) -> str:
    """The human summary of a report dict (report-v1.md section 4)."""
    lines = [f"Packet: {report['packet']['path']}", f"Status: {report['status']}"]
    if report["refusals"]:
        lines.append(f"Refusals ({len(report['refusals'])}):")
        lines += [f"  {p['code']}  {p['field'] if p['field'] is not None else '(packet.json)'}  {p['message']}"
                  for p in report["refusals"]]
        lines.append("Nothing numeric was computed: the packet cannot be trusted.")
    if report["inconclusiveReasons"]:
        lines.append(f"Inconclusive reasons ({len(report['inconclusiveReasons'])}):")
        lines += [f"  {r['code']}  {r['message']}" for r in report["inconclusiveReasons"]]
    if report["status"] != "refused":
        lines += _identity_lines(report["identity"]) + _selection_lines(report) + _tensor_lines(report)
        lines += _reference_lines(report)
    lines.append("Limitations:")
    lines += [f"  - {text}" for text in report["limitations"]]
    return "".join(_printable(line) + "\n" for line in lines)


# ---------------------------------------------------------------- commands


def _run_analyze(args: argparse.Namespace) -> int:
    if args.output is not None and os.path.lexists(args.output):
        raise UsageError(f"--output {args.output} already exists; it is never overwritten")
    report = explorer.analyze(args.packet).report()
    text = json.dumps(report, allow_nan=False, indent=JSON_INDENT) + "\n"
    if args.output is not None:
        try:
            with open(args.output, "x", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as error:
            raise UsageError(f"cannot write --output {args.output}: {error.strerror or error}") from None
    sys.stdout.write(text if args.json else summary(report))
    return EXIT_BY_STATUS[report["status"]]


def _run_report(args: argparse.Namespace) -> int:
    from explorer.export import write_report  # loads panel, holoviews, bokeh and playwright only here

    analysis = explorer.analyze(args.packet)
    try:
        paths = write_report(analysis, args.out)
    except OSError as error:
        raise UsageError(f"cannot write the report into --out {args.out}: {error.strerror or error}") from None
    for path in (paths.html, paths.report, *paths.pngs):
        print(path)
    return EXIT_BY_STATUS[analysis.status]


def _run_samples(args: argparse.Namespace) -> int:
    from explorer.samples import write_samples

    try:
        written = write_samples(args.out, full=args.full)
    except OSError as error:
        raise UsageError(f"cannot write samples into --out {args.out}: {error.strerror or error}") from None
    for path in written:
        print(path)
    return EXIT_DONE


def _run_triage(args: argparse.Namespace) -> int:
    from pathlib import Path

    from explorer.triage import run
    from explorer.workers import default_jobs

    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"ROOT {args.root} is not a directory")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: at least 1")
    table = run(root.resolve(), jobs=args.jobs or default_jobs(), as_json=args.json)
    (sys.stderr if args.json else sys.stdout).write("".join(_printable(line) + "\n" for line in table.splitlines()))
    return EXIT_DONE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="explorer", description="Admit and analyze attention packets.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {explorer.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    analyze = commands.add_parser(
        "analyze", help="admit and analyze one packet",
        description="Exit status: 0 analyzed, 3 inconclusive, 4 refused, 2 usage error, 1 internal error.")
    analyze.add_argument("packet", metavar="PACKET", help="a packet directory or its packet.json")
    analyze.add_argument("--json", action="store_true", help="print the JSON report instead of a summary")
    analyze.add_argument("--output", metavar="FILE", help="also write the JSON report to FILE (never overwritten)")
    analyze.set_defaults(run=_run_analyze)

    report = commands.add_parser(
        "report", help="write a standalone HTML page, the JSON report and one PNG per view",
        description="Writes <name>.html (every view, opens offline), <name>.report.json and <name>-<view>.png "
                    "into DIR; existing files are never overwritten. PNGs are rendered by /usr/bin/chromium "
                    "(Debian package chromium). Exit status as for analyze.")
    report.add_argument("packet", metavar="PACKET", help="a packet directory or its packet.json")
    report.add_argument("--out", required=True, metavar="DIR", help="directory to write into (created if needed)")
    report.set_defaults(run=_run_report)

    triage = commands.add_parser(
        "triage", help="summarize every packet under a root in parallel: statuses, ratios, pairs",
        description="Every directory holding packet.json one or two levels below ROOT, analyzed in worker "
                    "processes. Exit status 0 when it ran, whatever the packets' statuses; 2 usage error.")
    triage.add_argument("root", metavar="ROOT", help="the directory to search for packets")
    triage.add_argument("--json", action="store_true",
                        help="one JSON line per packet on stdout (the summary table goes to stderr)")
    triage.add_argument("--jobs", type=int, metavar="N", help="worker processes (default: all cores)")
    triage.set_defaults(run=_run_triage)

    samples = commands.add_parser("samples", help="write the curated sample packets")
    samples.add_argument("--out", required=True, metavar="DIR", help="directory to write the samples into")
    samples.add_argument("--full", action="store_true",
                         help="also write the full-size Qwen3.6 packet (QH16/KVH2/D256/T5585, about 11.4 MB)")
    samples.set_defaults(run=_run_samples)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_DONE
    try:
        return args.run(args)
    except UsageError as error:
        print(_printable(f"explorer: usage error: {error}"), file=sys.stderr)
        return EXIT_USAGE
    except Exception as error:  # a programming error, never packet content
        print(_printable(f"explorer: internal error: {type(error).__name__}: {error}"), file=sys.stderr)
        return EXIT_INTERNAL
