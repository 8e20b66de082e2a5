"""Small helpers the packet shell and the pair mode share.

An untrusted name echoed in a note or shown, and what a shown packet's content is; no widgets.
"""

from __future__ import annotations

import html

from explorer.analysis.result import Analysis
from explorer.foundations.bounded import escaped_bytes

MAX_QUERY_ECHO = 80  # characters of an unknown name repeated back in a note


def echo(value: str) -> str:
    """An untrusted name, cut short and escaped for a note."""
    return shown_name(value[:MAX_QUERY_ECHO] + ("..." if len(value) > MAX_QUERY_ECHO else ""))


def shown_name(name: str) -> str:
    """A listed packet's name as HTML text: a byte of its directory name that is not UTF-8 shows as \\xNN (the
    browser can receive only UTF-8 text; the name itself, and the URL's percent-encoding of it, keep the byte)."""
    return html.escape(escaped_bytes(name))


def content_seen(analysis: Analysis) -> tuple:
    """What a view of a packet shows, reduced to what changes with its files: status, hashes, refusals."""
    admission = analysis.admission
    tensors = admission.tensors or {}
    return (
        analysis.status,
        admission.packet_sha256,
        admission.metadata_sha256,
        tuple((p.code, p.field, p.message) for p in admission.refusals),
        tuple(tensor.sha256 for tensor in tensors.values()),
    )
