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
from explorer.cli_parser import COMMANDS, build_parser  # noqa: E402
from explorer.foundations.bounded import clip, shown_list, terminal_lines, terminal_text  # noqa: E402
from explorer.foundations.streams import Sink, discard_stdout, open_standard_streams  # noqa: E402

EXIT_ANALYZED = 0
EXIT_DONE = 0  # help, version, samples written
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_REFUSED = 4
EXIT_BY_STATUS = {  # a packet's, a pair's ("compared") or a replay run's status
    "analyzed": EXIT_ANALYZED,
    "compared": EXIT_ANALYZED,
    "inconclusive": EXIT_INCONCLUSIVE,
    "refused": EXIT_REFUSED,
}

JSON_INDENT = 2
SCHEDULER_CONNECT_TIMEOUT_S = 5.0  # a --scheduler address that accepts no connection in this time is a usage error


class UsageError(Exception):
    """A problem with the command line itself (exit status 2)."""


# ---------------------------------------------------------------- output


def _check_report_options(args: argparse.Namespace) -> None:
    """Usage errors of --output (it is never overwritten) and --emulate, before any packet is read."""
    if args.output is not None and os.path.lexists(args.output):
        raise _output_exists(args.output)
    _check_emulate(args.emulate)


def _output_exists(output: str) -> UsageError:
    return UsageError(f"--output {clip(output)} already exists; it is never overwritten")


def _deliver(args: argparse.Namespace, report: dict, summary_text: Callable[[], str]) -> int:
    """The JSON report to --output and on stdout with --json, else the text summary (the slow JSON only when asked);
    returns the exit status of the report's status."""
    wanted = args.json or args.output is not None
    text = json.dumps(report, allow_nan=False, indent=JSON_INDENT) + "\n" if wanted else ""
    _write_output(args.output, text)
    _emit(text if args.json else summary_text())
    return EXIT_BY_STATUS[report["status"]]


def _write_output(output: str | None, text: str) -> None:
    """Write `text` to a new --output file, whole or not at all (never overwritten)."""
    if output is not None:
        from explorer.foundations.safeio import write_new  # only a line with --output loads it

        try:
            write_new(output, text)
        except FileExistsError:
            raise _output_exists(output) from None
        except OSError as error:
            raise UsageError(f"cannot write --output {clip(output)}: {_reason(error)}") from None


def _reason(error: OSError) -> str:
    """An OSError's own words (strerror), else its text, bounded."""
    return error.strerror or clip(str(error))


def _check_emulate(emulate: list[str] | None) -> None:
    """A usage error for an unknown kernel, parameter or value."""
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
    """How every command ends its output: a closed pipe ends it quietly (as Unix tools do), any other write error
    (a full device) is a usage error; either way what is still buffered for standard output is dropped."""
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
    _check_report_options(args)
    _check_element(args.element, args.json)
    from explorer.analysis.analyze import analyze

    analysis = analyze(args.packet, emulate=args.emulate, admission=args.admitted)
    report = analysis.report()
    return _deliver(args, report, lambda: _analysis_text(analysis, report, args.element))


def _analysis_text(analysis, report: dict, element: str | None) -> str:
    """The packet's summary, and with --element that element's record (a usage error when out of range)."""
    from explorer.analysis.element import parse_index
    from explorer.analysis.text import element_lines, element_unavailable_lines, summary_lines

    lines = summary_lines(report, _emulation_table("emulation_table"))
    if element is not None:
        try:
            lines += element_lines(analysis.element(*parse_index(element)))
        except ValueError as error:
            lines += element_unavailable_lines(element, error)
        except IndexError as error:
            raise UsageError(f"--element {element}: {error}") from None
    return terminal_lines(lines)


def _emulation_table(name: str) -> Callable:
    """A table (header, rows) of views/packet/emulation_tables.py, loaded only for a report with emulations."""

    def table(*blocks):
        from explorer.views.packet import emulation_tables

        return getattr(emulation_tables, name)(*blocks)

    return table


def _run_report(args: argparse.Namespace) -> int:
    """`explorer report`: export what the paths name as the app's Export does; prints the paths written."""
    _check_emulate(args.emulate)
    if args.campaign is not None and len(args.paths) != 1:
        raise UsageError("--campaign ID exports one campaign of one ROOT")
    if len(args.paths) > 2:
        raise UsageError(f"{len(args.paths)} paths: a packet, a replay run, a ROOT with --campaign, or a pair A B")
    # loads panel, holoviews, bokeh, playwright only here
    from explorer.export.browser import RenderError
    from explorer.export.files import choose_export_dir

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
    """Compute what `args` names and export it into `out` with its PNGs: the paths and the exit status."""
    from explorer.export import pages

    if args.campaign is not None:
        return pages.export_campaign(_campaign_of(args), out, png=True), EXIT_DONE
    if len(args.paths) == 2:
        pair = _pair_of(*args.paths, args.emulate)
        return pages.export_pair(pair, out, png=True, emulate=args.emulate), EXIT_BY_STATUS[pair.status]
    if _is_replay_run(args.paths[0]):
        run = _replay_of(args.paths[0], None, None, args.emulate)
        return pages.export_replay(run, out, png=True), EXIT_BY_STATUS[run.status]
    from explorer.analysis.emulation.shown import request_settings

    analysis = explorer.analyze(args.paths[0], emulate=args.emulate)
    emulation = request_settings(args.emulate)
    return pages.export_packet(analysis, out, emulation=emulation, png=True), EXIT_BY_STATUS[analysis.status]


def _is_replay_run(path: str) -> bool:
    """A directory holding the replay tool's input.json and no packet.json (docs/replay.md)."""
    from explorer.packet.files import PACKET_JSON
    from explorer.replay.run import INPUT_JSON

    return os.path.isfile(os.path.join(path, INPUT_JSON)) and not os.path.exists(os.path.join(path, PACKET_JSON))


def _campaign_of(args: argparse.Namespace) -> dict:
    """The campaign `--campaign ID` under ROOT (a usage error naming the IDs found when none has it)."""
    from explorer.campaigns.report import build_campaign_report
    from explorer.campaigns.run import run_campaigns
    from explorer.catalog.workers import default_jobs

    root = _checked_directory(args.paths[0])
    run = run_campaigns(root, jobs=default_jobs(), emulate=None if args.emulate is None else tuple(args.emulate))
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

    _check_report_options(args)
    pair = _pair_of(args.a, args.b, args.emulate)
    report = pair.report()
    findings = [finding.text for finding in pair_findings(pair)]
    table = _emulation_table("pair_emulation_table")
    return _deliver(args, report, lambda: terminal_lines(summary_lines(report, findings, table)))


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

    _check_report_options(args)
    report = _replay_of(args.run_directory, args.packet, args.partner, args.emulate).report()
    return _deliver(args, report, lambda: terminal_lines(summary_lines(report)))


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
    from explorer.catalog.triage import run
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
    """A usage error for a --scheduler that is malformed or unusable (no Dask, local:N out of range, no connection)."""
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


# ---------------------------------------------------------------- explorer campaign (docs/campaigns.md)


def _run_campaign(args: argparse.Namespace) -> int:
    import time

    from explorer.campaigns.report import build_campaign_report
    from explorer.campaigns.run import run_campaigns
    from explorer.campaigns.text import campaign_text
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


# What runs each command of COMMANDS (explorer/cli_parser.py).
RUNS = {
    "analyze": _run_analyze,
    "report": _run_report,
    "triage": _run_triage,
    "samples": _run_samples,
    "compare": _run_compare,
    "replay": _run_replay,
    "campaign": _run_campaign,
}


def main(argv: Sequence[str] | None = None, *, ahead: ReadAhead | None = None) -> int:
    """Run the command line; returns the exit status. `ahead`: the packet being read ahead (explorer/launch.py)."""
    open_standard_streams()  # closed streams are /dev/null; a character the encoding lacks is escaped
    arguments = sys.argv[1:] if argv is None else list(argv)
    named = arguments[0] if arguments and arguments[0] in COMMANDS else None
    try:
        args = build_parser(named).parse_args(arguments)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_DONE
    run = RUNS[args.command]
    args.admitted = ahead.admission_of(args.packet) if ahead is not None and args.command == "analyze" else None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # numeric warnings never reach the terminal
            warnings.simplefilter("ignore")
            return run(args)
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
