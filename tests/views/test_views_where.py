"""The overview's error-map caption names where the worst values are.

The overview's error-map caption names where the worst values are: the element of the largest ULP distance and of
the largest |output - reference|, the ones the report's maxAt and linfAt name."""

from __future__ import annotations

import panel as pn

from explorer.foundations.formatting import short_number
from explorer.views import Selection
from explorer.views.packet import overview

from views_support import text


def test_the_error_map_caption_names_where_the_worst_values_are(analyses):
    """The injected error sits in head 5 (samples.py)."""
    analysis = analyses["injected-error-head5"]
    view = overview.build(analysis, Selection())
    cell = next(c for c in view.select(pn.Column) if "overview-errors" in c.css_classes)
    caption = text(cell)
    reference = analysis.report()["reference"]
    ulp = reference["roundedToOutputDType"]["ulp"]
    linf = reference["primary"]["global"]
    assert ulp["maxAt"]["queryHead"] == linf["linfAt"]["queryHead"] == 5
    assert f"ULP max {ulp['max']} at query head 5, channel {ulp['maxAt']['channel']}" in caption
    assert (
        f"largest |output - primary reference| {short_number(linf['linf'])} at query head 5, channel "
        f"{linf['linfAt']['channel']}"
    ) in caption


def test_a_packet_whose_output_equals_the_rounded_reference_names_no_element(analyses):
    """ULP max 0: every element equals the rounded reference, so no element stands out (maxAt null)."""
    analysis = analyses["qwen36-bf16-t64"]
    assert analysis.report()["reference"]["roundedToOutputDType"]["ulp"] == {
        **analysis.report()["reference"]["roundedToOutputDType"]["ulp"],
        "max": 0,
        "maxAt": None,
    }
    cell = next(
        c for c in overview.build(analysis, Selection()).select(pn.Column) if "overview-errors" in c.css_classes
    )
    shown = text(cell)
    assert "ULP max 0;" in shown and "ULP max 0 at" not in shown
