"""Runs one function over a list of items on a few threads, results in item order; no I/O.

For work that releases the interpreter lock (reads, SHA-256, numpy loops): no result depends on the threads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

# The explorer's numbers never use BLAS (docs/report.md); numpy still starts BLAS threads when it loads, which
# on a busy 2-core machine only cost.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

Item = TypeVar("Item")
Result = TypeVar("Result")


def single_threaded_blas() -> None:
    """Ask BLAS for one thread unless the environment says otherwise (before numpy loads; workers inherit it)."""
    for variable in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(variable, "1")


def run_on_threads(work: Callable[[Item], Result], items: Sequence[Item], threads: int) -> list[Result]:
    """[work(item) for item in items] on up to `threads` threads (the calling thread alone when no other starts);
    the first exception is raised here once every thread has stopped."""
    results: list[Result | None] = [None] * len(items)
    pending = iter(range(len(items)))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def take_items() -> None:
        while not errors:
            with lock:
                index = next(pending, None)
            if index is None:
                return
            try:
                results[index] = work(items[index])
            except BaseException as error:  # handed to the calling thread
                errors.append(error)

    helpers = []
    for _ in range(min(threads, len(items)) - 1):
        helper = threading.Thread(target=take_items, daemon=True)
        try:
            helper.start()
        except RuntimeError:  # no room for another thread's stack: fewer threads, same results
            break
        helpers.append(helper)
    take_items()
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]
    return results  # type: ignore[return-value]  (every slot filled when nothing raised)
