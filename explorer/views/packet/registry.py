"""The views registry: (slug, title, builder(analysis, selection)) in tab order."""

from __future__ import annotations

from explorer.views.packet import attention, emulations, errors, lastrow, narrowed, nonfinite, overview, raw, summary
from explorer.views.shared.common import Selection

VIEWS = (
    ("overview", "Overview", overview.build),
    ("summary", "Summary", summary.build),
    ("errors", "Per-head errors", errors.build),
    ("lastrow", "Last-row bits", lastrow.build),
    ("nonfinite", "Nonfinite", nonfinite.build),
    ("narrowed", "Narrowed-Q", narrowed.build),
    ("attention", "Attention", attention.build),
    ("emulations", "Emulations", emulations.build),
    ("raw", "Raw", raw.build),
)

__all__ = ["VIEWS", "Selection"]
