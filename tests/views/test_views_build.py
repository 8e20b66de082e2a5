"""Every view builds and serializes for every sample and status.

A view says why when it has nothing to draw.
"""

from __future__ import annotations

import pytest

from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED
from explorer.samples.packets import CURATED
from explorer.views import VIEWS, Selection

from views_support import BUILDERS, head_charts, plots, render, text

# Every curated sample but those whose views differ from another's only in identity text (the pair's other-layer
# and input-differs sides) or that a test below covers with stronger checks (the refused one), and the edge packets.
SAME_VIEWS_AS_ANOTHER = (
    "qwen36-pair-contiguous-other-layer",
    "qwen36-pair-contiguous-input-differs",
    "refused-hash-mismatch",
)
PACKETS = (
    *(name for name in CURATED if name not in SAME_VIEWS_AS_ANOTHER),
    "tiny",
    "float32-kv-kernel-bf16",
    "infinite-queries",
    "inconclusive-without-facts",
)
NEEDS_NUMERICS = ("errors", "narrowed", "attention", "emulations")
NEEDS_FACTS = ("lastrow", "nonfinite")
PLOTTING = {"errors", "lastrow", "nonfinite", "narrowed", "attention", "emulations"}


def test_registry_lists_the_nine_views_in_tab_order():
    assert [(slug, title) for slug, title, _ in VIEWS] == [
        ("overview", "Overview"),
        ("summary", "Summary"),
        ("errors", "Per-head errors"),
        ("lastrow", "Last-row bits"),
        ("nonfinite", "Nonfinite"),
        ("narrowed", "Narrowed-Q"),
        ("attention", "Attention"),
        ("emulations", "Emulations"),
        ("raw", "Raw"),
    ]
    assert all(callable(builder) for _, _, builder in VIEWS)


def test_selection_head_is_a_non_negative_integer():
    selection = Selection()
    assert selection.head == 0
    selection.head = 7
    assert selection.head == 7
    with pytest.raises(ValueError, match="at least 0"):
        selection.head = -1


@pytest.mark.parametrize("slug", [slug for slug, _, _ in VIEWS])
@pytest.mark.parametrize("name", PACKETS)
def test_view_builds_and_serializes(analyses, name, slug):
    analysis = analyses[name]
    view = BUILDERS[slug](analysis, Selection())
    document = render(view)
    shown = text(view)
    assert shown.strip(), "a view is never blank"
    if analysis.status != ANALYZED:
        assert f'data-status="{analysis.status}"' in shown
        for code in [p.code for p in analysis.admission.refusals] + [r.code for r in analysis.reasons]:
            assert code in shown
    missing_numerics = slug in NEEDS_NUMERICS and analysis.numerics is None
    missing_facts = slug in NEEDS_FACTS and analysis.facts is None
    if missing_numerics or missing_facts:
        assert "Not available in this tab" in shown
        assert not plots(document) and not head_charts(view)
    elif slug == "errors" or (slug == "attention" and analysis.status == ANALYZED):
        assert plots(document), "an analyzed packet draws Bokeh plots"


@pytest.mark.parametrize("slug", [slug for slug, _, _ in VIEWS])
def test_refused_packet_shows_its_codes_and_no_numbers(analyses, slug):
    analysis = analyses["refused-hash-mismatch"]
    assert analysis.status == REFUSED
    view = BUILDERS[slug](analysis, Selection())
    document = render(view)
    shown = text(view)
    assert "sha256_mismatch" in shown and "/tensors/storedValues/sha256" in shown
    assert not plots(document) and not head_charts(view)
    if slug in (*NEEDS_NUMERICS, *NEEDS_FACTS):
        assert "This packet was refused" in shown


def test_inconclusive_without_numerics_keeps_its_tensor_facts(analyses):
    analysis = analyses["discarded-sample"]
    assert analysis.status == INCONCLUSIVE and analysis.numerics is None and analysis.facts is not None
    errors = BUILDERS["errors"](analysis, Selection())
    render(errors)
    assert "No reference was computed" in text(errors) and "sample_not_confirmed" in text(errors)
    lastrow = BUILDERS["lastrow"](analysis, Selection())
    render(lastrow)
    assert "All bits equal" in text(lastrow) and "Not available" not in text(lastrow)


def test_inconclusive_without_facts_explains_the_missing_facts(analyses):
    analysis = analyses["inconclusive-without-facts"]
    for slug in NEEDS_FACTS:
        view = BUILDERS[slug](analysis, Selection())
        render(view)
        assert "No tensor facts exist" in text(view)
