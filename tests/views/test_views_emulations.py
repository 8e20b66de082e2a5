"""The Emulations view: bit-equal tables, the ULP difference map, the drill-down, parameters.

The Emulations view: bit-equal tables, the ULP difference map, the drill-down, parameters and the background
computation.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import panel as pn
from bokeh.models import ColorBar

from explorer.analysis.analyze import emulations_of
from explorer.analysis.emulation import ranked
from explorer.analysis.emulation.shown import DEFAULT_BLOCKS, DEFAULT_PARTIAL, DEFAULT_PARTITION_TOKENS, settings_set
from explorer.ui.background import Runner
from explorer.views.packet.emulations import (
    ULP_CLASSES,
    URL_SETTINGS,
    EmulationsView,
    settings_from_query,
    ulp_classes,
)

from views_support import images_by_title, models, render, text, tooltips

WAIT_SECONDS = 120


def _computed(analysis, **params) -> EmulationsView:
    view = EmulationsView(analysis, **params)
    view.compute()
    return view


def test_the_tables_hold_every_emulations_counts_in_table_order_with_the_baseline_last(analyses):
    analysis = analyses["qwen36-bf16-t64"]
    view = _computed(analysis)
    assert [e.id for e in view.emulations] == [
        "mlx_two_pass",
        "mlx_two_pass(partialDType=float32)",
        "paged_two_pass",
        "single_pass",
        "mlx_run",
    ]  # the default set
    shown = text(pn.panel(view))
    run = next(e for e in view.emulations if e.id == "mlx_run")  # a row of its own: the real library, here
    assert f"the real library, on this machine: mlx {run.library['version']} on the cpu" in shown
    # what a CPU run is beside a GPU packet (issue 39)
    assert (
        "here MLX&#x27;s CPU path, which rounds every step to the packet&#x27;s dtype, so it is expected to differ"
        in shown
    )
    decisive = view.counts.decisive.count
    order = [shown.index(f">{e.id}</code>") for e in ranked(view.emulations)]
    assert order == sorted(order) and order[-1] < shown.index("rounded reference (baseline)")
    for e in view.emulations:
        assert f"{e.bit_equal_decisive} of {decisive}" in shown and f"{e.bit_equal} of {e.compared}" in shown
        for count in set(e.bit_equal_per_head):
            assert f"{count} of 256" in shown
    assert f"{view.counts.baseline.bit_equal} of {view.emulations[0].compared}" in shown
    assert view.selected == ranked(view.emulations)[0].id  # the map opens on the most decisive matches


def test_the_map_classes_keep_zero_apart_from_one():
    distance = np.array([[0, 1, 2, 3, 4, 7, 8, 15, 16, 10**6, -1]])
    classes = ulp_classes(distance)
    np.testing.assert_array_equal(classes[0, :-1], [0, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    assert np.isnan(classes[0, -1]) and len({colour for _, _, colour in ULP_CLASSES}) == len(ULP_CLASSES)


def test_the_map_colours_the_ulp_distance_to_the_selected_emulation(analyses):
    analysis = analyses["qwen36-bf16-t64"]
    view = _computed(analysis)
    for emulation in view.emulations:
        view.selected = emulation.id
        maps = images_by_title(render(pn.panel(view)))
        if not (emulation.ulp.distance > 0).any():  # all equal: said, nothing drawn (the test below)
            assert maps == {} and "All equal" in text(pn.panel(view))
            continue
        assert list(maps) == [f"output vs {emulation.id}"]
        data = maps[f"output vs {emulation.id}"].data_source.data
        distance = emulation.ulp.distance
        np.testing.assert_array_equal(data["image"][0], ulp_classes(distance))
        np.testing.assert_array_equal(data["ulp"][0], distance)
        np.testing.assert_array_equal(data["emulation"][0], emulation.values)
        np.testing.assert_array_equal(data["output"][0], analysis.admission.tensors["output"].values[0, :, 0, :])
    document = render(pn.panel(view))
    labels = tooltips(document)
    for label in ("query head", "channel", "output bits", "emulation bits"):
        assert label in labels
    (bar,) = models(document, ColorBar)  # one tick per class, at its centre, named by its ULP range
    assert [bar.major_label_overrides[tick] for tick in bar.ticker.ticks] == [label for _, label, _ in ULP_CLASSES]


def test_a_click_lists_every_emulations_value_and_bits_beside_the_output(analyses):
    analysis = analyses["qwen36-bf16-t64"]
    view = _computed(analysis)
    view.selected = "paged_two_pass"  # a map with a difference to click (the first shown is all equal)
    render(pn.panel(view))
    view._tap.event(x=7, y=3)  # what a click on cell (head 3, channel 7) sends
    shown = view._drilldown.object
    output = analysis.admission.tensors["output"]
    assert "Query head 3, channel 7" in shown
    assert f"0x{int(output.bits[0, 3, 0, 7]):04X}" in shown and repr(float(output.values[0, 3, 0, 7])) in shown
    for e in view.emulations:
        assert f"<code>{e.id}</code>" in shown and f"0x{int(e.bits[3, 7]):04X}" in shown


def test_ineligible_heads_show_no_count(analyses):
    analysis = analyses["nan-stored-values"]
    view = _computed(analysis)
    shown = text(pn.panel(view))
    ineligible = np.flatnonzero(~analysis.numerics.eligible)
    with_numbers = sum(e.bit_equal_per_head is not None for e in view.emulations)
    assert ineligible.size and shown.count("ineligible head") == ineligible.size * (with_numbers + 1)
    view.select_element(int(ineligible[0]), 0)
    assert "not compared" in view._drilldown.object


def test_parameters_change_the_emulations_computed(analyses):
    analysis = analyses["qwen36-bf16-t64"]
    view = _computed(analysis, blocks=64, partition_tokens=32, partial_dtype="float16")
    assert [e.id for e in view.emulations] == [
        "mlx_two_pass(blocks=64)",
        "mlx_two_pass(blocks=64,partialDType=float16)",
        "paged_two_pass(partitionTokens=32)",
        "paged_two_pass(partitionTokens=32,partialDType=float16)",
        "single_pass",
        "mlx_run",
    ]
    view.blocks = 32
    assert view.emulations[0].id == "mlx_two_pass(blocks=32)"
    assert "mlx_two_pass(blocks=32)" in text(pn.panel(view))
    view.emulation_set = "sweep"
    assert view.emulations == emulations_of(analysis, "sweep")[0] and len(view.emulations) > 20
    assert list(settings_set(128, 256, "float32"))[:2] == [
        "mlx_two_pass(blocks=128)",
        "mlx_two_pass(blocks=128,partialDType=float32)",
    ]


def test_without_numerics_the_view_explains_and_computes_nothing(analyses):
    view = EmulationsView(analyses["discarded-sample"])
    shown = text(pn.panel(view))
    assert "No reference was computed" in shown
    assert view.emulations is None and not view.running and not images_by_title(render(pn.panel(view)))


def test_shown_on_a_page_it_computes_in_the_background_with_a_progress_bar(analyses, monkeypatch):
    import explorer.views.packet.emulations as module

    analysis = analyses["clean-fp32q-bf16kv"]
    release, entered = threading.Event(), threading.Event()

    def held(*args, **kwargs):  # the core's computation, held until the test has looked at the running view
        entered.set()
        release.wait(WAIT_SECONDS)
        return emulations_of(*args, **kwargs)

    monkeypatch.setattr(module, "emulations_of", held)
    monkeypatch.setattr(module, "cached_emulations", lambda *args: None)  # as if no session computed them yet
    view = EmulationsView(analysis, runner=Runner(inline=False))  # the runner of a served page
    view.start()  # what showing the view on a served page does: hands the work to the runner and returns at once
    layout = view.__panel__()
    assert entered.wait(WAIT_SECONDS) and view.emulations is None
    assert view.running and view._progress.visible and "Computing" in view._progress_note.object
    release.set()
    deadline = time.monotonic() + WAIT_SECONDS
    while view._progress.visible and time.monotonic() < deadline:  # hidden after the drawing
        time.sleep(0.05)
    assert not view.running and not view._progress.visible
    expected = emulations_of(analysis, settings_set(view.blocks, view.partition_tokens, view.partial_dtype))
    assert view.emulations is expected[0]  # the core's cached result, not a view-side computation
    assert images_by_title(render(layout))


def test_emulations_this_content_already_has_are_shown_at_once_without_a_thread(analyses):
    analysis = analyses["clean-fp32q-bf16kv"]
    expected = emulations_of(analysis, settings_set(DEFAULT_BLOCKS, DEFAULT_PARTITION_TOKENS, DEFAULT_PARTIAL))
    started = []

    class Recorded:  # a runner that only records the work, never runs it
        def run(self, work, answer) -> None:
            started.append(work)

        def relay(self, callback):
            return callback

    view = EmulationsView(analysis, runner=Recorded())
    view.start()
    assert view.emulations is expected[0] and not view.running and not view._progress.visible and not started
    assert images_by_title(render(view.__panel__()))
    view.blocks = DEFAULT_BLOCKS + 32  # a set not computed yet still goes to a thread
    assert len(started) == 1 and view.running


def test_the_registry_builder_computes_at_once_outside_a_served_page(analyses):
    from explorer.views import VIEWS, Selection

    analysis = analyses["qwen36-bf16-t64"]
    builder = {slug: builder for slug, _, builder in VIEWS}["emulations"]
    layout = builder(analysis, Selection())  # an export or a notebook: no session, so no thread and no progress bar
    shown = text(layout)
    expected, _ = emulations_of(analysis, "default")
    for e in expected:
        assert f">{e.id}</code>" in shown and f"{e.bit_equal} of {e.compared}" in shown
    assert "Computing" not in shown
    first = ranked(expected)[0]  # reproduces every element here: said, not drawn as an empty map
    assert not (first.ulp.distance > 0).any()
    assert f"bit-equal to <code>{first.id}</code>; there is nothing to draw" in shown
    assert list(images_by_title(render(layout))) == []


def test_url_settings_are_read_with_the_kernels_own_limits():
    settings, problems = settings_from_query(
        {"blocks": "64", "partitionTokens": "128", "partialDType": "float32", "emulationSet": "sweep", "head": "3"}
    )
    assert settings == {"blocks": 64, "partitionTokens": 128, "partialDType": "float32", "emulationSet": "sweep"}
    assert problems == []
    for name, text_value in (
        ("blocks", "0"),
        ("blocks", "-1"),
        ("blocks", "1025"),
        ("blocks", "1056"),
        ("blocks", "\u00b2"),
        ("emulationSet", "all"),
        ("emulationSet", "Sweep"),
        ("blocks", "12\n"),
        ("blocks", " 12"),
        ("blocks", "1" * 5000),
        ("partitionTokens", "16777217"),
        ("partitionTokens", "\u0661\u0662"),
        ("partialDType", "float64"),
        ("partialDType", "Float32"),
    ):
        settings, problems = settings_from_query({name: text_value})
        accepts = URL_SETTINGS[name][0].accepts
        assert settings == {} and problems == [(name, text_value, accepts)], (name, text_value)
    assert settings_from_query({"blocks": "1024"})[0] == {"blocks": 1024}
    assert settings_from_query({"blocks": "48"})[0] == {"blocks": 48}  # pass 2 merges the first 32 of them


def test_the_selection_carries_the_parameters_both_ways(analyses):
    from explorer.views import Selection

    selection = Selection(emulation={"blocks": 64, "partialDType": "float16"})
    view = EmulationsView(analyses["qwen36-bf16-t64"], selection)
    assert (view.blocks, view.partition_tokens, view.partial_dtype) == (64, DEFAULT_PARTITION_TOKENS, "float16")
    view.compute()
    view.partition_tokens = 32
    assert selection.emulation == {"blocks": 64, "partitionTokens": 32, "partialDType": "float16"}
    assert view.emulations[2].id == "paged_two_pass(partitionTokens=32)"
    view.param.update(blocks=DEFAULT_BLOCKS, partition_tokens=DEFAULT_PARTITION_TOKENS, partial_dtype="float32")
    assert selection.emulation == {}  # the defaults are not written


def test_the_drilldown_follows_the_shared_element_selection(analyses):
    from explorer.views import Selection

    analysis = analyses["qwen36-bf16-t64"]
    selection = Selection(element=(2, 5))  # e.g. from the URL, before the emulations exist
    view = EmulationsView(analysis, selection)
    view.compute()
    view.selected = "paged_two_pass"  # a map with a difference to click (the first shown is all equal)
    render(pn.panel(view))
    assert "Query head 2, channel 5" in view._drilldown.object
    view._tap.event(x=9, y=1)
    assert selection.element == (1, 9) and "Query head 1, channel 9" in view._drilldown.object
    selection.element = (4, 0)  # a click on another view's map
    assert "Query head 4, channel 0" in view._drilldown.object


def test_a_typed_setting_outside_the_kernels_limits_is_refused_with_a_note(analyses):
    view = _computed(analyses["qwen36-bf16-t64"])
    blocks, partition = (box for box in pn.panel(view).select(pn.widgets.LiteralInput))
    assert (blocks.value, partition.value) == (DEFAULT_BLOCKS, DEFAULT_PARTITION_TOKENS)
    blocks.value = 0
    assert view.blocks == DEFAULT_BLOCKS
    assert (
        "blocks &#x27;0&#x27; is not an integer from 1 to 1024 (pass 2 merges the first multiple of 32 of "
        "them); kept 128"
    ) in view._settings_note.object
    blocks.value = 32
    assert view.blocks == 32 and view._settings_note.object == ""
    assert view.emulations[0].id == "mlx_two_pass(blocks=32)"
    view.partition_tokens = 64  # set by code: the box follows
    assert partition.value == 64


def test_an_all_equal_map_says_so_and_a_lone_difference_is_ringed(analyses):
    """On this sample mlx_two_pass reproduces every element and paged_two_pass all but one (issue 39)."""
    from bokeh.models import GlyphRenderer, Scatter

    view = _computed(analyses["qwen36-bf16-t64"])
    by_id = {e.id: e for e in view.emulations}
    view.selected = "mlx_two_pass"
    shown = text(pn.panel(view))
    compared = int(np.count_nonzero(by_id["mlx_two_pass"].ulp.distance >= 0))
    assert f"All equal</b>: the {compared} compared output elements are bit-equal to <code>mlx_two_pass</code>" in shown
    assert not images_by_title(render(pn.panel(view))) and view._tap is None
    view.selected = "paged_two_pass"
    head, channel = (int(i[0]) for i in np.nonzero(by_id["paged_two_pass"].ulp.distance > 0))
    assert "Ringed: the 1 differing element," in text(pn.panel(view))
    document = render(pn.panel(view))
    rings = [r for r in models(document, GlyphRenderer) if isinstance(r.glyph, Scatter)]
    assert [[list(r.data_source.data[axis]) for axis in "xy"] for r in rings] == [[[float(channel)], [float(head)]]]
