"""Inline Jupyter display of one analysis: HTML and plain-text summaries and the `.views` accessor.

Every view is the one the app draws (`explorer.views.VIEWS`), built for the same result.
"""

from __future__ import annotations

from pathlib import Path

from explorer.analysis.result import Analysis
from explorer.notebook.accessor import SectionViews, section, views_hint
from explorer.views.shared import html_summary

# Accessor methods in the app's tab order; the ones taking `head` follow the selected query head.
VIEW_CALLS = (
    "overview()",
    "summary()",
    "errors()",
    "lastrow()",
    "nonfinite()",
    "narrowed()",
    "attention(head=0)",
    "emulations()",
    "raw()",
    "all(head=0)",
)


def summary_html(analysis: Analysis) -> str:
    """The compact rich display of a result: status, every reason, the largest-linf heads, and how to open the views."""
    tail = "; <code>pn.panel(result)</code> shows them all in tabs"
    return html_summary.overview_html(analysis) + views_hint(VIEW_CALLS, tail)


def summary_text(analysis: Analysis) -> str:
    """One line naming the packet, its status and its refusal or reason codes (the plain-text display)."""
    codes = [problem.code for problem in analysis.admission.refusals] + [reason.code for reason in analysis.reasons]
    listed = f" ({', '.join(codes)})" if codes else ""
    return f"Analysis of {analysis.admission.path}: {analysis.status}{listed}"


def sample(name: str) -> Path:
    """The directory of the bundled sample packet `name` (sample_packets/ of the repository checkout)."""
    from explorer.catalog.discovery import default_root

    path = default_root() / name
    if not path.is_dir():
        raise FileNotFoundError(f"no sample packet {name!r} under {path.parent}")
    return path


def export_dir() -> Path:
    """Where the notebooks export, as the app does: $EXPLORER_EXPORT_DIR, else ./exports (notebooks/exports/)."""
    from explorer.export.files import choose_export_dir

    return choose_export_dir(None)


class Views(SectionViews):
    """The explorer's views of one analysis, each a Panel viewable to show inline (`result.views.attention(head=5)`)."""

    CALLS = VIEW_CALLS
    TEXT = summary_text
    overview = section("overview", "Status, reasons and identity above the error map, last-row bits and counts.")
    summary = section("summary", "Status, reasons, identity (declared), selection, geometry and per-head table.")
    errors = section("errors", "|output - reference| maps of every query head x channel, and per-head charts.")
    lastrow = section("lastrow", "Bitwise XOR of the stored last K/V row against the incoming row.")
    nonfinite = section("nonfinite", "Where the NaNs and infinities of each of the six tensors are.")
    narrowed = section("narrowed", "The narrowed-Q counterfactual beside the primary reference (or why not).")
    emulations = section("emulations", "Every kernel emulation's bit-equal counts and drill-down (computed now).")
    raw = section("raw", "packet.json, the metadata snapshot and the JSON report.")

    def _section(self, slug: str, head: int = 0):
        from explorer.views import VIEWS, Selection

        builders = {view_slug: builder for view_slug, _, builder in VIEWS}
        return builders[slug](self._result, Selection(head=head))

    def attention(self, head: int = 0):
        """Softmax weights over tokens of query `head`, and diagnostics across heads."""
        return self._section("attention", head)

    def all(self, head: int = 0):
        """Every view in tabs, in the app's order, sharing one selected query head (each drawn when first opened:
        all nine at once take Panel tens of seconds in a notebook)."""
        import panel as pn

        from explorer.views import VIEWS, Selection

        selection = Selection(head=head)
        return pn.Tabs(
            *((title, builder(self._result, selection)) for _, title, builder in VIEWS),
            dynamic=True,
            sizing_mode="stretch_width",
        )


views_of = Views  # the name explorer.analysis.display.InlineDisplay calls
