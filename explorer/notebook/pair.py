"""Inline Jupyter display of a Pair: HTML and plain-text summaries and the `pair.views` accessor."""

from __future__ import annotations

from explorer.notebook.accessor import SectionViews, section, views_hint
from explorer.pair.model import Pair
from explorer.views.pair import html as pair_html

VIEW_CALLS = ("summary()", "inputs()", "bits()", "heads()", "ladder()", "errors()", "tokens()", "emulations()", "all()")


def summary_html(pair: Pair) -> str:
    """The rich display of a pair: status, sides, inputs, the output sentence, the ladder, tokens, and the views."""
    return pair_html.overview_html(pair) + views_hint(VIEW_CALLS)


def summary_text(pair: Pair) -> str:
    """One line: both packets, the pair status and its codes."""
    codes = [f"{r.side}:{r.problem.code}" for r in pair.refusals] + [r.code for r in pair.reasons]
    listed = f" ({', '.join(codes)})" if codes else ""
    return f"Pair of {pair.a.admission.path} and {pair.b.admission.path}: {pair.status}{listed}"


class PairViews(SectionViews):
    """The pair view's sections, each a Panel viewable to show inline (`pair.views.bits()`)."""

    VIEW = "explorer.views.pair.view"
    CALLS = VIEW_CALLS
    TEXT = summary_text
    summary = section("summary", "Pair status and reasons, the two sides, the selection, notes and limitations.")
    inputs = section("inputs", "Native-byte identity of each input tensor.")
    bits = section("bits", "The output bit-difference map (query head x channel, by ULP distance); click a cell.")
    heads = section("heads", "Differing output elements per query head.")
    ladder = section("ladder", "Each side against its own references, and which is nearer the primary reference.")
    errors = section("errors", "|a - ref| and |b - ref| on one shared colour scale.")
    tokens = section("tokens", "The seed token and both target tokens.")
    emulations = section("emulations", "The emulation x side matrix (pairs compared with `emulate=`).")


views_of = PairViews  # the name explorer.analysis.display.InlineDisplay calls
