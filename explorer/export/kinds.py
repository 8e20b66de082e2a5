"""The four kinds of export, each described once: its report, sections, caption, intro and write-up.

Views are imported only when a page is built: reading this table loads no plotting library.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from explorer.analysis.findings import packet_findings
from explorer.analysis.ranking import worst_score_head
from explorer.analysis.report import REPORT_INDENT, REPORT_SUFFIX, packet_name, report_text
from explorer.analysis.result import Analysis
from explorer.campaigns.findings import campaign_findings, coverage_lines, key_lines
from explorer.campaigns.report import LIMITATIONS as CAMPAIGN_LIMITATIONS
from explorer.export.findings import Table, WriteUp
from explorer.export.static_page import CaptionFields, Section
from explorer.foundations.bounded import escaped_bytes
from explorer.foundations.formatting import short_number
from explorer.packet.model import REFUSED
from explorer.packet.snapshot import SELECTION_LABELS
from explorer.pair.findings import pair_findings
from explorer.replay.findings import matrix_rows, replay_findings
from explorer.replay.text import matrix_heading
from explorer.version import __version__

COMPARISON_SUFFIX = ".comparison.json"
REPLAY_SUFFIX = ".replay.json"
CAMPAIGN_SUFFIX = ".campaign.json"
PAIR_SECTION, REPLAY_SECTION, CAMPAIGN_SECTION = "pair", "replay", "campaign"
REFUSED_PNG_VIEW = "summary"  # the one PNG of a refused packet
SHA_DIGITS = 12  # hex digits of packetSHA256 in the caption band
UNKNOWN = "unknown"
NOT_REPORTED = "Selection not reported: the packet was refused, nothing in it is trusted."
PAIR_SIDE_FIELDS = ("packet", "status", "backend", "packetSHA256")  # caption fields shown once per side
STAMP_FIELDS = ("explorer", "exported")
PACKET_INTRO = (
    "Static export of the Attention Packet Explorer views: the plots still zoom, pan and give each cell's exact "
    "values; each setting chosen in the app is written as text. The JSON report beside this file holds the same "
    "numbers; the repository's docs/ explains the packet rules and the report."
)


@dataclass(frozen=True)
class Kind:
    """One kind of export: the JSON's file ending and text, the page's sections, the caption band, the page's intro
    (HTML), the findings file's content and the sections drawn as PNGs (default: all); `fallback` is the file stem of a
    name with no safe character."""

    json_suffix: str
    fallback: str
    report: Callable[[Any], str]
    sections: Callable[[Any], tuple[Section, ...]]
    caption: Callable[[Any, str, str], CaptionFields]
    intro: Callable[[Any, str, str], str]
    write_up: Callable[[Any, str, CaptionFields], WriteUp]
    drawn: Callable[[Any], tuple[str, ...]] | None = None


def _json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, indent=REPORT_INDENT) + "\n"


def _stamped(stamp: str) -> CaptionFields:
    return (("explorer", __version__), ("exported", stamp))


# ---------------------------------------------------------------- a packet


@dataclass(frozen=True)
class PacketSubject:
    """A packet's export: its analysis (with the emulations its page shows), the head its views open on and the
    Emulations view's settings ({URL name: value}, as the app's Selection.emulation)."""

    analysis: Analysis
    head: int
    emulation: Mapping[str, object] = dataclasses.field(default_factory=dict)


def shown_emulations(analysis: Analysis, settings: Mapping[str, object] | None = None) -> Analysis:
    """The analysis an export serializes: with the emulations its Emulations view shows for `settings` (the builds
    or the sweep when chosen there), and those the analysis was asked for besides, so the JSON and the findings
    beside the Emulations PNG hold the counts it shows (docs/report.md, "Exports"); no settings: the view's
    defaults. Unchanged without numerics or when it already holds that set; computed once and cached by analyze."""
    from explorer.analysis.analyze import emulations_of
    from explorer.analysis.emulation import normalised_ids, shape_of
    from explorer.analysis.emulation.shown import view_set

    if analysis.numerics is None:
        return analysis
    request = [*view_set(settings or {}), *(analysis.emulations_requested or ())]
    ids = normalised_ids(request, shape_of(analysis.admission.tensors))
    if analysis.emulations_requested == ids:
        return analysis
    emulations, counts = emulations_of(analysis, request)
    return dataclasses.replace(analysis, emulations=emulations, emulation_counts=counts, emulations_requested=ids)


def export_head(analysis: Analysis, head: int | None) -> int:
    """The query head the exported views open on: the one chosen, else the largest-score head (as the app)."""
    if head is not None:
        return head
    chosen = worst_score_head(analysis.numerics) if analysis.numerics is not None else None
    return 0 if chosen is None else chosen


def caption_fields(analysis: Analysis, name: str, stamp: str) -> CaptionFields:
    """(label, text) pairs of the caption band every export carries; 'unknown' where the packet does not say."""
    report = analysis.report()
    identity, selection = report.get("identity") or {}, report.get("selection") or {}
    digest = report["packet"].get("packetSHA256")

    def known(value) -> str:
        return UNKNOWN if value is None else str(value)

    return (
        ("packet", escaped_bytes(name)),
        ("status", analysis.status),
        ("model", known(identity.get("modelID"))),
        ("backend", known(identity.get("backend"))),
        ("request", known(selection.get("requestID"))),
        ("output index", known(selection.get("outputIndex"))),
        ("layer", known(selection.get("modelLayerIndex"))),
        ("packetSHA256", digest[:SHA_DIGITS] if digest else UNKNOWN),
        *_stamped(stamp),
    )


def selection_lines(analysis: Analysis) -> list[str]:
    """The packet's selection fields as one line each; nothing of a refused packet (its contents are untrusted)."""
    selection = analysis.admission.selection
    if analysis.status == REFUSED:
        return [NOT_REPORTED]
    if not selection:
        return ["Selection not established (see the status)."]
    return [f"{label}: {short_number(selection[key])}" for key, label in SELECTION_LABELS if key in selection]


def _packet_sections(subject: PacketSubject) -> tuple[Section, ...]:
    from explorer.views import VIEWS, Selection

    head, emulation = subject.head, subject.emulation
    return tuple(
        Section(slug, title, partial(builder, subject.analysis, Selection(head=head, emulation=dict(emulation))))
        for slug, title, builder in VIEWS
    )


def _packet_drawn(subject: PacketSubject) -> tuple[str, ...]:
    """Every view, or for a refused packet the Summary alone (every other would only repeat that nothing is read)."""
    if subject.analysis.status == REFUSED:
        return (REFUSED_PNG_VIEW,)
    return tuple(section.slug for section in _packet_sections(subject))


def packet_write_up(subject: PacketSubject, name: str, fields: CaptionFields) -> WriteUp:
    """The packet's findings file: its sentences, its selection and the head its views open on."""
    analysis = subject.analysis
    selection = selection_lines(analysis)
    if analysis.numerics is not None:
        selection.append(f"The views open on query head {subject.head}.")
    return WriteUp(name, fields, [f.text for f in packet_findings(analysis)], details=[("Selection", selection)])


PACKET = Kind(
    json_suffix=REPORT_SUFFIX,
    fallback="packet",
    report=lambda subject: report_text(subject.analysis),
    sections=_packet_sections,
    caption=lambda subject, name, stamp: caption_fields(subject.analysis, name, stamp),
    intro=lambda subject, name, stamp: PACKET_INTRO,
    write_up=packet_write_up,
    drawn=_packet_drawn,
)


# ---------------------------------------------------------------- a pair (docs/pairs.md)


@dataclass(frozen=True)
class PairSubject:
    """A pair's export: the pair (with the emulation matrix its page computed, if any) and its sides' names."""

    pair: Any
    names: tuple[str, str]


def pair_names(pair) -> tuple[str, str]:
    """The two packets' directory names (sides a and b)."""
    return packet_name(pair.a), packet_name(pair.b)


def pair_caption_fields(pair, names: tuple[str, str], stamp: str) -> CaptionFields:
    """The caption band of a pair: the pair status, each packet's own fields, the shared ones ('a | b' where they
    differ), version and date."""
    sides = [
        dict(caption_fields(analysis, name, stamp)) for analysis, name in zip((pair.a, pair.b), names, strict=True)
    ]
    per_side = tuple(
        (f"{label} {side}", fields[label])
        for side, fields in zip("ab", sides, strict=True)
        for label in PAIR_SIDE_FIELDS
    )
    shared = tuple(
        (label, a if a == sides[1][label] else f"{a} | {sides[1][label]}")
        for label, a in sides[0].items()
        if label not in (*PAIR_SIDE_FIELDS, *STAMP_FIELDS)
    )
    return (("pair", pair.status), *per_side, *shared, *_stamped(stamp))


def _pair_sections(subject: PairSubject) -> tuple[Section, ...]:
    from explorer.views.pair.view import build

    return (Section(PAIR_SECTION, "Pair view", partial(build, subject.pair)),)


def _pair_intro(subject: PairSubject, name: str, stamp: str) -> str:
    pair = subject.pair
    return (
        f"Side a: <code>{html.escape(escaped_bytes(pair.a.admission.path))}</code>; side b: "
        f"<code>{html.escape(escaped_bytes(pair.b.admission.path))}</code>. Pair status: <b>{pair.status}</b>. "
        f"Static export of the Attention Packet Explorer pair view (explorer {__version__}, {stamp}): the plots "
        "still zoom, pan and give each cell's exact values. The comparison JSON beside this file holds the same "
        "numbers."
    )


def pair_write_up(subject: PairSubject, name: str, fields: CaptionFields) -> WriteUp:
    """The pair's findings file: which side is off first, then the shared selection and the fields that differ."""
    pair = subject.pair
    shared = [f"{field}: {short_number(value)}" for field, value in pair.selection or ()]
    differing = [f"{d.field} differs: a {short_number(d.a)}, b {short_number(d.b)}" for d in pair.selection_differences]
    selection = shared + differing or ["Selection not compared (a side was refused)."]
    return WriteUp(name, fields, [f.text for f in pair_findings(pair)], details=[("Selection", selection)])


def comparison_text(pair) -> str:
    """The comparison report exactly as `explorer compare --json` prints it (notebook 03 checks an export by it)."""
    return _json(pair.report())


PAIR = Kind(
    json_suffix=COMPARISON_SUFFIX,
    fallback=PAIR_SECTION,
    report=lambda subject: comparison_text(subject.pair),
    sections=_pair_sections,
    caption=lambda subject, name, stamp: pair_caption_fields(subject.pair, subject.names, stamp),
    intro=_pair_intro,
    write_up=pair_write_up,
)


# ---------------------------------------------------------------- a replay run (docs/replay.md)


def replay_caption_fields(run, name: str, stamp: str) -> CaptionFields:
    """The caption band of a replay run: the run, its status, the packet's caption fields and the partner."""
    packet = dict(caption_fields(run.packet, packet_name(run.packet), stamp)) if run.packet is not None else {}
    shown = tuple((label, value) for label, value in packet.items() if label not in ("status", *STAMP_FIELDS))
    partner = escaped_bytes(packet_name(run.partner)) if run.partner is not None else "none"
    return (("replay run", escaped_bytes(name)), ("replay", run.status), *shown, ("partner", partner), *_stamped(stamp))


def _replay_sections(run) -> tuple[Section, ...]:
    from explorer.views.replay.view import build

    return (Section(REPLAY_SECTION, "Replay view", partial(build, run)),)


def _replay_intro(run, name: str, stamp: str) -> str:
    return (
        f"Replay run <code>{html.escape(escaped_bytes(run.path))}</code>. Replay status: <b>{run.status}</b>. Static "
        f"export of the Attention Packet Explorer replay view (explorer {__version__}, {stamp}): each setting chosen "
        "in the app is written as text, numbers at 4 significant digits. The replay JSON beside this file holds the "
        "same numbers at full precision."
    )


def _relative(path: str, root: str) -> str:
    """`path` relative to the directory holding the replay run (no absolute local path in a write-up)."""
    return os.path.relpath(os.path.abspath(path), os.path.abspath(root))


def replay_write_up(run, name: str, fields: CaptionFields) -> WriteUp:
    """The replay run's findings file: its sentences, the matrix, where the run and its packets are (relative to the
    run's directory), the packet's selection, notes, limitations."""
    report = run.report()
    root = os.path.dirname(os.path.abspath(run.path))
    where = [f"run: {_relative(run.path, root)}"]
    where += [
        f"{label}: {_relative(side.admission.path, root)} ({side.status})" if side is not None else f"{label}: none"
        for label, side in (("packet", run.packet), ("partner", run.partner))
    ]
    matrix = report["matrix"]
    tables = [] if matrix is None else [Table(matrix_heading(matrix), ("", *matrix["outputs"]), matrix_rows(matrix))]
    selection = ["Source packet not found."] if run.packet is None else selection_lines(run.packet)
    details = [("Run", where), ("Selection", selection)]
    details += [("Notes", report["notes"])] if report["notes"] else []
    details.append(("Limitations", report["limitations"]))
    return WriteUp(name, fields, [f.text for f in replay_findings(report)], tables, details)


REPLAY = Kind(
    json_suffix=REPLAY_SUFFIX,
    fallback=REPLAY_SECTION,
    report=lambda run: _json(run.report()),
    sections=_replay_sections,
    caption=replay_caption_fields,
    intro=_replay_intro,
    write_up=replay_write_up,
)


# ---------------------------------------------------------------- a capture campaign (docs/campaigns.md)


def campaign_name(campaign: dict) -> str:
    """A campaign export's name: by its model and request (the id alone names nothing a reader knows)."""
    key = campaign["key"]
    return f"campaign-{key['modelID']}-request-{key['requestID']}"


def campaign_caption_fields(campaign: dict, name: str, stamp: str) -> CaptionFields:
    """The caption band of a campaign: its id, request, model and backends."""
    key = campaign["key"]
    return (
        ("campaign", campaign["id"]),
        ("request", str(key["requestID"])),
        ("model", escaped_bytes(str(key["modelID"]))),
        ("backends", " vs ".join(campaign["backends"])),
        *_stamped(stamp),
    )


def _campaign_sections(campaign: dict) -> tuple[Section, ...]:
    from explorer.views.campaign.view import build

    return (Section(CAMPAIGN_SECTION, "Campaign view", partial(build, campaign)),)


def _campaign_intro(campaign: dict, name: str, stamp: str) -> str:
    key = campaign["key"]
    return (
        f"Campaign {html.escape(campaign['id'])} of request <b>{html.escape(str(key['requestID']))}</b>, model "
        f"{html.escape(str(key['modelID']))}, backends {html.escape(' vs '.join(campaign['backends']))}. Static "
        f"export of the Attention Packet Explorer campaign view (explorer {__version__}, {stamp}); the campaign JSON "
        "and the findings beside this file hold the same numbers."
    )


def campaign_write_up(campaign: dict, name: str, fields: CaptionFields) -> WriteUp:
    """The campaign's findings file: the origin and first cells, what the campaign is, its coverage, limitations."""
    key = campaign["key"]
    details: Sequence[tuple[str, Sequence[str]]] = [
        ("Campaign", key_lines(campaign)),
        ("Coverage", coverage_lines(campaign)),
        ("Limitations", CAMPAIGN_LIMITATIONS),
    ]
    title = f"Campaign of request {key['requestID']}, model {key['modelID']}"
    return WriteUp(title, fields, [f.text for f in campaign_findings(campaign)], details=details)


CAMPAIGN = Kind(
    json_suffix=CAMPAIGN_SUFFIX,
    fallback=CAMPAIGN_SECTION,
    report=_json,
    sections=_campaign_sections,
    caption=campaign_caption_fields,
    intro=_campaign_intro,
    write_up=campaign_write_up,
)
