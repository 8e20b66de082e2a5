"""Emulations view: every kernel emulation's counts and where the output differs from each.

Emulations view: every kernel emulation's counts (decisive elements first, the baseline row last), a [query
head x channel] map of where the output differs from the selected one on a discrete ULP scale, and an element
drill-down; computes through the core (through the app's runner, with a progress bar, on a served page),
draws only.

Its parameters live in the URL by the emulation ids' own names (`blocks`, `partitionTokens`,
`partialDType`) and `emulationSet` (`settings` or `sweep`): `settings_from_query` reads them
with the kernels' own limits, and the view writes the ones that differ from the defaults into
`Selection.emulation` for the shell to mirror.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from functools import partial

import holoviews as hv
import numpy as np
import panel as pn
import param

from explorer.analysis.analyze import cached_emulations, emulations_of
from explorer.analysis.blocks import baseline_block, emulation_list
from explorer.analysis.emulation import KERNELS, MLX_TWO_PASS, PAGED_TWO_PASS, SWEEP_NAME, ranked
from explorer.analysis.emulation.kernels import BUILDS_NAME, MAX_BLOCKS, MAX_PARTITION_TOKENS, MIN_BLOCKS, Parameter
from explorer.analysis.emulation.shown import (
    DEFAULT_BLOCKS,
    DEFAULT_PARTIAL,
    DEFAULT_PARTITION_TOKENS,
    EMULATION_SETS,
    SETTINGS_SET,
    view_set,
)
from explorer.analysis.result import Analysis, Emulation, EmulationCounts
from explorer.foundations.formatting import MISSING, location, short_number
from explorer.packet.dtypes import DTYPES, ITEM_SIZE
from explorer.views.packet.emulation_tables import BASELINE_LABEL, emulation_table
from explorer.views.shared import html_summary, marks
from explorer.views.shared.common import (
    Field,
    Selection,
    grid_map,
    heading,
    hex_pattern,
    hint,
    html_pane,
    note,
    per_cell,
    plot_pane,
    progress_line,
    show_progress,
    state,
    ulp_value,
)
from explorer.views.shared.markup import esc, table

log = logging.getLogger(__name__)

HEX_DIGITS = {dtype: 2 * size for dtype, size in ITEM_SIZE.items()}
ULP_LABEL = "ULP distance (output vs emulation, output dtype units)"
COLOUR_LABEL = "ULP distance"  # the colour bar's title: short enough for a 16-head map; the hover says the rest
# The map's discrete ULP classes: (lowest distance, tick label, colour); 0 (bit-equal) has a colour of its own.
ULP_CLASSES = (
    (0, "0", "#f2f2f2"),
    (1, "1", "#fdbb84"),
    (2, "2-3", "#fc8d59"),
    (4, "4-7", "#e34a33"),
    (8, "8-15", "#b30000"),
    (16, "16+", "#4a1486"),
)


def _emulation_set(text: str) -> str:
    if text not in EMULATION_SETS:
        raise ValueError
    return text


EMULATION_SET = Parameter("emulationSet", SETTINGS_SET, f"one of {', '.join(EMULATION_SETS)}", _emulation_set)
# URL name -> (the kernel parameter that reads and bounds it, the view's parameter, ASCII shape checked first)
URL_SETTINGS: Mapping[str, tuple[Parameter, str, re.Pattern]] = {
    "blocks": (KERNELS[MLX_TWO_PASS].parameter("blocks"), "blocks", re.compile(r"[0-9]{1,8}")),
    "partitionTokens": (
        KERNELS[PAGED_TWO_PASS].parameter("partitionTokens"),
        "partition_tokens",
        re.compile(r"[0-9]{1,8}"),
    ),
    "partialDType": (KERNELS[PAGED_TWO_PASS].parameter("partialDType"), "partial_dtype", re.compile(r"[a-z0-9]{1,16}")),
    "emulationSet": (EMULATION_SET, "emulation_set", re.compile(r"[a-z]{1,16}")),
}
BREAKABLE = "word-break:break-all"  # long ids as column headings wrap anywhere instead of widening the page
SCROLLING = "max-width:100%;overflow-x:auto"  # a table wider than the column scrolls inside it
ASSUMPTIONS_NOTE = (
    "Each emulation recomputes the output on the CPU following one kernel's published arithmetic; it "
    "is a labelled counterfactual under stated hypotheses, never the reference, and says nothing "
    "about the cause by itself. Read the decisive column first (the elements where the emulations "
    "disagree); the last row is the primary reference rounded to the output dtype."
)


def settings_from_query(query: Mapping[str, str]) -> tuple[dict[str, object], list[tuple[str, str, str]]]:
    """The emulation settings a URL query names ({URL name: value}) and (name, text, what it accepts) of each invalid
    one."""
    settings, problems = {}, []
    for name, (parameter, _, _) in URL_SETTINGS.items():
        text = query.get(name)
        if text is None:
            continue
        try:
            settings[name] = read_setting(name, text)
        except ValueError:
            problems.append((name, text, parameter.accepts))
    return settings, problems


def read_setting(name: str, text: str) -> object:
    """The value of setting `name` (a URL name) written as `text`: ASCII shape first, then the kernel's own limits."""
    parameter, _, shape = URL_SETTINGS[name]
    try:
        if shape.fullmatch(text) is None:
            raise ValueError
        return parameter.read(text)
    except ValueError:
        raise ValueError(f"{name} {text!r} is not {parameter.accepts}") from None


def _hex(bits: int, dtype: str) -> str:
    return f"0x{int(bits):0{HEX_DIGITS[dtype]}X}"


def _share(count: int | None, compared: int) -> str:
    if count is None:
        return MISSING + " (ineligible head)"
    return f"{count} of {compared} ({short_number(100 * count / compared) if compared else MISSING}%)"


def bit_equal_tables(analysis: Analysis, emulations: tuple[Emulation, ...], counts: EmulationCounts) -> str:
    """The counts table (decisive, bit-equal, ULP max, note; baseline last) and per query head (heads x emulations)."""
    head_dim = analysis.admission.tensors["output"].shape[3]
    entries = emulation_list(emulations, analysis.admission.geometry["groupSize"])
    header, rows = emulation_table(
        entries, None if counts.decisive is None else {"global": counts.decisive.count}, baseline_block(counts.baseline)
    )
    cells = [[f'<code style="{BREAKABLE}">{esc(row[0])}</code>', *(esc(cell) for cell in row[1:])] for row in rows]
    overview = table([esc(cell) for cell in header], cells, css_class="emulation-bit-equal")
    shown = [e for e in ranked(emulations) if e.bit_equal_per_head is not None]
    columns = [*(e.bit_equal_per_head for e in shown), counts.baseline.bit_equal_per_head]  # the baseline last
    per_head = table(
        ("query head", *(f'<code style="{BREAKABLE}">{esc(e.id)}</code>' for e in shown), BASELINE_LABEL),
        ((str(h), *(esc(_share(column[h], head_dim)) for column in columns)) for h in range(len(columns[-1]))),
        css_class="emulation-bit-equal-per-head",
    )
    tables = f'<div style="{SCROLLING}">{overview}</div><div style="{SCROLLING}">{per_head}</div>'
    return _builds_html(analysis, emulations) + tables


def _builds_html(analysis: Analysis, emulations: tuple[Emulation, ...]) -> str:
    """Which build wrote the packet, when the set holds the builds (emulation-v4): the sentence that leads the view."""
    from explorer.analysis.emulation.attribution import packet_attribution

    found = packet_attribution(analysis, emulations)
    return "" if found is None else f'<p class="emulation-builds"><b>Builds:</b> {esc(found.sentence)}</p>'


def drilldown_html(analysis: Analysis, emulations: tuple[Emulation, ...], head: int, channel: int) -> str:
    """The output's value and bit pattern at [head, channel] beside every emulation's (those with numbers, table
    order)."""
    output = analysis.admission.tensors["output"]
    dtype = output.dtype
    own = output.bits[0, head, 0, channel]
    rows = [("output", esc(repr(float(output.values[0, head, 0, channel]))), f"<code>{_hex(own, dtype)}</code>", "")]
    for e in ranked(emulations):
        if e.bits is None:
            continue
        equal = "bit-equal" if e.bits[head, channel] == own else f"{e.ulp.distance[head, channel]} ULP apart"
        if e.ulp.distance[head, channel] < 0 and e.bits[head, channel] != own:
            equal = "not compared (ineligible head or nonfinite pair)"
        rows.append(
            (
                f"<code>{esc(e.id)}</code>",
                esc(repr(float(e.values[head, channel]))),
                f"<code>{_hex(e.bits[head, channel], dtype)}</code>",
                esc(equal),
            )
        )
    return f"<p><b>{location(head, channel).capitalize()}</b> (output dtype {esc(dtype)})</p>" + table(
        ("", "value", "bits", "vs output"), rows, css_class="emulation-drilldown"
    )


def ulp_classes(distance: np.ndarray) -> np.ndarray:
    """The map's colour class of each ULP distance (index into ULP_CLASSES), NaN where not compared (drawing only)."""
    lows = np.array([low for low, _, _ in ULP_CLASSES])
    classes = (np.searchsorted(lows, np.maximum(distance, 0), side="right") - 1).astype(np.float64)
    return np.where(distance >= 0, classes, np.nan)


def difference_map(analysis: Analysis, emulation: Emulation) -> hv.Image:
    """[query head x channel] coloured by discrete ULP classes between output and `emulation` (0 = bit-equal: its own
    colour)."""
    distance = emulation.ulp.distance
    colour = ulp_classes(distance)
    output = analysis.admission.tensors["output"]
    bits = ITEM_SIZE[output.dtype] * 8
    kv_heads = [a.kv_head for a in analysis.numerics.attention]
    fields = [
        Field("kv_head", "KV head", per_cell(kv_heads, colour.shape)),
        Field("output", "output", output.values[0, :, 0, :]),
        Field("output_bits", "output bits", output.bits[0, :, 0, :].astype(np.int64), lambda: hex_pattern(bits)),
        Field("emulation", "emulation", emulation.values),
        Field("emulation_bits", "emulation bits", emulation.bits.astype(np.int64), lambda: hex_pattern(bits)),
        Field("ulp", ULP_LABEL, distance, ulp_value),
    ]
    return grid_map(
        colour,
        fields,
        title=f"output vs {emulation.id}",
        colour_label=COLOUR_LABEL,
        clim=(-0.5, len(ULP_CLASSES) - 0.5),
        cmap=[colour for _, _, colour in ULP_CLASSES],
        categories=[label for _, label, _ in ULP_CLASSES],  # the colour bar's ticks at the class centres
    )


def map_parts(analysis: Analysis, emulation: Emulation) -> list:
    """The map of where the output differs from `emulation`, a lone differing element ringed as the Overview rings
    it; or, where every compared element is bit-equal, the sentence saying so (nothing to draw)."""
    differing = emulation.ulp.distance > 0
    if not differing.any():
        compared = int(np.count_nonzero(emulation.ulp.distance >= 0))
        return [
            state(
                f"<b>All equal</b>: the {compared} compared output elements are bit-equal to "
                f"<code>{esc(emulation.id)}</code>; there is nothing to draw.",
                "emulation-all-equal",
            )
        ]
    image, ringed = marks.ring_isolated(difference_map(analysis, emulation), differing, "differing")
    return [plot_pane(image), *([note(ringed, "emulation-ringed")] if ringed else [])]


def first_shown(emulations: tuple[Emulation, ...]) -> str:
    """The emulation the map opens on: the most decisive matches (else bit-equal), ties in request order; "" when
    none has numbers."""
    return next((e.id for e in ranked(emulations) if e.bits is not None), "")


class EmulationsView(pn.viewable.Viewer):
    """The Emulations view of one analysis; computes when first shown, in a background thread."""

    blocks = param.Integer(default=DEFAULT_BLOCKS, bounds=(MIN_BLOCKS, MAX_BLOCKS), doc="Blocks of the MLX kernel.")
    partition_tokens = param.Integer(
        default=DEFAULT_PARTITION_TOKENS, bounds=(1, MAX_PARTITION_TOKENS), doc="Paged kernel partition size in tokens."
    )
    partial_dtype = param.Selector(
        default=DEFAULT_PARTIAL,
        objects=list(DTYPES),
        doc="Partial dtype of the counterfactual variant of each kernel with partials.",
    )
    emulation_set = param.Selector(
        default=SETTINGS_SET,
        objects=list(EMULATION_SETS),
        doc="The view's own emulations and the real library, every MLX build's launch (builds), or the sweep.",
    )
    selected = param.String(default="", doc="The emulation id the difference map shows.")
    emulations = param.Parameter(
        default=None, doc="The computed emulations (a tuple, request order), None until computed."
    )
    counts = param.Parameter(default=None, doc="Their decisive elements and baseline (EmulationCounts).")
    running = param.Boolean(default=False, doc="True while a computation runs.")

    def __init__(self, analysis: Analysis, selection: Selection | None = None, runner=None, **params):
        """`runner` (the app's explorer.ui.background.Runner: `run(work, answer)`, `relay(callback)`) computes the set
        off the page when the view is shown; without one the view computes when shown (exports, notebooks)."""
        super().__init__(**params)
        self.analysis, self._runner = analysis, runner
        self.selection = selection if selection is not None else Selection()
        self.param.update({URL_SETTINGS[name][1]: value for name, value in self.selection.emulation.items()})
        self._lock = threading.Lock()
        self._generation = 0
        self._mode: str | None = None  # "background" once shown on a page, "synchronous" after compute()
        self._progress, self._progress_note = progress_line()
        self._settings_note = html_pane("", css_classes=["emulation-settings-note"])
        self._tables = html_pane("", css_classes=["emulation-tables"])
        self._choice = pn.widgets.Select(label="map: output vs", options=[], width=380)
        self._map = pn.Column(sizing_mode="stretch_width", css_classes=["emulation-map"])
        self._drilldown = html_pane("", css_classes=["emulation-drilldown-pane"])
        self._tap = None
        self._choice.link(self, value="selected", bidirectional=True)
        self.param.watch(self._restart, ["blocks", "partition_tokens", "partial_dtype", "emulation_set"])
        self.param.watch(self._show, ["emulations", "selected"])
        self.selection.param.watch(self._show_element, "element")
        self.param.watch(self._show_running, ["running"])
        self._layout = self._build()

    # ------------------------------------------------------------ computation

    def ids(self) -> list[str]:
        return list(view_set(self.settings()))

    def settings(self) -> dict[str, object]:
        """{URL name: value} of the parameters that differ from their defaults."""
        return {
            name: getattr(self, attribute)
            for name, (_, attribute, _) in URL_SETTINGS.items()
            if getattr(self, attribute) != self.param[attribute].default
        }

    def _next_generation(self) -> int:
        with self._lock:
            self._generation += 1
            return self._generation

    def compute(self) -> None:
        """Compute the current set now, in this thread (tests, notebooks, exports); later parameter changes do too."""
        self._mode = self._mode or "synchronous"
        generation, ids = self._next_generation(), self.ids()
        self._deliver(generation, *self._attempt(ids, lambda done, total: None))

    def start(self) -> None:
        """Ask the runner the view was given for the current set; the page stays responsive, a progress bar shows.

        The runner calls the core off the page and hands the results to the session's event
        loop (drawing only), so the loop never waits for the computation. A set this content
        already has (another session's, or these settings earlier) is shown at once.
        """
        self._mode = self._mode or "background"
        generation, ids = self._next_generation(), self.ids()
        cached = cached_emulations(self.analysis, ids)
        if cached is not None:
            self._deliver(generation, cached, "")
            return
        self.running = True
        progress = self._runner.relay(partial(self._show_progress, generation))
        self._runner.run(partial(self._attempt, ids, progress), lambda outcome, _: self._deliver(generation, *outcome))

    def _attempt(self, ids: list[str], progress) -> tuple[object, str]:
        """(the core's emulations and counts, '') or (None, why they could not be computed)."""
        started = time.perf_counter()
        try:
            found, failure = emulations_of(self.analysis, ids, progress=progress), ""
        except Exception as error:  # a programming error must not leave the progress bar running forever
            log.exception("emulations %s failed", ids)
            found, failure = None, f"The emulations could not be computed: {type(error).__name__}: {error}"
        log.info("emulations %s ready after %.3f s", ",".join(ids), time.perf_counter() - started)
        return found, failure

    def _deliver(self, generation: int, found, failure: str) -> None:
        with self._lock:
            if generation != self._generation:
                return  # the parameters changed meanwhile: a newer computation runs
        emulations, counts = (None, None) if found is None else found
        self.counts = counts
        self.emulations = emulations  # drawn first: the progress bar goes once the tables and map are there
        self.running = False
        if failure:
            self._progress_note.object = esc(failure)

    def _show_progress(self, generation: int, done: int, total: int) -> None:
        if generation == self._generation and self.running:
            show_progress(self._progress, self._progress_note, done, total)

    def _restart(self, *_events) -> None:
        self.selection.emulation = self.settings()
        if self._mode == "background":
            self.start()
        elif self._mode == "synchronous":
            self.compute()

    # ------------------------------------------------------------ drawing

    def _build(self) -> pn.Column:
        box = html_summary.explanation_html(self.analysis, html_summary.NEEDS_NUMERICS, "the kernel emulations")
        status = [html_pane(box)] if box else []  # every status but analyzed says so first, as in the other views
        if self.analysis.numerics is None or self.analysis.admission.tensors is None:
            return pn.Column(*status, sizing_mode="stretch_width", css_classes=["view-emulations"])
        controls = pn.FlexBox(
            pn.widgets.Select.from_param(self.param.emulation_set, label="emulations", width=150),
            self._integer_input("blocks", "MLX blocks", 140),
            self._integer_input("partitionTokens", "paged partition tokens", 180),
            pn.widgets.Select.from_param(self.param.partial_dtype, label="variant partial dtype", width=180),
            sizing_mode="stretch_width",
        )
        return pn.Column(
            *status,
            heading(
                "Kernel arithmetic emulations",
                "Output elements whose bit pattern equals each emulation's (eligible heads only), on the decisive "
                f"elements and on all of them. {esc(ASSUMPTIONS_NOTE)} The sweep is every launch rule and "
                "arithmetic hypothesis; the settings set is the MLX and paged two-pass kernels with the blocks, "
                "partition tokens and partial dtype given here, and the single-pass kernel, each listed once per "
                "distinct partial dtype, and the installed MLX library's own run where MLX is installed.",
            ),
            controls,
            self._settings_note,
            pn.Row(self._progress, self._progress_note),
            self._tables,
            heading(
                "Where the output differs from one emulation",
                "ULP distance per element in classes: 0 (bit-equal) "
                "has a colour of its own, then 1, 2-3, 4-7, 8-15 and 16 or more; grey: not compared.",
            ),
            self._choice,
            self._map,
            hint("Click a cell of the map for every emulation's value and bits there."),
            self._drilldown,
            sizing_mode="stretch_width",
            css_classes=["view-emulations"],
        )

    def _integer_input(self, name: str, label: str, width: int) -> pn.widgets.LiteralInput:
        """A plain text box for integer setting `name` (no spin buttons); a value out of the kernel's limits is
        refused with a note, the computed set stays."""
        attribute = URL_SETTINGS[name][1]
        box = pn.widgets.LiteralInput(label=label, value=getattr(self, attribute), type=int, width=width)

        def typed(event) -> None:
            try:
                value = read_setting(name, str(event.new))
            except ValueError as error:
                self._settings_note.object = f"<p>{esc(error)}; kept {getattr(self, attribute)}.</p>"
                return
            self._settings_note.object = ""
            setattr(self, attribute, value)

        box.param.watch(typed, "value")
        self.param.watch(lambda event: setattr(box, "value", event.new), attribute)
        return box

    def _show_running(self, _event=None) -> None:
        self._progress.param.update(visible=self.running, active=True, value=-1)
        named = {SWEEP_NAME: "the sweep", BUILDS_NAME: "every build's launch"}
        request = named.get(self.emulation_set, f"{len(self.ids())} emulations")
        self._progress_note.object = f"Computing {request} on the CPU ..." if self.running else ""

    def _show(self, _event=None) -> None:
        emulations = self.emulations
        if not emulations or self.counts is None:
            return
        drawn = [e.id for e in ranked(emulations) if e.bits is not None]
        self._choice.options = drawn
        if drawn and self.selected not in drawn:
            self.selected = first_shown(emulations)  # the watcher draws again with it
            return
        self._tables.object = bit_equal_tables(self.analysis, emulations, self.counts)
        if not drawn:  # every entry without numbers: the table says why, there is no map to draw
            self._map.objects = []
            return
        chosen = next(e for e in emulations if e.id == self.selected)
        self._map.objects = map_parts(self.analysis, chosen)
        pane = next((part for part in self._map.objects if isinstance(part, pn.pane.HoloViews)), None)
        self._tap = None if pane is None else hv.streams.Tap(source=pane.object, x=None, y=None)
        if self._tap is not None:
            self._tap.add_subscriber(self._on_tap)
        self._show_element()

    def _on_map(self, head: int, channel: int) -> bool:
        """(head, channel) is a cell of the map of computed emulations."""
        if not self.emulations:
            return False
        heads, channels = self.analysis.numerics.eligible.size, self.analysis.admission.tensors["output"].shape[3]
        return 0 <= head < heads and 0 <= channel < channels

    def _on_tap(self, x=None, y=None) -> None:
        if x is not None and y is not None and self._on_map(round(y), round(x)):
            self.selection.element = (round(y), round(x))  # the shell shows its element panel and writes the URL

    def _show_element(self, _event=None) -> None:
        """The drill-down of the selected element (a click on any map, or the URL's element=)."""
        element = self.selection.element
        if element is not None and self._on_map(*element):
            self._drilldown.object = drilldown_html(self.analysis, self.emulations, *element)

    def select_element(self, head: int, channel: int) -> None:
        """Show the drill-down of one element, as a click on the map does."""
        self._on_tap(x=channel, y=head)

    def __panel__(self) -> pn.viewable.Viewable:
        """The layout; showing it starts the computation: in the background on a served page, else now."""
        if self._mode is None and self.analysis.numerics is not None:
            self.start() if self._runner is not None else self.compute()
        return self._layout


def build(analysis: Analysis, selection: Selection | None = None, runner=None) -> pn.viewable.Viewable:
    """The registry builder: the view's layout, its computation started (see `EmulationsView.__panel__`)."""
    return EmulationsView(analysis, selection, runner).__panel__()
