"""The command line's grammar: every `explorer` command, its arguments and help, for argparse.

A parser names its command (`args.command`); explorer/cli.py runs it and sets the exit status.
"""

from __future__ import annotations

import argparse
import os
import sys

import explorer


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
    """argparse's formatter at argparse's own width, read without importing shutil (bz2 and lzma: 2.7 ms a start)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    """argparse's parser with HelpFormatter by default (the subcommands' parsers too)."""

    def __init__(self, *args, formatter_class: type[argparse.HelpFormatter] = HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


def _flag(command, name: str, help_text: str) -> None:
    command.add_argument(name, action="store_true", help=help_text)


def _add_emulate(command, help_text: str) -> None:
    command.add_argument("--emulate", action="append", metavar="ID", help=help_text)


def _add_report_options(command, report: str, emulate_help: str) -> None:
    """--json, --output and --emulate, shared by analyze, compare and replay."""
    _flag(command, "--json", f"print the JSON {report} instead of a summary")
    command.add_argument("--output", metavar="FILE", help=f"also write the JSON {report} to FILE (never overwritten)")
    _add_emulate(command, f"{emulate_help} (repeatable; quote ids with parentheses)")


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
        "also run kernel arithmetic emulations and report the emulation x side matrix: 'default', 'sweep' or an id "
        "as for analyze",
    )


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
        "also run kernel arithmetic emulations on the packet and score each arm's output against them: 'default' or "
        "an id as for analyze",
    )


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
    _add_emulate(report, "also run kernel emulations, as for analyze, compare, replay or campaign (repeatable)")
    report.add_argument(
        "--out",
        metavar="DIR",
        help="directory to write into (created if needed; default $EXPLORER_EXPORT_DIR or ./exports, as the app)",
    )


def _add_triage(commands) -> None:
    triage = commands.add_parser(
        "triage",
        help="summarize every packet under a root in parallel: statuses, ratios, pairs",
        description="Every directory holding packet.json one or two levels below ROOT, analyzed in worker "
        "processes. Exit status 0 when it ran, whatever the packets' statuses; 2 usage error.",
    )
    triage.add_argument("root", metavar="ROOT", help="the directory to search for packets")
    _flag(triage, "--json", "one JSON line per packet on stdout (the summary table goes to stderr)")
    _add_run_options(triage)


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
    _flag(samples, "--full", "also write the full-size Qwen3.6 packet (QH16/KVH2/D256/T5585, about 11.4 MB)")
    _flag(
        samples,
        "--campaign",
        "also write a synthetic capture campaign (2 backends x 4 layers x 3 steps, QH16/KVH2/D64)",
    )


def _add_campaign(commands) -> None:
    campaign = commands.add_parser(
        "campaign",
        help="grid one request captured on two backends at many layers and steps; name where it diverges",
        description="Every packet one or two levels below ROOT, grouped by model, artifact, input and request; each "
        "campaign's cells (steps x layers) get a state and the first kernel-originated difference is "
        "named (docs/campaigns.md). Exit status 0 when it ran, whatever the states; 2 usage error.",
    )
    campaign.add_argument("root", metavar="ROOT", help="the directory to search for packets")
    _flag(campaign, "--json", "print the JSON report (attention-explorer.campaign.v1) instead of the grids")
    campaign.add_argument("--request", metavar="ID", help="only the campaign(s) of this requestID")
    campaign.add_argument(
        "--backends", metavar="A,B", help="the two backends to compare (default: the two with the most packets)"
    )
    _add_emulate(
        campaign,
        "run kernel emulations on each campaign's first outputs-differ cell: 'default' or an id as for analyze "
        "(repeatable)",
    )
    _add_run_options(campaign)


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
    """The command line's parser; with `command` (one of COMMANDS), only that subcommand's (same messages and help).

    Building every subcommand costs about 10 ms of a process start (argparse formats each help as it is added).
    """
    parser = Parser(prog="explorer", description="Admit and analyze attention packets.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {explorer.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if command is None or name == command:
            add(commands)
    return parser
