"""Analysis.element: one output element's values, patterns, differences and ULP distances.

Analysis.element: one output element by (head, channel) or flat index, its values, native patterns,
differences and ULP distances, and clear errors.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.analyze import analyze
from explorer.analysis.element import NO_NUMERICS, NO_TENSORS, Element, parse_index

SAMPLES = Path(__file__).resolve().parents[2] / "sample_packets"


@pytest.fixture(scope="module")
def qwen():
    return analyze(SAMPLES / "qwen36-bf16-t64")  # QH 16, D 256, bfloat16 output


@pytest.fixture(scope="module")
def injected():
    return analyze(SAMPLES / "injected-error-head5")  # float32 output, float32 queries, bfloat16 K/V


def _stored_output(path: Path, dtype, heads: int, channels: int) -> np.ndarray:
    """The output file's native patterns, read directly (the oracle for the element's bits)."""
    raw = np.fromfile(path / "output.bin", dtype=dtype)
    return raw.reshape(heads, channels)


def _ordinal(bits: int) -> int:
    """Monotone integer of a bfloat16 pattern: distance in ULPs is the difference of two ordinals."""
    return bits if bits < 0x8000 else 0x8000 - bits


def test_flat_index_is_row_major_over_heads_and_channels(qwen):
    assert qwen.element(1179) == qwen.element(4, 155)
    record = qwen.element(1179)
    assert (record.head, record.channel, record.flat_index) == (4, 155, 1179)
    last = qwen.element(16 * 256 - 1)
    assert (last.head, last.channel) == (15, 255)


def test_bfloat16_element_matches_the_native_bytes_and_an_independent_rounding(qwen):
    stored = _stored_output(SAMPLES / "qwen36-bf16-t64", "<u2", 16, 256)
    numerics = qwen.numerics
    for head, channel in [(4, 155), (0, 0), (15, 255), (7, 31)]:
        record = qwen.element(head, channel)
        assert record.output_bits == int(stored[head, channel])
        assert record.output_hex == f"0x{int(stored[head, channel]):04X}"
        assert record.output == float(np.uint16(stored[head, channel]).view(ml_dtypes.bfloat16))
        primary = float(numerics.primary.reference[head, channel])
        assert record.primary == primary
        assert record.fp64 == float(numerics.fp64.reference[head, channel])
        rounded_bits = int(np.float32(primary).astype(ml_dtypes.bfloat16).view(np.uint16))
        rounded = record.rounded_to_output
        assert rounded.dtype == "bfloat16" and rounded.bits == rounded_bits and rounded.hex == f"0x{rounded_bits:04X}"
        assert rounded.ulp == abs(_ordinal(record.output_bits) - _ordinal(rounded_bits))
        assert record.primary_difference == abs(np.float64(record.output) - np.float64(primary))
        assert rounded.difference == abs(np.float64(record.output) - np.float64(rounded.value))
        assert record.kv_head == head // 8 and record.eligible is True and record.missing is None
    assert qwen.element(4, 155).narrowed_query is None
    assert qwen.element(4, 155).narrowed_query_reason == "queries_not_float32"


def test_float32_element_carries_the_narrowed_q_counterfactual(injected):
    record = injected.element(5, 3)
    nq = injected.numerics.narrowed_query
    assert record.narrowed_query == float(nq.reference[5, 3])
    assert record.narrowed_query_difference == abs(np.float64(record.output) - np.float64(record.narrowed_query))
    assert record.output_hex == f"0x{np.float32(record.output).view(np.uint32):08X}"
    assert record.rounded_to_output.dtype == "float32" and record.rounded_to_output.value == record.primary
    labels = [label for label, _ in record.fields()]
    assert "narrowed-Q reference (counterfactual)" in labels and "FP64 value (diagnostic)" in labels


def test_the_record_is_immutable(qwen):
    record = qwen.element(0, 0)
    assert isinstance(record, Element)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.output = 0.0


@pytest.mark.parametrize(
    "args, message",
    [
        ((16 * 256,), "flat index 4096 is outside 0..4095"),
        ((-1,), "flat index -1 is outside"),
        ((16, 0), "head 16 is outside 0..15"),
        ((0, 256), "channel 256 is outside 0..255"),
        ((-1, 3), "head -1 is outside"),
    ],
)
def test_out_of_range_input_gets_a_clear_index_error(qwen, args, message):
    with pytest.raises(IndexError, match=message):
        qwen.element(*args)


@pytest.mark.parametrize("args", [(1.5,), (True,), ("4",), (4, 1.0)])
def test_non_integer_input_is_a_type_error(qwen, args):
    with pytest.raises(TypeError, match="must be an integer"):
        qwen.element(*args)


def test_refused_packet_has_no_element():
    with pytest.raises(ValueError, match="did not all verify"):
        analyze(SAMPLES / "refused-hash-mismatch").element(0)
    assert "did not all verify" in NO_TENSORS


def test_packet_without_numerics_gives_the_output_and_says_what_is_missing():
    analysis = analyze(SAMPLES / "discarded-sample")
    assert analysis.numerics is None
    record = analysis.element(0, 0)
    assert record.missing == NO_NUMERICS and record.primary is None and record.rounded_to_output is None
    assert record.output_bits == int(analysis.admission.tensors["output"].bits[0, 0, 0, 0])


def test_ineligible_heads_have_no_reference_values():
    analysis = analyze(SAMPLES / "nan-stored-values")
    ineligible = int(np.flatnonzero(~analysis.numerics.eligible)[0])
    record = analysis.element(ineligible, 0)
    assert record.eligible is False and record.primary is None and record.primary_difference is None
    assert "ineligible" in record.missing


@pytest.mark.parametrize("text, parsed", [("4,155", (4, 155)), ("1179", (1179, None)), ("0,0", (0, 0))])
def test_index_text_is_parsed(text, parsed):
    assert parse_index(text) == parsed


@pytest.mark.parametrize("text", ["", "4,", ",4", "4;5", "-1", "\u0664,1", "1,2,3", "4 ,5", "1" * 10])
def test_index_text_accepts_ascii_digits_only(text):
    with pytest.raises(ValueError, match="is not H,C"):
        parse_index(text)
