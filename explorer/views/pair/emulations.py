"""The pair view's Kernel emulations section: the emulation x side matrix with the differing counts.

A pair compared with `emulate=` shows its matrix at once; otherwise, on a served page, a set choice and a button
hand `with_emulations` to the app's runner. Without a runner (exports, notebooks) only what the pair holds shows.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import panel as pn

from explorer.analysis.emulation import DEFAULT_SET_NAME, SWEEP_NAME
from explorer.pair.emulation import with_emulations
from explorer.pair.model import Pair
from explorer.views.pair import html as pair_html
from explorer.views.shared.common import collapsed, heading, html_pane, progress_line, section, show_progress
from explorer.views.shared.markup import esc

SETS = {"the default set": DEFAULT_SET_NAME, "the sweep (a few seconds)": SWEEP_NAME}


def matrix_parts(pair: Pair) -> list:
    """The matrix and its per-head table of a pair that holds emulations (or the sentence saying why not)."""
    parts = [html_pane(pair_html.emulation_matrix_html(pair), css_classes=["pair-emulation-matrix-pane"])]
    markup = pair_html.emulation_matrix_per_head_html(pair)
    if markup:
        parts.append(collapsed("Kernel emulations, per query head", html_pane(markup)))
    return parts


class PairEmulationsSection(pn.viewable.Viewer):
    """The section of one pair: its matrix, or (served, none requested yet) a set choice and a Compute button."""

    def __init__(
        self,
        pair: Pair,
        on_computed: Callable[[Pair], None] = lambda pair: None,
        runner=None,
        on_emulated: Callable[[str], None] = lambda request: None,
        **params,
    ):
        """`runner` (the app's) computes a set off the page; `on_computed(pair)` and `on_emulated(request)` hear it."""
        super().__init__(**params)
        self.pair, self._runner = pair, runner
        self._on_computed, self._on_emulated = on_computed, on_emulated
        self._request: str | None = None
        self._choice = pn.widgets.Select(label="emulations", options=list(SETS), width=220)
        self._button = pn.widgets.Button(
            label="Compute the emulation x side matrix",
            color="primary",
            width=280,
            css_classes=["pair-emulations-compute"],
        )
        self._progress, self._progress_note = progress_line()
        self._body = pn.Column(sizing_mode="stretch_width")
        self._button.on_click(self._start)
        lead = heading(
            "Kernel emulations",
            "Output elements of each side whose bit pattern equals each emulation's: "
            "on the decisive elements (where the emulations disagree), on the differing ones (where the "
            "two outputs differ) and on all of them.",
        )
        self._layout = section("pair-emulations", lead, self._body)
        if pair.emulation is not None or runner is None:
            self._body.objects = matrix_parts(pair)
        else:
            self._body.objects = [pn.Row(self._choice, self._button), pn.Row(self._progress, self._progress_note)]

    def _start(self, _event=None) -> None:
        request = self._request = SETS[self._choice.value]
        self._button.disabled = True
        self._progress.visible = True
        self._progress_note.object = f"Computing {esc(self._choice.value)} on the CPU ..."
        progress = self._runner.relay(partial(show_progress, self._progress, self._progress_note))
        self._runner.run(partial(with_emulations, self.pair, request, progress), self._answer)

    def _answer(self, found: Pair | None, error: BaseException | None) -> None:
        failure = "" if error is None else f"The emulations could not be computed: {type(error).__name__}: {error}"
        self._deliver(found, failure)

    def _deliver(self, found: Pair | None, failure: str) -> None:
        if found is None:
            self._progress.visible = False
            self._button.disabled = False
            self._progress_note.object = esc(failure)
            return
        self.pair = found
        self._body.objects = matrix_parts(found)
        self._on_computed(found)
        if self._request is not None:
            self._on_emulated(self._request)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
