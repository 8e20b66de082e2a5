"""Per-head noise-floor ratios, worst ULP per head, the worst head and the partner selection key.

Per-head noise-floor ratios, worst ULP per head, the worst head and the partner selection key (docs/pairs.md,
Partners).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import explorer
from explorer.analysis.ranking import (
    SELECTION_FIELDS,
    noise_floor_ratios,
    selection_key,
    worst_head,
    worst_ulp_per_head,
)
from explorer.catalog.discovery import default_root
from explorer.samples.packets import INJECTED_HEAD, synthetic_spec, with_snapshot, write_packet

ROOT = default_root()


@pytest.fixture(scope="module")
def injected():
    return explorer.analyze(ROOT / "injected-error-head5")


def test_ratio_is_primary_linf_over_the_fp64_noise_floor_per_head(injected):
    numerics = injected.numerics
    ratios = noise_floor_ratios(numerics)
    assert len(ratios) == len(numerics.primary.per_head)
    for ratio, actual, floor in zip(
        ratios, numerics.primary.per_head, numerics.fp64.reference_error.per_head, strict=True
    ):
        assert ratio == actual.linf / floor.linf


def test_ratio_is_none_where_the_floor_is_zero_or_undefined(injected):
    numerics = injected.numerics
    floors = list(numerics.fp64.reference_error.per_head)
    floors[0] = dataclasses.replace(floors[0], linf=0.0)
    floors[1] = dataclasses.replace(floors[1], linf=None)
    changed = dataclasses.replace(
        numerics,
        fp64=dataclasses.replace(
            numerics.fp64, reference_error=dataclasses.replace(numerics.fp64.reference_error, per_head=tuple(floors))
        ),
    )
    ratios = noise_floor_ratios(changed)
    assert ratios[:2] == (None, None)
    assert ratios[2:] == noise_floor_ratios(numerics)[2:]


def test_worst_ulp_per_head_is_the_largest_finite_distance_of_each_head(injected):
    distance = injected.numerics.rounded_to_output.ulp.distance
    worst = worst_ulp_per_head(injected.numerics)
    assert worst == tuple(int(row[row >= 0].max()) for row in distance)
    assert max(worst) == injected.numerics.rounded_to_output.ulp.max


def test_heads_without_finite_pairs_have_no_worst_ulp_or_ratio():
    analysis = explorer.analyze(ROOT / "nan-stored-values")
    ineligible = [h for h, m in enumerate(analysis.numerics.primary.per_head) if m.linf is None]
    assert ineligible  # KV head 1's query heads
    worst = worst_ulp_per_head(analysis.numerics)
    ratios = noise_floor_ratios(analysis.numerics)
    assert all(worst[h] is None and ratios[h] is None for h in ineligible)
    assert all(worst[h] is not None for h in range(len(worst)) if h not in ineligible)


def test_worst_head_is_the_largest_primary_linf_with_its_ratio(injected):
    head, linf, ratio = worst_head(injected.numerics)
    linfs = [m.linf for m in injected.numerics.primary.per_head]
    assert head == INJECTED_HEAD == int(np.argmax(linfs))
    assert linf == max(linfs)
    assert ratio == noise_floor_ratios(injected.numerics)[head]


def test_worst_head_breaks_ties_by_the_lower_head(injected):
    numerics = injected.numerics
    heads = tuple(dataclasses.replace(m, linf=1.0) for m in numerics.primary.per_head)
    tied = dataclasses.replace(numerics, primary=dataclasses.replace(numerics.primary, per_head=heads))
    assert worst_head(tied)[:2] == (0, 1.0)


def test_selection_key_lists_the_compare_fields_in_order(injected):
    key = selection_key(injected)
    assert tuple(name for name, _ in key) == SELECTION_FIELDS
    values = dict(key)
    admission = injected.admission
    assert values["modelID"] == admission.identity["modelID"]
    assert values["seedToken"] == admission.sample["seedToken"]
    assert values["scaleBits"] == admission.selection["scaleBits"]


def test_two_backends_of_one_selection_share_the_key_and_a_changed_field_does_not(tmp_path):
    paged = explorer.analyze(write_packet(tmp_path / "paged", synthetic_spec(seed=4)))
    contiguous = explorer.analyze(write_packet(tmp_path / "contiguous", synthetic_spec(seed=4, backend="contiguous")))
    other_seed_token = explorer.analyze(
        write_packet(tmp_path / "token", with_snapshot(synthetic_spec(seed=4), seedToken=1))
    )
    assert selection_key(paged) == selection_key(contiguous) is not None
    assert selection_key(other_seed_token) != selection_key(paged)


def test_a_refused_packet_has_no_selection_key():
    assert selection_key(explorer.analyze(ROOT / "refused-hash-mismatch")) is None
