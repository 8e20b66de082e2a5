"""compare(a, b, emulate=...) on real packets on disk.

The emulation x side matrix, run once on identical inputs, per side otherwise, its null reasons, swap
symmetry, no verdict words.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from report_words import VERDICT_WORDS, strings_and_keys

import explorer
from explorer.analysis.analyze import analyze, clear_cache
from explorer.analysis.emulation import (
    EmulationIdError,
    bit_equal,
    emulate,
    inputs_from_tensors,
    resolve_all,
    shape_of,
)
from explorer.pair.emulation import (
    EACH_SIDE_INPUTS,
    EACH_SIDE_NOTE,
    SHARED_INPUTS,
    SIDE_REFUSED,
)
from explorer.pair.model import NO_REFERENCE, SHAPE_DIFFERS
from explorer.samples import packets as samples

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "sample_packets"
PAGED = COMMITTED / samples.PAIR_NAMES["paged"]
CONTIGUOUS = COMMITTED / samples.PAIR_NAMES["contiguous"]
INPUT_DIFFERS = COMMITTED / samples.PAIR_NAMES["input-differs"]
SIDES = ("a", "b")
MATRIX_KEYS = ("emulations", "emulationsRequested", "emulationMatrix", "emulationMatrixReason")
DEFAULT_IDS = ["mlx_two_pass", "mlx_two_pass(partialDType=float32)", "paged_two_pass", "single_pass", "mlx_run"]


@pytest.fixture(scope="module")
def pair():
    clear_cache()  # computed here, not taken from an earlier test's analyses (a side's own run is no shared one)
    return explorer.compare(PAGED, CONTIGUOUS, emulate="default")


def _own_bit_equal(path: Path, ids: list[str]) -> list[tuple[int, tuple]]:
    """Each emulation's bit-equal counts on one packet, run from its tensors with the phase-1 API alone."""
    analysis = analyze(path)
    tensors = analysis.admission.tensors
    eligible = analysis.numerics.eligible
    outputs = emulate(
        inputs_from_tensors(tensors, analysis.admission.scale), resolve_all(ids, shape_of(tensors)), eligible
    )
    return [bit_equal(e.bits, tensors["output"].bits[0, :, 0, :], eligible) for e in outputs]


def _matrix(report: dict, side: str, ids: list[str] = DEFAULT_IDS) -> list[tuple[int, tuple]]:
    """The matrix's counts of one side, in the order of `ids` (the rows are in table order)."""
    rows = {row["id"]: row for row in report["emulationMatrix"]["rows"]}
    return [(rows[i]["bitEqual"][side]["global"], tuple(rows[i]["bitEqual"][side]["perHead"])) for i in ids]


def test_matrix_equals_each_sides_own_bit_equal(pair):
    report = pair.report()
    assert report["emulationMatrix"]["emulatedOn"] == SHARED_INPUTS and report["emulationMatrixReason"] is None
    # table order: the larger of the two sides' decisive counts, ties in request order
    assert [row["id"] for row in report["emulationMatrix"]["rows"]] == [
        "mlx_two_pass",
        "paged_two_pass",
        "single_pass",
        "mlx_two_pass(partialDType=float32)",
        "mlx_run",
    ]
    assert report["emulationsRequested"] == {"a": DEFAULT_IDS, "b": DEFAULT_IDS}
    assert _matrix(report, "a") == _own_bit_equal(PAGED, DEFAULT_IDS)
    assert _matrix(report, "b") == _own_bit_equal(CONTIGUOUS, DEFAULT_IDS)
    json.dumps(report, allow_nan=False)


def test_the_matching_emulation_reproduces_its_side_bit_for_bit(pair):
    rows = {row["id"]: row for row in pair.report()["emulationMatrix"]["rows"]}
    compared = pair.output.compared
    assert rows["paged_two_pass"]["bitEqual"]["a"]["global"] == compared  # side a: the paged packet
    assert rows["mlx_two_pass"]["bitEqual"]["b"]["global"] == compared  # side b: the contiguous packet
    # The two sides differ, so neither kernel's emulation reproduces the other side entirely.
    assert rows["paged_two_pass"]["bitEqual"]["b"]["global"] == compared - pair.output.bits.mismatched
    assert rows["mlx_two_pass"]["bitEqual"]["a"]["global"] < compared


def test_side_entries_are_what_analyze_reports_and_run_once(pair):
    clear_cache()
    for side, path in zip(SIDES, (PAGED, CONTIGUOUS), strict=True):
        own = analyze(path, emulate="default").report()["emulations"]
        assert pair.report()["emulations"][side] == own
    # Shared inputs: side b was scored against side a's emulated outputs, not a second run.
    for ea, eb in zip(pair.a.emulations, pair.b.emulations, strict=True):
        assert eb.values is ea.values and eb.bits is ea.bits


def test_emulations_a_side_already_holds_are_reused():
    held = analyze(PAGED, emulate="default")
    pair = explorer.compare(held, CONTIGUOUS, emulate="default")
    assert pair.a.emulations is held.emulations


def test_swapping_the_sides_swaps_the_matrix_columns(pair):
    forward, backward = pair.report(), explorer.compare(CONTIGUOUS, PAGED, emulate="default").report()
    assert _matrix(forward, "a") == _matrix(backward, "b") and _matrix(forward, "b") == _matrix(backward, "a")
    assert forward["emulations"]["a"] == backward["emulations"]["b"]
    assert backward["emulationMatrix"]["emulatedOn"] == SHARED_INPUTS


def test_inputs_that_differ_score_each_side_against_its_own_inputs():
    pair = explorer.compare(PAGED, INPUT_DIFFERS, emulate=["mlx_two_pass", "paged_two_pass"])
    report = pair.report()
    assert report["emulationMatrix"]["emulatedOn"] == EACH_SIDE_INPUTS and EACH_SIDE_NOTE in report["notes"]
    ids = ["mlx_two_pass", "paged_two_pass"]
    assert _matrix(report, "a", ids) == _own_bit_equal(PAGED, ids)
    assert _matrix(report, "b", ids) == _own_bit_equal(INPUT_DIFFERS, ids)
    # Each side's own kernel reproduces it from its own inputs, the flipped key included.
    compared = pair.output.compared
    assert _matrix(report, "b", ids)[0][0] == compared and _matrix(report, "a", ids)[1][0] == compared
    assert not np.array_equal(pair.a.emulations[0].bits, pair.b.emulations[0].bits)


@pytest.mark.parametrize(
    "other, reason",
    [
        (COMMITTED / "refused-hash-mismatch", SIDE_REFUSED),
        (COMMITTED / "qwen36-bf16-t64", SHAPE_DIFFERS),
        (COMMITTED / "clean-fp32q-bf16kv", SHAPE_DIFFERS),
    ],
)
def test_no_matrix_states_give_a_reason(other, reason):
    report = explorer.compare(PAGED, other, emulate="default").report()
    assert report["emulationMatrix"] is None and report["emulationMatrixReason"] == reason
    assert set(report["emulationsRequested"]) == set(SIDES)
    if reason == SIDE_REFUSED:  # nothing is compared, nothing emulated
        assert report["emulations"] == {"a": None, "b": None}
    else:  # each side still carries its own emulations
        assert all(report["emulations"][side] for side in SIDES)


def test_a_side_without_a_reference_gives_no_matrix(tmp_path):
    spec = samples.with_snapshot(samples.pair_spec("contiguous"), sampleOutcome="discarded")
    pair = explorer.compare(PAGED, samples.write_packet(tmp_path / "discarded", spec), emulate="default")
    report = pair.report()
    assert pair.b.numerics is None and report["b"]["status"] == "inconclusive"
    assert report["emulationMatrix"] is None and report["emulationMatrixReason"] == NO_REFERENCE
    assert report["emulations"]["b"] is None and len(report["emulations"]["a"]) == len(DEFAULT_IDS)


def test_without_emulate_every_emulation_key_is_null():
    report = explorer.compare(PAGED, CONTIGUOUS).report()
    assert all(report[key] is None for key in MATRIX_KEYS)


def test_an_unknown_id_fails_before_anything_is_read(tmp_path):
    with pytest.raises(EmulationIdError, match="bogus"):
        explorer.compare(tmp_path / "missing-a", tmp_path / "missing-b", emulate=["bogus"])
    with pytest.raises(EmulationIdError, match="partialDType"):
        explorer.compare(PAGED, CONTIGUOUS, emulate=["mlx_two_pass(partialDType=int8)"])


def test_no_verdict_wording_in_pair_emulation_reports(pair):
    texts = [text for key in (*MATRIX_KEYS, "notes") for text in strings_and_keys(pair.report()[key])]
    texts += list(strings_and_keys(explorer.compare(PAGED, INPUT_DIFFERS, emulate="default").report()["notes"]))
    assert texts and not [text for text in texts if VERDICT_WORDS.search(text)]
