"""Inline Jupyter display of a Replay: HTML and plain-text summaries and the `run.views` accessor."""

from __future__ import annotations

from explorer.notebook.accessor import SectionViews, section, views_hint
from explorer.replay.model import Replay
from explorer.views.replay import html as replay_html

VIEW_CALLS = ("summary()", "matrix()", "arms()", "ladder()", "map()", "readback()", "all()")


def summary_html(run: Replay) -> str:
    """The rich display of a run: the matrix's sentence, status and reasons, the matrix, the arms, and the views."""
    report = run.report()
    lead = [] if run.matrix is None else [f'<p class="replay-reading">{replay_html.reading_html(report)}</p>']
    parts = [*lead, replay_html.status_html(run), replay_html.run_table(report)]
    if run.matrix is not None:
        parts += [replay_html.matrix_html(run), replay_html.arms_table(report)]
    return "".join(parts) + views_hint(VIEW_CALLS)


def summary_text(run: Replay) -> str:
    """One line: the run, its status and codes."""
    listed = f" ({', '.join(run.codes)})" if run.codes else ""
    return f"Replay run {run.path}: {run.status}{listed}"


class ReplayViews(SectionViews):
    """The replay view's sections, each a Panel viewable to show inline (`run.views.matrix()`)."""

    VIEW = "explorer.views.replay.view"
    CALLS = VIEW_CALLS
    TEXT = summary_text
    summary = section("summary", "Status, reasons, the run and its packets.")
    matrix = section("matrix", "Every output against every other, in differing elements.")
    arms = section("arms", "Each arm's state, codes and receipt.")
    ladder = section("ladder", "Each arm against the packet's references, and the tool's analysis.json beside them.")
    map = section("map", "Where the chosen arm differs from the capture and the partner; click a cell for values.")
    readback = section("readback", "The paged arms' K/V read back, against the packet's.")


views_of = ReplayViews  # the name explorer.analysis.display.InlineDisplay calls
