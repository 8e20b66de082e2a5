"""A batch whose results are lost before they are taken never stops the run (a fake cluster plays it).

Seen once in a full run on a loaded machine: a batch finished, its worker died before the client took the
results, the scheduler queued the batch again behind a hanging task on the only other worker, and the loop
waited for the results without a limit, so the hanging task's time limit was never kept (pytest's 600 s
timeout ended it). The fake cluster plays that order of events deterministically.
"""

from __future__ import annotations

from explorer.catalog import cluster as cluster_module
from explorer.catalog.cluster import map_on_cluster
from explorer.catalog.workers import WorkerTimedOut

WORKER = "tcp://worker"


class LostThenRecomputed:
    """A future that finished but whose results went with its worker: taken only after the restart computes it."""

    key, status = "batch-0", "finished"

    def __init__(self):
        self.recomputed = False

    def result(self, timeout=None):
        if self.recomputed:
            return [(True, 0)]
        if timeout is None:
            raise AssertionError("waited without a limit for results only a restart brings back")
        self.status = "pending"  # what the client does after a failed gather: the scheduler computes it again
        raise TimeoutError


class Hanging:
    key, status = "batch-1", "pending"

    def cancel(self):
        self.status = "cancelled"


class FakeCluster:
    """The client and its as_completed: batch-0 ready first, batch-1 processing on WORKER until it is restarted."""

    def __init__(self):
        self.lost, self.hanging = LostThenRecomputed(), Hanging()
        self.ready = []  # batch-0 comes in finished when mapped

    def nthreads(self):
        return {WORKER: 1}

    def map(self, function, works, batches, **options):
        assert batches == [[0], [1]]
        return [self.lost, self.hanging]

    def processing(self):
        return {WORKER: [self.hanging.key]}

    def restart_workers(self, workers, timeout):
        assert workers == [WORKER]
        self.lost.recomputed, self.lost.status = True, "finished"
        self.ready.append(self.lost)

    def close(self):
        pass

    def add(self, future):
        if future.status == "finished":
            self.ready.append(future)

    def has_ready(self):
        return bool(self.ready)

    def next_batch(self, block):
        ready, self.ready = self.ready, []
        return ready


def test_results_lost_with_their_worker_are_taken_when_computed_again_and_the_time_limit_is_kept(monkeypatch):
    fake = FakeCluster()
    monkeypatch.setattr(cluster_module, "connect", lambda scheduler: (fake, None))
    monkeypatch.setattr(cluster_module, "as_completed", lambda: fake)
    monkeypatch.setattr(cluster_module, "PROCESSING_POLL_S", 0.0)
    results = dict(map_on_cluster(lambda item: item, [0, 1], scheduler="fake", timeout=0.01, on_note=print))
    assert results.pop(0) == 0
    assert isinstance(results.pop(1), WorkerTimedOut) and not results
