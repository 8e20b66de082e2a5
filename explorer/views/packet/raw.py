"""Raw view: packet.json, the metadata snapshot and the JSON report as captured."""

from __future__ import annotations

import io

import panel as pn

from explorer.analysis.report import REPORT_SUFFIX, packet_name, report_text
from explorer.analysis.result import Analysis
from explorer.packet.files import PACKET_JSON
from explorer.views.shared.common import collapsed, explained, heading, html_pane, note
from explorer.views.shared.markup import esc

MISSING_CLASS = "raw-missing"  # a note saying what is not shown
JSON_DEPTH = 2  # levels expanded when a JSON pane opens
# A long JSON line scrolls inside its pane, never widens the page.
CONTAINED = {"overflow-x": "auto", "overflow-wrap": "anywhere"}
# A long string value (a limitation, a path) wraps inside the JSON tree, never runs past its right edge (Panel's
# json.css sets `white-space: pre` on strings; this sheet comes after it in the pane's shadow root). It is its own
# box (inline-block), so a wrapped value moves below its key instead of running under it.
JSON_WRAP_STYLESHEET = (
    ".json-formatter-row .json-formatter-string, .json-formatter-row .json-formatter-stringifiable "
    "{ display: inline-block; vertical-align: top; max-width: 100%; white-space: pre-wrap; overflow-wrap: anywhere; }"
)
PRE_STYLE = (
    "white-space:pre-wrap;word-break:break-all;font-size:0.85em;background:#f7f7f7;padding:0.5em;"
    "max-height:32em;overflow:auto"
)


def _pre(text: str, css_class: str) -> pn.pane.HTML:
    return html_pane(f'<pre class="{css_class}" style="{PRE_STYLE}">{esc(text)}</pre>')


def _json(value: object, css_class: str) -> pn.pane.JSON:
    """A collapsible JSON tree whose long strings wrap at the pane's edge."""
    return pn.pane.JSON(
        value,
        depth=JSON_DEPTH,
        sizing_mode="stretch_width",
        styles=CONTAINED,
        stylesheets=[JSON_WRAP_STYLESHEET],
        css_classes=[css_class],
    )


def _packet_json(analysis: Analysis) -> list:
    text = analysis.admission.packet_text
    if text is None:
        return [note("packet.json was not read or not decoded (see the refusals above).", MISSING_CLASS)]
    return [_pre(text, "packet-json-text")]


def _snapshot(analysis: Analysis) -> list:
    admission = analysis.admission
    if admission.snapshot is not None:
        text = collapsed("Snapshot text as captured", _pre(admission.snapshot_text or "", "snapshot-text"))
        return [_json(admission.snapshot, "snapshot-json"), text]
    if admission.snapshot_text is not None:
        read = "The metadata file was read but not interpreted (see the refusals above); its text as read:"
        return [note(read, MISSING_CLASS), _pre(admission.snapshot_text, "snapshot-text")]
    unread = "The metadata file was not read, does not match its hash, or is not valid JSON: nothing of it is shown."
    return [note(unread, MISSING_CLASS)]


def _body(analysis: Analysis) -> list:
    report = analysis.report()
    download = pn.widgets.FileDownload(
        callback=lambda: io.BytesIO(report_text(analysis).encode("utf-8")),
        filename=packet_name(analysis) + REPORT_SUFFIX,
        label="Download JSON report",
        color="primary",
        width=260,
        css_classes=["report-download"],
    )
    return [
        heading("JSON report", "The numbers every view draws, as <code>explorer analyze --json</code> prints them."),
        download,
        _json(report, "report-json"),
        heading(PACKET_JSON, "As captured, decoded as UTF-8 (unknown keys included)."),
        *_packet_json(analysis),
        heading("Metadata snapshot", "The parsed CBv2AttentionMetadataSnapshot, every field as captured."),
        *_snapshot(analysis),
    ]


# The raw inputs and the JSON report of one analysis (every status).
build = explained(None, lambda analysis, _selection: _body(analysis), "", "view-raw")
