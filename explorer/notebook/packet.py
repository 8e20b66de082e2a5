"""Inline Jupyter display of one analysis.

Its compact HTML and plain-text summaries and the `result.views` accessor; never computes a number and imports
Panel only when a view is built.

`Analysis._repr_html_`, `Analysis.views` and `Analysis.__panel__` delegate here, so
showing a result as the last expression of a cell needs no UI library, and every
view is the one the app draws (`explorer.views.VIEWS`), built for the same result.
"""

from __future__ import annotations

from pathlib import Path

from explorer.analysis.result import Analysis
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
HINT_STYLE = "color:#555;font-size:0.85em;margin:0.2em 0"


def summary_html(analysis: Analysis) -> str:
    """The compact rich display of a result: status, every reason, the largest-linf heads, and how to open the views."""
    calls = ", ".join(f"<code>.views.{call}</code>" for call in VIEW_CALLS)
    return (
        html_summary.overview_html(analysis)
        + f'<p class="views-hint" style="{HINT_STYLE}">Inline views: {calls}; <code>pn.panel(result)</code> '
        "shows them all in tabs.</p>"
    )


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


class Views:
    """The explorer's views of one analysis, each a Panel viewable to show inline (`result.views.attention(head=5)`)."""

    def __init__(self, analysis: Analysis) -> None:
        self._analysis = analysis

    def __repr__(self) -> str:
        return f"Views of {summary_text(self._analysis)}: " + ", ".join(VIEW_CALLS)

    def _build(self, slug: str, head: int = 0):
        from explorer.views import VIEWS, Selection

        builders = {view_slug: builder for view_slug, _, builder in VIEWS}
        return builders[slug](self._analysis, Selection(head=head))

    def overview(self):
        """Status, reasons and identity above the error map, last-row bits, nonfinite counts and narrowed-Q."""
        return self._build("overview")

    def summary(self):
        """Status, reasons, identity (declared), selection, geometry, limitations and per-head table."""
        return self._build("summary")

    def errors(self):
        """|output - reference| maps of every query head x channel, and per-head metric charts."""
        return self._build("errors")

    def lastrow(self):
        """Bitwise XOR of the stored last K/V row against the incoming row."""
        return self._build("lastrow")

    def nonfinite(self):
        """Where the NaNs and infinities of each of the six tensors are."""
        return self._build("nonfinite")

    def narrowed(self):
        """The narrowed-Q counterfactual beside the primary reference (or why it does not apply)."""
        return self._build("narrowed")

    def attention(self, head: int = 0):
        """Softmax weights over tokens of query `head`, and diagnostics across heads."""
        return self._build("attention", head)

    def emulations(self):
        """Every kernel emulation's bit-equal counts, where the output differs from one, and the drill-down (computed
        now)."""
        return self._build("emulations")

    def raw(self):
        """packet.json, the metadata snapshot and the JSON report."""
        return self._build("raw")

    def all(self, head: int = 0):
        """Every view in tabs, in the app's order, sharing one selected query head.

        Tabs are drawn when first opened (`dynamic`): rendering all nine at once in a
        notebook with inline resources takes Panel tens of seconds, one tab about one.
        """
        import panel as pn

        from explorer.views import VIEWS, Selection

        selection = Selection(head=head)
        return pn.Tabs(
            *((title, builder(self._analysis, selection)) for _, title, builder in VIEWS),
            dynamic=True,
            sizing_mode="stretch_width",
        )


views_of = Views  # the name explorer.analysis.display.InlineDisplay calls
