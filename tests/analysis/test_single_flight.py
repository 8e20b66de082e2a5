"""Identical analyses and emulations asked for by several threads at once are computed once.

Single flight: identical analyses and emulations asked for by several threads (app sessions) at once are
computed once and shared.
"""

from __future__ import annotations

import threading
import time

from explorer.analysis import analyze as analyze_module
from explorer.analysis import emulation
from explorer.analysis.analyze import analyze, clear_cache, emulations_of
from explorer.foundations.single_flight import SingleFlight
from explorer.samples.packets import synthetic_spec, write_packet

THREADS = 3  # sessions opening the same Emulations tab at once
OVERLAP_S = 0.3  # how long a computation lasts: long enough for every thread to ask while the first computes


def _at_once(call, count: int = THREADS) -> list:
    results, errors = [], []

    def run():
        try:
            results.append(call())
        except Exception as error:  # collected: the test looks at them
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results + errors


def test_identical_emulations_asked_at_once_are_computed_once_and_shared(tmp_path, monkeypatch):
    clear_cache()
    analysis = analyze(write_packet(tmp_path / "p", synthetic_spec()))
    runs = []
    real = emulation.emulations_for

    def slow(*args):
        runs.append(args[-2])
        time.sleep(OVERLAP_S)
        return real(*args)

    monkeypatch.setattr(emulation, "emulations_for", slow)  # analyze imports it when first asked for
    results = _at_once(lambda: emulations_of(analysis, "default"))
    assert len(runs) == 1
    assert len({id(result) for result in results}) == 1 and len(results) == THREADS
    assert analyze_module._emulation_runs.running() == 0
    clear_cache()


def test_different_emulations_are_not_shared(tmp_path, monkeypatch):
    clear_cache()
    analysis = analyze(write_packet(tmp_path / "p", synthetic_spec()))
    results = _at_once(lambda: emulations_of(analysis, "single_pass"), 1) + _at_once(
        lambda: emulations_of(analysis, "mlx_two_pass(blocks=64)"), 1
    )
    assert [e.id for emulations, _ in results for e in emulations] == ["single_pass", "mlx_two_pass(blocks=64)"]
    clear_cache()


def test_a_failed_computation_is_raised_in_every_waiting_caller_and_not_kept():
    flights: SingleFlight[int] = SingleFlight()
    calls = []

    def failing() -> int:
        calls.append(1)
        time.sleep(OVERLAP_S)
        raise MemoryError("too large")

    outcomes = _at_once(lambda: flights.run("key", failing))
    assert len(calls) == 1 and len(outcomes) == THREADS
    assert all(isinstance(outcome, MemoryError) for outcome in outcomes)
    assert flights.running() == 0
    assert flights.run("key", lambda: 7) == 7  # nothing of the failure was kept
