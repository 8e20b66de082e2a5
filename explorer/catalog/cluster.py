"""map_on_cluster(work, items, scheduler): workers.map_isolated's contract on a Dask cluster.

Imported only for --scheduler, never by the app. Items go in batches of up to BATCH_ITEMS (a Dask task costs as
much as a small packet's analysis), `retries=0` as `work` is pure. A batch that fails as a whole (a dead worker,
a time limit) is split into one task per item, so a crash or a hang is reported for the item causing it; a task
whose worker died gets `allowed-failures` more chances elsewhere, then `WorkerCrashed`. A task processing past
`timeout` is `WorkerTimedOut` and its worker restarted. The run always finishes: a cluster without workers or
scheduler for WORKERLESS_S answers every open item with `ClusterLost`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dask
from distributed import Client, LocalCluster, as_completed
from distributed.scheduler import KilledWorker

from explorer.catalog.limits import MAX_JOBS
from explorer.catalog.workers import ClusterLost, WorkerCrashed, WorkerTimedOut, WorkRaised

BATCH_ITEMS = 64  # items per task at most; fewer when there are few items per worker (every worker kept busy)
BATCHES_PER_WORKER = 4  # at least this many batches per worker thread, so that the last ones end together
LOCAL_PREFIX = "local:"  # --scheduler local:N starts a LocalCluster of N worker processes
ALLOWED_FAILURES = 1  # a local:N cluster re-runs a task whose worker died once, elsewhere
CONNECT_TIMEOUT_S = 30
POLL_S = 0.02  # how often finished tasks are taken while none is ready
PROCESSING_POLL_S = 1.0  # how often the scheduler is asked which task runs where (for the time limit)
RESTART_TIMEOUT_S = 30
GATHER_TIMEOUT_S = 5.0  # taking a finished task's results (milliseconds when its worker lives)
RECOMPUTED = "recomputed"  # _taken's answer while a task's lost results are computed again
WORKERLESS_S = RESTART_TIMEOUT_S  # no worker (or no scheduler) this long: the cluster is lost, its open items answered
# A LocalCluster closes the nanny of a removed worker when no worker of its name is there LOST_WORKER_S later. Its
# default, 15 s, closed for good nannies that were restarting their worker (a crash or a time limit within 15 s of
# an earlier restart of the same name, or a restart slower than 15 s on a loaded machine): the cluster was lost.
# Our nannies always restart their worker and WORKERLESS_S watches for a cluster left without any: never within a run.
LOST_WORKER_S = 86_400
# One task per worker thread (so a dying worker holds only the task that killed it), one re-run of a task whose
# worker died, and the cluster's own log kept to what stops it. Dask's diagnostics (a sample of the working
# thread's stack every 10 ms, an event-loop tick every 20 ms, system and memory polls) take the interpreter lock
# from the task on every worker: slowed here to what a triage needs (measured, 2,000 packets on 2 workers:
# 14.99 -> 12.68 s, median of 5). The memory monitor still stops a worker past its limit, within a second.
LOCAL_CONFIG = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.deploy.lost-worker-timeout": f"{LOST_WORKER_S}s",
}
QUIET = {"DASK_LOGGING__DISTRIBUTED": "critical"}  # workers' own logs: the failures are reported per packet


class SchedulerUnavailable(Exception):
    """The scheduler address could not be reached or a local cluster not started (a one-line reason)."""


def local_workers(scheduler: str) -> int | None:
    """N for 'local:N', None for an address; ValueError when N is not an integer from 1 to MAX_JOBS."""
    if not scheduler.startswith(LOCAL_PREFIX):
        return None
    text = scheduler[len(LOCAL_PREFIX) :]
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(MAX_JOBS)) and 1 <= int(text) <= MAX_JOBS):
        raise ValueError(f"local:N takes N from 1 to {MAX_JOBS} worker processes")
    return int(text)


def connect(scheduler: str) -> tuple[Client, LocalCluster | None]:
    """A client of the scheduler at `scheduler`, or of a LocalCluster started for 'local:N' (LOCAL_CONFIG held by the
    caller: the cluster reads part of it while it runs)."""
    workers = local_workers(scheduler)
    try:
        if workers is None:
            return Client(scheduler, timeout=CONNECT_TIMEOUT_S), None
        os.environ.update(QUIET)  # read by the worker processes as they start (also on restarts)
        for name in [name for name in logging.root.manager.loggerDict if name.startswith("distributed")]:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    except (OSError, TimeoutError, ValueError, TypeError, RuntimeError) as error:  # unreachable, malformed, refused
        raise SchedulerUnavailable(f"{type(error).__name__}: {error}") from None


def _taken(future) -> Any:
    """A task's answer: its results (a list); RECOMPUTED while its results, lost with their worker, are computed
    again (never waiting past GATHER_TIMEOUT_S: the loop keeps the time limits meanwhile); else why it failed."""
    if future.status == "finished":
        try:
            return future.result(timeout=GATHER_TIMEOUT_S)
        except TimeoutError:  # its worker died before the results were taken: the scheduler computes them again
            return RECOMPUTED
        except Exception:  # it failed meanwhile: answered by its status
            pass
    if future.status == "lost":
        return RECOMPUTED
    error = future.exception() if future.status == "error" else None
    if isinstance(error, KilledWorker) or error is None:
        return WorkerCrashed(f"the task's worker died ({future.status})")
    return WorkRaised(f"{type(error).__name__}: {error}")


class _Clock:
    """When each task was first seen processing on a worker, and on which; since when no worker could run one."""

    def __init__(self, client: Client, timeout: float | None):
        self.client, self.timeout = client, timeout
        self.since: dict[str, tuple[float, str]] = {}
        self.asked = 0.0
        self.workerless: tuple[float, str] | None = None  # (since, why) while the cluster can run no task

    def overdue(self, open_tasks: dict[str, list[int]]) -> list[tuple[str, str]]:
        """(key, worker) of every open task past the per-item limit times its items (asked once a second)."""
        now = time.monotonic()
        if now - self.asked < PROCESSING_POLL_S:
            return []
        self.asked = now
        processing = self._processing(now)
        if self.timeout is None:
            return []
        for worker, keys in processing.items():
            for key in keys:
                if key in open_tasks and key not in self.since:
                    self.since[key] = (now, worker)
        return [
            (key, worker)
            for key, (since, worker) in self.since.items()
            if key in open_tasks and now - since >= self.timeout * len(open_tasks[key])
        ]

    def _processing(self, now: float) -> dict[str, list[str]]:
        """The scheduler's tasks per worker; notes when there is none."""
        try:
            processing, why = self.client.processing(), "had no worker left"
        except Exception as error:  # whatever the call raises, the scheduler cannot be asked
            processing, why = {}, f"lost its scheduler ({type(error).__name__}: {error})"
        if processing:
            self.workerless = None
        elif self.workerless is None:
            self.workerless = (now, why)
        return processing

    def lost(self) -> str | None:
        """Why the cluster can run no task, once that has lasted WORKERLESS_S; None while it can."""
        if self.workerless is None or time.monotonic() - self.workerless[0] < WORKERLESS_S:
            return None
        return f"{self.workerless[1]} for {WORKERLESS_S:g} s"


def run_batch(work: Callable[[Any], Any], items: Sequence[Any]) -> list[tuple[bool, Any]]:
    """(True, result) or (False, "Type: message") of `work` on each item, in order: one task on a worker."""
    done = []
    for item in items:
        try:
            done.append((True, work(item)))
        except Exception as error:  # reported for this item only; the batch goes on
            done.append((False, f"{type(error).__name__}: {error}"))
    return done


def batch_size(items: int, workers: int) -> int:
    """Items per batch: BATCH_ITEMS, or fewer so that every worker thread gets BATCHES_PER_WORKER batches."""
    return max(1, min(BATCH_ITEMS, items // (BATCHES_PER_WORKER * max(1, workers))))


def map_on_cluster(
    work: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    scheduler: str,
    timeout: float | None,
    on_note: Callable[[str], None],
) -> Iterator[tuple[int, Any]]:
    """Yield (index, result) for every item as its batch completes, as workers.map_isolated does."""
    # held for the whole local run: the cluster reads part of LOCAL_CONFIG while it runs
    with dask.config.set(LOCAL_CONFIG if scheduler.startswith(LOCAL_PREFIX) else {}):
        client, cluster = connect(scheduler)
        try:
            items = list(items)
            size = batch_size(len(items), sum(client.nthreads().values()))
            groups = [list(range(lo, min(lo + size, len(items)))) for lo in range(0, len(items), size)]
            futures: dict[str, Any] = {}
            open_tasks: dict[str, list[int]] = {}  # key -> the item indices of that task
            completed = as_completed()

            def submit(indices_of_tasks: list[list[int]]) -> None:
                batches = [[items[index] for index in indices] for indices in indices_of_tasks]
                try:
                    mapped = client.map(run_batch, [work] * len(batches), batches, pure=False, retries=0)
                except Exception:  # the client lost its scheduler: the items stay open until the cluster is lost
                    open_tasks.update({f"unsubmitted-{indices[0]}": indices for indices in indices_of_tasks})
                    return
                for indices, future in zip(indices_of_tasks, mapped, strict=True):
                    futures[future.key], open_tasks[future.key] = future, indices
                    completed.add(future)

            submit(groups)
            clock = _Clock(client, timeout)
            while open_tasks:
                ready = completed.next_batch(block=False) if completed.has_ready() else []
                for future in ready:
                    if future.key not in open_tasks or future.status == "cancelled":
                        continue  # cancelled by a client that lost its scheduler: open until the cluster is lost
                    answer = _taken(future)
                    if answer is RECOMPUTED:  # taken when computed again
                        completed.add(future)
                        continue
                    indices = open_tasks.pop(future.key)
                    del futures[future.key]  # the cluster may forget it now
                    if isinstance(answer, list):
                        for index, (ok, value) in zip(indices, answer, strict=True):
                            yield index, value if ok else WorkRaised(value)
                    elif len(indices) > 1:  # the batch failed as a whole: find the item that makes it fail
                        submit([[index] for index in indices])
                    else:
                        yield indices[0], answer
                for key, worker in clock.overdue(open_tasks):
                    indices = open_tasks.pop(key)
                    futures.pop(key).cancel()
                    _restart(client, worker, on_note)
                    if len(indices) > 1:
                        submit([[index] for index in indices])
                    else:
                        yield indices[0], WorkerTimedOut(f"ran longer than {timeout:g} s on {worker}")
                reason = clock.lost()
                if reason is not None:
                    yield from _unanswered(open_tasks, reason, on_note)
                elif not ready:
                    time.sleep(POLL_S)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


def _restart(client: Client, worker: str, on_note: Callable[[str], None]) -> None:
    try:
        client.restart_workers([worker], timeout=RESTART_TIMEOUT_S)
    except Exception as error:  # a worker without a nanny, or one that did not come back
        on_note(f"worker {worker} could not be restarted after a time limit ({type(error).__name__}: {error})")


def _unanswered(
    open_tasks: dict[str, list[int]], reason: str, on_note: Callable[[str], None]
) -> Iterator[tuple[int, Any]]:
    """ClusterLost for every item still open (all of them closed here), said once through `on_note`."""
    indices = sorted(index for task in open_tasks.values() for index in task)
    open_tasks.clear()
    on_note(f"the Dask cluster {reason}: {len(indices)} items not worked, each reported as its worker crashed")
    for index in indices:
        yield index, ClusterLost(f"not worked: the Dask cluster {reason}")
