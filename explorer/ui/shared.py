"""Small helpers the modes share: an untrusted name echoed in a note, what a shown packet's content is.

No widgets.
"""

from __future__ import annotations

from explorer.analysis.result import Analysis
from explorer.views.shared.markup import esc

MAX_QUERY_ECHO = 80  # characters of an unknown name repeated back in a note


def echo(value: str) -> str:
    """An untrusted name, cut short and escaped for a note."""
    return esc(value[:MAX_QUERY_ECHO] + ("..." if len(value) > MAX_QUERY_ECHO else ""))


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
