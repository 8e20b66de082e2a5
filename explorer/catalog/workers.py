"""map_isolated(work, items): one pure function over many items in worker processes.

A crash, a raise or a hang costs only its own item, reported once (`WorkerCrashed`, `WorkRaised`,
`WorkerTimedOut` after `timeout` seconds). Each worker holds at most PIPELINE items and works them in order, so
a dead worker's item is its first unanswered one; the items behind it go back to the pending ones. When no
worker can start, the items are worked here, one after another. Workers fork unless MLX is loaded (its runtime
threads do not survive a fork): then they start from a forkserver (`start_method`).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from explorer.catalog.limits import DEFAULT_TIMEOUT_S, MAX_JOBS
from explorer.foundations.parallel import single_threaded_blas

log = logging.getLogger(__name__)

STOP_WAIT_S = 2.0  # an idle worker asked to stop gets this long before it is killed
PIPELINE = 2  # items sent to a worker ahead of its answers, so it never waits for this process between items
# Each worker does one packet at a time; a second BLAS thread per worker only competes for the cores.


class WorkerCrashed(Exception):
    """The worker process running this item died."""


class ClusterLost(WorkerCrashed):
    """No worker was left to run this item (a Dask cluster lost them all, or its scheduler): it was not worked."""


class WorkerTimedOut(Exception):
    """The item was still running after the time limit; its worker process was killed."""


class WorkRaised(Exception):
    """`work` raised for this item: the original's type and message (the original need not be picklable)."""


def default_jobs() -> int:
    """All cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def jobs_for(asked: int, items: int) -> int:
    """Worker processes for `items` items when `asked` are asked for: at most one per item and MAX_JOBS, at least 1."""
    return max(1, min(asked, items, MAX_JOBS))


def work_here(work: Callable[[Any], Any], item: Any) -> Any:
    """work(item), or WorkRaised when it raised."""
    try:
        return work(item)
    except Exception as error:  # raised by `work`: reported for this item only
        return WorkRaised(f"{type(error).__name__}: {error}")


def _serve(work: Callable[[Any], Any], connection: Connection) -> None:
    while True:
        try:
            item = connection.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        connection.send(work_here(work, item))


@dataclass
class _Worker:
    process: Any
    connection: Connection
    held: deque = field(default_factory=deque)  # the items sent and not answered, in the order it works them
    since: float = 0.0  # when the first held item started (monotonic)

    def stop(self) -> None:
        """Ask it to stop, then kill it if it has not (a stopped or busy worker never reads the request)."""
        with contextlib.suppress(OSError, ValueError):
            self.connection.send(None)
        self.process.join(0 if self.held else STOP_WAIT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


def _start(context, work: Callable[[Any], Any]) -> _Worker | str:
    """A started worker, or why none could be started."""
    try:
        ours, theirs = context.Pipe()
    except OSError as error:
        return f"{type(error).__name__}: {error.strerror or error}"
    process = context.Process(target=_serve, args=(work, theirs), daemon=True)
    try:
        process.start()
    except OSError as error:
        ours.close()
        theirs.close()
        return f"{type(error).__name__}: {error.strerror or error}"
    theirs.close()
    return _Worker(process, ours)


class _Pool:
    """The workers of one map and the items not yet handed out."""

    def __init__(
        self,
        work: Callable[[Any], Any],
        items: Sequence[Any],
        jobs: int,
        timeout: float | None,
        context: str | None,
        on_note: Callable[[str], None],
    ):
        self.work, self.items, self.timeout, self.on_note = work, items, timeout, on_note
        self.context = multiprocessing.get_context(context)
        self.most = self.wanted = jobs_for(jobs, len(items))
        self.pending = deque(range(len(items)))
        self.workers: list[_Worker] = []

    def busy(self) -> list[_Worker]:
        return [worker for worker in self.workers if worker.held]

    def grow(self) -> None:
        """Start workers up to the number wanted (while items are pending)."""
        while self.pending and len(self.workers) < self.wanted:
            started = _start(self.context, self.work)
            if isinstance(started, _Worker):
                self.workers.append(started)
                continue
            self.wanted = len(self.workers)
            self.on_note(
                f"only {self.wanted} of {self.most} worker processes could be started ({started})"
                if self.wanted
                else f"no worker process could be started ({started}); the packets are "
                f"worked in this process, one after another, without a time limit"
            )

    def hand_out(self) -> None:
        """Fill every worker's pipeline, idle workers first."""
        for worker in sorted(self.workers, key=lambda worker: len(worker.held)):
            while self.pending and len(worker.held) < PIPELINE and worker in self.workers:
                index = self.pending.popleft()
                try:
                    worker.connection.send(self.items[index])
                except (OSError, ValueError):  # it died: this item never started; collect answers the one it was on
                    self.pending.appendleft(index)
                    if not worker.held:
                        self.retire(worker)
                    break
                if not worker.held:
                    worker.since = time.monotonic()
                worker.held.append(index)

    def retire(self, worker: _Worker) -> int | None:
        """Stop and drop a worker; the items it held and had not started go back to the pending ones."""
        started = worker.held.popleft() if worker.held else None
        self.pending.extendleft(reversed(worker.held))
        worker.held.clear()
        worker.stop()
        self.workers.remove(worker)
        return started

    def collect(self) -> Iterator[tuple[int, Any]]:
        """Wait for the first busy worker to answer, die or run out of time; yield what that settles."""
        busy = self.busy()
        waits = [worker.connection for worker in busy] + [worker.process.sentinel for worker in busy]
        ready = set(wait(waits, timeout=self._until_first_deadline(busy)))
        now = time.monotonic()
        for worker in busy:
            if worker.connection in ready or worker.process.sentinel in ready:
                try:
                    result = worker.connection.recv()
                except (EOFError, OSError):  # it died before answering
                    index = self.retire(worker)
                    yield index, WorkerCrashed(f"the worker process died while working on item {index}")
                    continue
                index = worker.held.popleft()
                worker.since = time.monotonic()  # the next held item starts now
                yield index, result
            elif self.timeout is not None and now - worker.since >= self.timeout:
                index = self.retire(worker)
                yield index, WorkerTimedOut(f"item {index} ran longer than {self.timeout:g} s")

    def _until_first_deadline(self, busy: list[_Worker]) -> float | None:
        if self.timeout is None:
            return None
        return max(0.0, min(worker.since for worker in busy) + self.timeout - time.monotonic())


FRESH_START_METHOD = "forkserver"  # a clean interpreter per worker, for parents whose libraries cannot be forked
UNFORKABLE_MODULES = ("mlx.core",)  # loaded here, their runtime threads make a forked child hang


def start_method(context: str | None) -> str | None:
    """`context` when named, else the platform default, unless a loaded module cannot survive a fork."""
    if context is None and any(name in sys.modules for name in UNFORKABLE_MODULES):
        return FRESH_START_METHOD
    return context


def map_isolated(
    work: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    jobs: int,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    context: str | None = None,
    on_note: Callable[[str], None] = log.warning,
) -> Iterator[tuple[int, Any]]:
    """Yield (index, result) for every item as it finishes (WorkRaised, WorkerCrashed or WorkerTimedOut when it
    gave none); `context`: the start method (None: start_method's choice); `timeout` None: no limit."""
    single_threaded_blas()  # inherited by workers that load numpy themselves (forkserver, spawn)
    pool = _Pool(work, items, jobs, timeout, start_method(context), on_note)
    try:
        while pool.pending or pool.busy():
            pool.grow()
            if not pool.workers:
                while pool.pending:
                    index = pool.pending.popleft()
                    yield index, work_here(work, items[index])
                return
            pool.hand_out()
            if pool.busy():
                yield from pool.collect()
    finally:
        for worker in list(pool.workers):
            pool.retire(worker)
