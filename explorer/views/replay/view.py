"""Replay view: an operator replay run against its packet; draws only what the Replay result holds.

`build(run)` is the whole view (the app and the export); each `*_section(run)` is one part of it (the notebook
accessor `run.views.<name>()`).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import panel as pn
import param

from explorer.packet.dtypes import FIELD_BITS
from explorer.replay.model import Replay
from explorer.views.replay import html as replay_html
from explorer.views.shared.common import (
    Field,
    grid_map,
    heading,
    hex_pattern,
    hint,
    html_pane,
    named,
    note,
    per_cell,
    plot_pane,
    section,
    state,
)
from explorer.views.shared.marks import ElementExplorer
from explorer.views.shared.markup import swatches

# Per-element codes of the difference map, with their colours.
SAME, CAPTURE_ONLY, PARTNER_ONLY, BOTH = 0, 1, 2, 3
CODE_NAMES = ("equal to both", "differs from the capture", "differs from the partner", "differs from both")
CODE_COLOURS = ("#f4f4f4", "#e34a33", "#3b7dbf", "#6a1b9a")
ARM_CHOICE_LABEL = "arm drawn"  # the map's arm choice, written as "arm drawn: NAME" in an export


def difference_codes(run: Replay, arm: str) -> np.ndarray:
    """int [QH, D]: where the arm's output differs from the capture (1), the partner (2) or both (3)."""
    result = run.arms[arm]
    codes = result.capture.differs.astype(np.int8)
    if result.partner is not None:
        codes = codes + 2 * result.partner.differs.astype(np.int8)
    return codes


def _legend(with_partner: bool) -> str:
    shown = [
        (name, colour)
        for code, (name, colour) in enumerate(zip(CODE_NAMES, CODE_COLOURS, strict=True))
        if with_partner or code in (SAME, CAPTURE_ONLY)
    ]
    return f'<div class="replay-legend">{swatches(shown)}</div>'


def difference_map(run: Replay, arm: str) -> hv.Image:
    """Query head x channel: where `arm` differs from the capture and the partner; hover gives every value exactly."""
    result = run.arms[arm]
    codes = difference_codes(run, arm)
    capture = run.packet.admission.tensors["output"]
    digits = sum(FIELD_BITS[capture.dtype])
    kv_heads = np.arange(codes.shape[0]) // run.packet.admission.geometry["groupSize"]
    fields = [
        Field("kv_head", "KV head", per_cell(kv_heads, codes.shape)),
        Field("code", "element", codes, lambda: named(CODE_NAMES)),
        Field("arm", arm, result.output_values),
        Field("arm_bits", f"{arm} bits", result.output_bits, lambda: hex_pattern(sum(FIELD_BITS[result.output_dtype]))),
        Field("capture", "capture", capture.values[0, :, 0, :]),
        Field("capture_bits", "capture bits", capture.bits[0, :, 0, :], lambda: hex_pattern(digits)),
    ]
    if result.partner is not None:
        partner = run.partner.admission.tensors["output"]
        partner_digits = sum(FIELD_BITS[partner.dtype])
        fields += [
            Field("partner", "partner", partner.values[0, :, 0, :]),
            Field("partner_bits", "partner bits", partner.bits[0, :, 0, :], lambda: hex_pattern(partner_digits)),
        ]
    return grid_map(
        codes.astype(float),
        fields,
        title=f"Where {arm} differs from the capture" + (" and the partner" if result.partner is not None else ""),
        colour_label="element",
        clim=(-0.5, BOTH + 0.5),
        cmap=list(CODE_COLOURS),
        colorbar=False,
    )


def _first_difference(run: Replay, arm: str) -> tuple[int, int]:
    """The first element where the arm differs from the capture, else from the partner, else (0, 0)."""
    result = run.arms[arm]
    for difference in (result.capture, result.partner):
        if difference is not None and difference.first_positions:
            return difference.first_positions[0]
    return 0, 0


class DifferenceExplorer(ElementExplorer):
    """The chosen arm's difference map; a click (tap) on a cell shows that element of every output below."""

    arm = param.String(default="", doc="The arm drawn.")

    def __init__(self, run: Replay, **params):
        readable = [name for name, arm in run.arms.items() if arm.readable]
        params.setdefault("arm", readable[0])
        super().__init__(_first_difference(run, params["arm"]), **params)
        self._run = run
        self._choice = pn.widgets.RadioButtonGroup(
            label=ARM_CHOICE_LABEL, options=readable, value=self.arm, color="light", css_classes=["replay-arm-choice"]
        )
        self._choice.param.watch(lambda event: setattr(self, "arm", event.new), "value")
        self._legend = html_pane(_legend(run.arms[self.arm].partner is not None))
        self._plot = plot_pane(difference_map(run, self.arm))
        self._detail = html_pane(
            replay_html.element_html(run, self.head, self.channel), css_classes=["replay-element-detail"]
        )
        self._listen(self._plot, run.arms[self.arm].output_values.shape)

    @param.depends("arm", watch=True)
    def _redraw(self) -> None:
        self._plot.object = difference_map(self._run, self.arm).opts(
            backend_opts={"plot.output_backend": "canvas"}, clone=True
        )
        self._listen(self._plot, self._shape)

    @param.depends("head", "channel", watch=True)
    def _show(self) -> None:
        self._detail.object = replay_html.element_html(self._run, self.head, self.channel)

    def __panel__(self):
        return pn.Column(
            self._choice,
            self._legend,
            self._plot,
            hint("Click a cell to show that element of every output below; hover a cell for exact values."),
            self._detail,
            sizing_mode="stretch_width",
            css_classes=["replay-map"],
        )


def summary_section(run: Replay) -> pn.Column:
    report = run.report()
    reading = [state(replay_html.reading_html(report), "replay-reading")] if report["matrix"] is not None else []
    status, table = html_pane(replay_html.status_html(run)), html_pane(replay_html.run_table(report))
    return section("replay-summary", heading("Replay run"), *reading, status, table)


def matrix_section(run: Replay) -> pn.Column:
    lead = heading("Matrix", "Every output against every other, in elements whose bit patterns differ.")
    return section("replay-matrix-section", lead, html_pane(replay_html.matrix_html(run)))


def arms_section(run: Replay) -> pn.Column:
    report = run.report()
    problems = replay_html.problems_html(report)
    return section(
        "replay-arms-section",
        heading("Arms", "Each arm's state and what it says it did (result.json, execution.json)."),
        html_pane(replay_html.arms_table(report)),
        *([html_pane(problems)] if problems else []),
    )


def ladder_section(run: Replay) -> pn.Column:
    return section(
        "replay-ladder-section",
        heading(
            "Ladder",
            "Each arm's output against the packet's references (global metrics, 4 "
            "significant digits; a linf and the ULP max with the element where they are). "
            "analysis.json: whether the replay tool's own numbers lie within what a second correct "
            "FP32 reference can give around these (docs/replay.md).",
        ),
        hint("Hover a number for its full value."),
        html_pane(replay_html.ladder_table(run.report())),
    )


def map_section(run: Replay) -> pn.Column:
    lead = heading(
        "Where an arm differs", "Query head x channel of the chosen arm's output, against the capture and the partner."
    )
    readable = any(arm.readable for arm in run.arms.values())
    return section(
        "replay-map-section",
        lead,
        DifferenceExplorer(run) if readable else note("No arm's output was read: nothing to map."),
    )


def readback_section(run: Replay) -> pn.Column:
    lead = heading("Readback", "The K/V each paged arm read back from its cache, against the packet's.")
    return section("replay-readback-section", lead, html_pane(replay_html.readback_table(run.report())))


def notes_section(run: Replay) -> pn.Column:
    notes = html_pane(replay_html.notes_html(run.report()))
    return section("replay-notes", heading("Notes and limitations"), notes)


# name -> (title, section builder), in display order
SECTIONS = {
    "summary": ("Replay run", summary_section),
    "matrix": ("Matrix", matrix_section),
    "arms": ("Arms", arms_section),
    "ladder": ("Ladder", ladder_section),
    "map": ("Where an arm differs", map_section),
    "readback": ("Readback", readback_section),
    "notes": ("Notes", notes_section),
}


def build(run: Replay) -> pn.Column:
    """The whole replay view: every section (a refused run: its status and notes only)."""
    names = ["summary", "notes"] if run.matrix is None else list(SECTIONS)
    return section("view-replay", *(SECTIONS[name][1](run) for name in names))
