"""Workers of a parent that has run MLX start fresh, run MLX and answer (a fork would hang)."""

from __future__ import annotations

import pytest

from explorer.catalog.workers import FRESH_START_METHOD, map_isolated, start_method

WORK_TIMEOUT_S = 120  # far above the second a worker needs; a forked child of an MLX parent never answers


def mlx_sum(size: int) -> float:
    """The real MLX attention of ones, summed: a call that hangs in a child forked after MLX ran."""
    import mlx.core as mx

    queries, keys = mx.ones((1, 8, 1, 64)), mx.ones((1, 2, size, 64))
    output = mx.fast.scaled_dot_product_attention(queries, keys, keys, scale=0.125)
    mx.eval(output)
    return float(output.sum())


def test_a_named_start_method_is_kept_and_none_follows_the_loaded_modules(monkeypatch):
    import sys

    assert start_method("spawn") == "spawn"
    monkeypatch.delitem(sys.modules, "mlx.core", raising=False)
    assert start_method(None) is None  # the platform default: fork on Linux
    monkeypatch.setitem(sys.modules, "mlx.core", object())
    assert start_method(None) == FRESH_START_METHOD


def test_workers_of_a_parent_that_ran_mlx_run_mlx_and_answer():
    pytest.importorskip("mlx.core")
    expected = mlx_sum(16)  # MLX's runtime threads now run in this process
    results = dict(map_isolated(mlx_sum, [16, 16], jobs=2, timeout=WORK_TIMEOUT_S))
    assert results == {0: expected, 1: expected}
