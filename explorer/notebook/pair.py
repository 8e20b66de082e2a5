"""Inline Jupyter display of a Pair: HTML and plain-text summaries and the `pair.views` accessor.

Inline Jupyter display of a Pair: its compact HTML and plain-text summaries and the `pair.views` accessor;
never computes a number and imports Panel only when a view is built.
"""

from __future__ import annotations

from explorer.pair.model import Pair
from explorer.views.pair import html as pair_html

VIEW_CALLS = ("summary()", "inputs()", "bits()", "heads()", "ladder()", "errors()", "tokens()", "emulations()", "all()")
HINT_STYLE = "color:#555;font-size:0.85em;margin:0.2em 0"


def summary_html(pair: Pair) -> str:
    """The rich display of a pair: status, sides, inputs, the output sentence, the ladder, tokens, and the views."""
    calls = ", ".join(f"<code>.views.{call}</code>" for call in VIEW_CALLS)
    return pair_html.overview_html(pair) + f'<p class="views-hint" style="{HINT_STYLE}">Inline views: {calls}.</p>'


def summary_text(pair: Pair) -> str:
    """One line: both packets, the pair status and its codes."""
    codes = [f"{r.side}:{r.problem.code}" for r in pair.refusals] + [r.code for r in pair.reasons]
    listed = f" ({', '.join(codes)})" if codes else ""
    return f"Pair of {pair.a.admission.path} and {pair.b.admission.path}: {pair.status}{listed}"


class PairViews:
    """The pair view's sections, each a Panel viewable to show inline (`pair.views.bits()`)."""

    def __init__(self, pair: Pair) -> None:
        self._pair = pair

    def __repr__(self) -> str:
        return f"Views of {summary_text(self._pair)}: " + ", ".join(VIEW_CALLS)

    def _section(self, name: str):
        from explorer.views.pair.view import SECTIONS

        return SECTIONS[name][1](self._pair)

    def summary(self):
        """Pair status and reasons, the two sides, the selection, notes and limitations."""
        return self._section("summary")

    def inputs(self):
        """Native-byte identity of each input tensor."""
        return self._section("inputs")

    def bits(self):
        """The output bit-difference map (query head x channel, by ULP distance); click a cell for its values."""
        return self._section("bits")

    def heads(self):
        """Differing output elements per query head."""
        return self._section("heads")

    def ladder(self):
        """Each side against its own references, and which output is nearer the primary reference."""
        return self._section("ladder")

    def errors(self):
        """|a - ref| and |b - ref| on one shared colour scale."""
        return self._section("errors")

    def tokens(self):
        """The seed token and both target tokens."""
        return self._section("tokens")

    def emulations(self):
        """The emulation x side matrix (pairs compared with `emulate=`)."""
        return self._section("emulations")

    def all(self):
        """The whole pair view (what the app and the export show)."""
        from explorer.views.pair.view import build

        return build(self._pair)


views_of = PairViews  # the name explorer.analysis.display.InlineDisplay calls
