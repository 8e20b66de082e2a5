"""The process-wide analysis cache: bounded in array bytes, one computation per content.

The process-wide analysis cache: bounded in array bytes, one computation per content however many threads ask.
"""

from __future__ import annotations

import threading
import time

import explorer.analysis.analyze as analyze_module
from explorer.analysis.analyze import analyze, array_bytes, clear_cache
from explorer.samples.packets import pair_input_differs_spec, pair_spec, synthetic_spec, write_packet


def test_the_cache_is_bounded_in_bytes(tmp_path, monkeypatch):
    clear_cache()
    packets = [write_packet(tmp_path / f"p{seed}", synthetic_spec(seed=seed, tokens=32)) for seed in range(3)]
    timings = {}
    analyze(packets[0])
    one_entry = analyze_module._cache.held_bytes()
    assert one_entry > 0
    monkeypatch.setattr(analyze_module._cache, "max_bytes", int(one_entry * 2.5))
    for packet in packets[1:]:
        analyze(packet)
    assert analyze_module._cache.held_bytes() <= analyze_module._cache.max_bytes
    analyze(packets[0], timings=timings)
    assert timings["cached"] == 0.0  # the oldest entry went first
    analyze(packets[2], timings=timings)
    assert timings["cached"] == 1.0
    clear_cache()


def test_array_bytes_counts_every_array_of_an_analysis(tmp_path):
    analysis = analyze(write_packet(tmp_path / "p", synthetic_spec()))
    facts_bytes = array_bytes(analysis.facts)
    assert facts_bytes > 0
    assert array_bytes(analysis) >= facts_bytes + array_bytes(analysis.numerics) + array_bytes(analysis.admission)


def test_concurrent_requests_for_one_content_compute_it_once(tmp_path, monkeypatch):
    clear_cache()
    packet = write_packet(tmp_path / "p", synthetic_spec())
    computed = []
    real = analyze_module._compute

    def slow_compute(admission, timings):
        computed.append(admission.path)
        time.sleep(0.3)  # long enough for every thread to ask while the first computes
        return real(admission, timings)

    monkeypatch.setattr(analyze_module, "_compute", slow_compute)
    results = []
    threads = [threading.Thread(target=lambda: results.append(analyze(packet))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(computed) == 1
    assert len({id(result.numerics) for result in results}) == 1
    clear_cache()


def test_two_captures_with_the_same_inputs_share_their_references_bit_for_bit(tmp_path):
    """A pair's captures differ only in their outputs: the second reuses the first's reference arrays, and those are
    the arrays a fresh computation of the second alone gives, bit for bit."""
    clear_cache()
    paged, contiguous = (write_packet(tmp_path / side, pair_spec(side)) for side in ("paged", "contiguous"))
    first, second = analyze(paged).numerics, analyze(contiguous).numerics
    assert second.primary.reference is first.primary.reference and second.fp64.reference is first.fp64.reference
    assert second.weights is first.weights
    clear_cache()
    alone = analyze(contiguous).numerics
    assert alone.primary.reference is not first.primary.reference
    for shared, fresh in (
        (second.primary.reference, alone.primary.reference),
        (second.fp64.reference, alone.fp64.reference),
        (second.weights, alone.weights),
        (second.primary.abs_error, alone.primary.abs_error),
    ):
        assert shared.tobytes() == fresh.tobytes()
    clear_cache()


def test_captures_whose_inputs_differ_get_their_own_references(tmp_path):
    clear_cache()
    contiguous = write_packet(tmp_path / "contiguous", pair_spec("contiguous"))
    differing = write_packet(tmp_path / "differing", pair_input_differs_spec())
    first, second = analyze(contiguous).numerics, analyze(differing).numerics
    assert second.primary.reference is not first.primary.reference
    assert second.primary.reference.tobytes() != first.primary.reference.tobytes()
    clear_cache()
