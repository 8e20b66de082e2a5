"""The process-wide analysis cache: bounded in array bytes, one computation per content however many threads ask."""

from __future__ import annotations

import threading
import time

import explorer.analysis.analyze as analyze_module
from explorer.analysis.analyze import analyze, array_bytes, cached_bytes, clear_cache
from explorer.samples import synthetic_spec, write_packet


def test_the_cache_is_bounded_in_bytes(tmp_path, monkeypatch):
    clear_cache()
    packets = [write_packet(tmp_path / f"p{seed}", synthetic_spec(seed=seed, tokens=32)) for seed in range(3)]
    timings = {}
    analyze(packets[0])
    one_entry = cached_bytes()
    assert one_entry > 0
    monkeypatch.setattr(analyze_module, "CACHE_BYTES", int(one_entry * 2.5))
    for packet in packets[1:]:
        analyze(packet)
    assert cached_bytes() <= analyze_module.CACHE_BYTES
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
