"""map_isolated(work, items): one pure function over many items in worker processes, a crash costing only its own item; no UI, no packet logic.

Ordinary `concurrent.futures` process pools. At most IN_FLIGHT_PER_WORKER tasks
per worker are submitted at a time, so when a worker dies (a segfault, the
out-of-memory killer) only the few tasks in flight are suspects: each is run
again alone in a fresh one-worker pool, and one that breaks that pool too is
reported as a crash. An exception raised by `work` is reported for its item.
Every item is reported exactly once.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence

IN_FLIGHT_PER_WORKER = 4
# Each worker does one packet at a time; a second BLAS thread per worker only competes for the cores.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class WorkerCrashed(Exception):
    """The worker process running this item died, also when the item ran alone."""


def default_jobs() -> int:
    """All cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _pool(jobs: int, context: str | None) -> ProcessPoolExecutor:
    for variable in BLAS_THREAD_VARIABLES:  # inherited by workers that load numpy themselves (forkserver, spawn)
        os.environ.setdefault(variable, "1")
    return ProcessPoolExecutor(max_workers=jobs,
                               mp_context=None if context is None else multiprocessing.get_context(context))


def _alone(work: Callable[[Any], Any], item: Any, context: str | None) -> Any:
    with _pool(1, context) as pool:
        try:
            return pool.submit(work, item).result()
        except BrokenProcessPool:
            return WorkerCrashed(f"the worker process died while working on {item!r}")
        except Exception as error:  # raised by `work`: reported for this item only
            return error


def map_isolated(work: Callable[[Any], Any], items: Sequence[Any], *, jobs: int,
                 context: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (index, result) for every item as it finishes; the result is an Exception when `work` raised or crashed.

    `context` names the multiprocessing start method (None: the platform default).
    """
    pending = deque(range(len(items)))
    while pending:
        suspects: list[int] = []
        with _pool(jobs, context) as pool:
            in_flight: dict[Future, int] = {}
            while (pending or in_flight) and not suspects:
                while pending and len(in_flight) < jobs * IN_FLIGHT_PER_WORKER:
                    index = pending.popleft()
                    in_flight[pool.submit(work, items[index])] = index
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    index = in_flight.pop(future)
                    try:
                        yield index, future.result()
                    except BrokenProcessPool:
                        suspects.append(index)
                    except Exception as error:  # raised by `work`: reported for this item only
                        yield index, error
            suspects += in_flight.values()  # a broken pool fails every task still in flight
        for index in suspects:
            yield index, _alone(work, items[index], context)
