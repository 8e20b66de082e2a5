"""The `explorer` command line (analyze, compare, replay, report, samples, triage, campaign).

Parsing, routing and exit statuses; the text summaries live beside each report, the UI loads only for `report`.
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
from explorer.foundations.bounded import clip, shown_list, terminal_lines, terminal_text  # noqa: E402
from explorer.foundations.streams import Sink, discard_stdout, open_standard_streams  # noqa: E402

EXIT_ANALYZED = 0
EXIT_DONE = 0  # help, version, samples written
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_REFUSED = 4
EXIT_BY_STATUS = {"analyzed": EXIT_ANALYZED, "inconclusive": EXIT_INCONCLUSIVE, "refused": EXIT_REFUSED}

JSON_INDENT = 2
SCHEDULER_CONNECT_TIMEOUT_S = 5.0  # a --scheduler address that accepts no connection in this time is a usage error


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


# ---------------------------------------------------------------- output


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


def _emit(text: str) -> None:
    """Write `text` to standard output now, as every command writes (_settle)."""
    sink = Sink(sys.stdout)
    sink.write(text)
    _settle(sink)


def _settle(output: Sink, *others: Sink) -> None:
    """How every command ends its output: a reader that went away (closed pipe) ended it quietly, as Unix tools
    do; any other write error (a full device) on `output` or `others` is a usage error. Either way what is still
    buffered for standard output is dropped."""
    error = next((sink.error for sink in (output, *others) if sink.error is not None), None)
    if error is not None or not output.open:
        discard_stdout()
    if error is not None:
        raise UsageError(f"cannot write to standard output: {_reason(error)}")


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
    _deliver(args, report, lambda: _analysis_text(analysis, report, args.element))
    return EXIT_BY_STATUS[report["status"]]


def _analysis_text(analysis, report: dict, element: str | None) -> str:
    """The packet's summary, and with --element that element's record (a usage error when out of range)."""
    from explorer.analysis.element import parse_index
    from explorer.analysis.text import element_lines, element_unavailable_lines, summary_lines

    lines = summary_lines(report, _emulation_table)
    if element is not None:
        try:
            lines += element_lines(analysis.element(*parse_index(element)))
        except ValueError as error:
            lines += element_unavailable_lines(element, error)
        except IndexError as error:
            raise UsageError(f"--element {element}: {error}") from None
    return terminal_lines(lines)


def _emulation_table(*blocks):
    """The packet's emulation table (header, rows), loaded only for a report with emulations."""
    from explorer.views.packet.emulation_tables import emulation_table

    return emulation_table(*blocks)


def _pair_emulation_table(*blocks):
    """The pair's emulation x side table (header, rows), loaded only for a report with emulations."""
    from explorer.views.packet.emulation_tables import pair_emulation_table

    return pair_emulation_table(*blocks)


def _run_report(args: argparse.Namespace) -> int:
    """`explorer report`: export a packet, a pair (A B), a replay run or a campaign of a root (--campaign ID), the
    same files the app's Export writes; prints the paths written."""
    _check_emulate(args.emulate)
    if args.campaign is not None and len(args.paths) != 1:
        raise UsageError("--campaign ID exports one campaign of one ROOT")
    if len(args.paths) > 2:
        raise UsageError(f"{len(args.paths)} paths: a packet, a replay run, a ROOT with --campaign, or a pair A B")
    # loads panel, holoviews, bokeh, playwright only here
    from explorer.export.pages import RenderError, choose_export_dir

    out = choose_export_dir(args.out)
    try:
        paths, status = _export(args, out)
    except RenderError as error:
        raise UsageError(f"{error}; nothing was written") from None
    except OSError as error:
        raise UsageError(
            f"cannot write the report into {clip(str(out))}: {_reason(error)}; nothing was written"
        ) from None
    _emit(terminal_lines(str(path) for path in (paths.html, paths.report, *paths.pngs, paths.findings)))
    return status


def _export(args: argparse.Namespace, out) -> tuple[Any, int]:
    """Compute what `args` names and export it into `out` as the app does (with its PNGs): the paths and the exit
    status."""
    from explorer.export import pages

    if args.campaign is not None:
        return pages.export_campaign(_campaign_of(args), out, png=True), EXIT_DONE
    if len(args.paths) == 2:
        pair = _pair_of(*args.paths, args.emulate)
        return pages.export_pair(pair, out, png=True), EXIT_BY_PAIR_STATUS[pair.status]
    if _is_replay_run(args.paths[0]):
        run = _replay_of(args.paths[0], None, None, args.emulate)
        return pages.export_replay(run, out, png=True), EXIT_BY_STATUS[run.status]
    analysis = explorer.analyze(args.paths[0], emulate=args.emulate)
    return pages.write_report(analysis, out), EXIT_BY_STATUS[analysis.status]


def _is_replay_run(path: str) -> bool:
    """A directory holding the replay tool's input.json and no packet.json (docs/replay.md)."""
    from explorer.catalog.discovery import PACKET_FILE
    from explorer.replay.run import INPUT_JSON

    return os.path.isfile(os.path.join(path, INPUT_JSON)) and not os.path.exists(os.path.join(path, PACKET_FILE))


def _campaign_of(args: argparse.Namespace) -> dict:
    """The campaign `--campaign ID` of the report of every campaign under ROOT (a usage error naming the IDs found
    when none has that ID)."""
    from explorer.campaigns.report import build_campaign_report
    from explorer.campaigns.run import run_campaigns
    from explorer.catalog.limits import DEFAULT_TIMEOUT_S
    from explorer.catalog.workers import default_jobs

    root = _checked_directory(args.paths[0])
    run = run_campaigns(
        root,
        jobs=default_jobs(),
        scheduler=None,
        timeout=DEFAULT_TIMEOUT_S,
        request=None,
        backends=None,
        emulate=None if args.emulate is None else tuple(args.emulate),
        progress=lambda total: lambda: None,
    )
    campaigns = build_campaign_report(run)["campaigns"]
    found = next((campaign for campaign in campaigns if campaign["id"] == args.campaign), None)
    if found is None:
        ids = shown_list(campaign["id"] for campaign in campaigns)
        raise UsageError(f"--campaign {clip(args.campaign)}: no such campaign under ROOT (found {ids})")
    return found


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


def _pair_of(a: str, b: str, emulate: list[str] | None):
    """The pair A B (a usage error when both name one packet.json)."""
    from explorer.pair.model import SamePacketError

    try:
        return explorer.compare(a, b, emulate=emulate)
    except SamePacketError as error:
        raise UsageError(str(error)) from None


def _run_compare(args: argparse.Namespace) -> int:
    from explorer.pair.findings import pair_findings
    from explorer.pair.text import summary_lines

    _check_output(args.output)
    _check_emulate(args.emulate)
    pair = _pair_of(args.a, args.b, args.emulate)
    report = pair.report()
    findings = [finding.text for finding in pair_findings(pair)]
    _deliver(args, report, lambda: terminal_lines(summary_lines(report, findings, _pair_emulation_table)))
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


def _replay_of(run: str, packet: str | None, partner: str | None, emulate: list[str] | None):
    """The replay run RUN read against its packet (a usage error when two packets beside it match)."""
    from explorer.replay.model import AmbiguousPacketError

    try:
        return explorer.replay(run, packet=packet, partner=partner, emulate=emulate)
    except AmbiguousPacketError as error:
        raise UsageError(str(error)) from None


def _run_replay(args: argparse.Namespace) -> int:
    from explorer.replay.text import summary_lines

    _check_output(args.output)
    _check_emulate(args.emulate)
    report = _replay_of(args.run_directory, args.packet, args.partner, args.emulate).report()
    _deliver(args, report, lambda: terminal_lines(summary_lines(report)))
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


def _checked_directory(text: str):
    """ROOT resolved (a usage error when it is not a directory)."""
    from pathlib import Path

    shown = terminal_text(text[:ROOT_SHOWN]) + ("..." if len(text) > ROOT_SHOWN else "")
    try:
        root = Path(text).resolve()
        is_directory = root.is_dir()
    except (OSError, ValueError, RuntimeError) as error:  # too long, a NUL byte, a link loop
        raise UsageError(f"ROOT {shown}: {getattr(error, 'strerror', None) or error}") from None
    if not is_directory:
        raise UsageError(f"ROOT {shown} is not a directory")
    return root


def _checked_root(args: argparse.Namespace):
    """ROOT resolved, after the usage checks of ROOT, --jobs, --timeout and --scheduler (triage and campaign)."""
    root = _checked_directory(args.root)
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
    with _scheduler_errors(args.scheduler):
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
    table_sink.write(terminal_lines(table.splitlines()))
    _settle(sink, table_sink)
    return EXIT_DONE


def _check_scheduler(scheduler: str) -> None:
    """A usage error for a --scheduler that is malformed or cannot be used: Dask missing, local:N out of range, an
    address that is not HOST:PORT or that accepts no connection within SCHEDULER_CONNECT_TIMEOUT_S."""
    try:
        from distributed.comm import parse_address, parse_host_port

        from explorer.catalog.cluster import local_workers
    except ImportError as error:
        raise UsageError(f"--scheduler needs Dask: pip install -e '.[cluster]' ({error})") from None
    try:
        if local_workers(scheduler) is not None:
            return
        scheme, location = parse_address(scheduler)
        if scheme not in ("tcp", "tls"):
            return  # another transport: Dask itself connects, within its own timeout
        host, port = parse_host_port(location)
    except (ValueError, TypeError) as error:
        raise UsageError(f"--scheduler {clip(scheduler)}: {error}") from None
    import socket

    try:
        socket.create_connection((host, port), timeout=SCHEDULER_CONNECT_TIMEOUT_S).close()
    except OSError as error:
        reason = _reason(error) if error.strerror else f"no answer within {SCHEDULER_CONNECT_TIMEOUT_S:g} s"
        raise UsageError(f"--scheduler {clip(scheduler)}: cannot connect: {reason}") from None


@contextlib.contextmanager
def _scheduler_errors(scheduler: str | None):
    """A scheduler that could not be reached or started after the checks (SchedulerUnavailable): a usage error."""
    if scheduler is None:
        yield
        return
    from explorer.catalog.cluster import SchedulerUnavailable

    try:
        yield
    except SchedulerUnavailable as error:
        raise UsageError(f"--scheduler {clip(scheduler)}: {error}") from None


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
        "also run kernel arithmetic emulations: 'default' (the default set), "
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
        help="export a packet, a pair, a replay run or a campaign: HTML page, JSON, findings and PNGs",
        description="Writes what the app's Export writes into DIR, all of it or none; existing files are never "
        "overwritten. PACKET: <name>.html (every view, opens offline), <name>.report.json, <name>.findings.md and "
        "<name>-<view>.png; A B: the pair (.comparison.json); RUN (a replay run directory): the replay view "
        "(.replay.json); ROOT --campaign ID: that campaign of the root (.campaign.json). PNGs are rendered by "
        "/usr/bin/chromium (Debian package chromium). Exit status as for analyze, compare, replay or campaign; "
        "2 also when chromium is missing or the files cannot be written (then nothing is written).",
    )
    report.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a packet (directory or packet.json), two packets A B, a replay run directory, or a ROOT with --campaign",
    )
    report.add_argument(
        "--campaign", metavar="ID", help="export the campaign ID (as `explorer campaign ROOT` lists it) of ROOT"
    )
    report.add_argument(
        "--emulate",
        action="append",
        metavar="ID",
        help="also run kernel emulations, as for analyze, compare, replay or campaign (repeatable)",
    )
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
    import time

    from explorer.campaigns.report import build_campaign_report, campaign_text
    from explorer.campaigns.run import run_campaigns
    from explorer.catalog.triage import Progress, engine_text
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
    with _scheduler_errors(args.scheduler):
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
    if args.json:
        _emit(json.dumps(report, allow_nan=False) + "\n")
    else:
        lines = campaign_text(report)
        lines.append(f"({engine_text(jobs, run.packets, args.scheduler)}, {time.perf_counter() - started:.2f} s)")
        _emit(terminal_lines(lines))
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
    open_standard_streams()  # closed streams are /dev/null; a character the encoding lacks is escaped
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
        print(terminal_text(f"explorer: usage error: {error}"), file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:  # the environment, not the program: analyze itself reports memory_bound_exceeded
        print(
            f"explorer: out of memory ({MEMORY_BOUND_EXCEEDED}): the process cannot hold what this command "
            "needs; see docs/report.md, Memory",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except Exception as error:  # a programming error, never packet content
        print(terminal_text(f"explorer: internal error: {type(error).__name__}: {error}"), file=sys.stderr)
        return EXIT_INTERNAL
