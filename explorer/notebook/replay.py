"""Inline Jupyter display of a Replay: HTML and plain-text summaries and the `run.views` accessor.

Inline Jupyter display of a Replay: its compact HTML and plain-text summaries and the `run.views` accessor;
never computes a number and imports Panel only when a view is built.
"""

from __future__ import annotations

from explorer.replay.model import Replay
from explorer.views.replay import html as replay_html

VIEW_CALLS = ("summary()", "matrix()", "arms()", "ladder()", "map()", "readback()", "all()")
HINT_STYLE = "color:#555;font-size:0.85em;margin:0.2em 0"


def summary_html(run: Replay) -> str:
    """The rich display of a run: the matrix's sentence, status and reasons, the matrix, the arms, and the views."""
    report = run.report()
    calls = ", ".join(f"<code>.views.{call}</code>" for call in VIEW_CALLS)
    lead = [] if run.matrix is None else [f'<p class="replay-reading">{replay_html.reading_html(report)}</p>']
    parts = [*lead, replay_html.status_html(run), replay_html.run_table(report)]
    if run.matrix is not None:
        parts += [replay_html.matrix_html(run), replay_html.arms_table(report)]
    return "".join(parts) + f'<p class="views-hint" style="{HINT_STYLE}">Inline views: {calls}.</p>'


def summary_text(run: Replay) -> str:
    """One line: the run, its status and codes."""
    listed = f" ({', '.join(run.codes)})" if run.codes else ""
    return f"Replay run {run.path}: {run.status}{listed}"


class ReplayViews:
    """The replay view's sections, each a Panel viewable to show inline (`run.views.matrix()`)."""

    def __init__(self, run: Replay) -> None:
        self._run = run

    def __repr__(self) -> str:
        return f"Views of {summary_text(self._run)}: " + ", ".join(VIEW_CALLS)

    def _section(self, name: str):
        from explorer.views.replay.view import SECTIONS

        return SECTIONS[name][1](self._run)

    def summary(self):
        """Status, reasons, the run and its packets."""
        return self._section("summary")

    def matrix(self):
        """Every output against every other, in differing elements."""
        return self._section("matrix")

    def arms(self):
        """Each arm's state, codes and receipt."""
        return self._section("arms")

    def ladder(self):
        """Each arm against the packet's references, and the tool's analysis.json beside them."""
        return self._section("ladder")

    def map(self):
        """Where the chosen arm differs from the capture and the partner; click a cell for every output's value."""
        return self._section("map")

    def readback(self):
        """The paged arms' K/V read back, against the packet's."""
        return self._section("readback")

    def all(self):
        """The whole replay view (what the app and the export show)."""
        from explorer.views.replay.view import build

        return build(self._run)


views_of = ReplayViews  # the name explorer.analysis.display.InlineDisplay calls
