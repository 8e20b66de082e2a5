"""Triage on a Dask cluster: the local pool's JSON lines, and error lines for bad tasks.

Triage on a Dask cluster: the same JSON lines as the local pool, one error line for a raising task and for a
killed worker, path_missing for a path the workers cannot see, batches split so that a crash, a raise or a
hang costs only its own item; without a scheduler Dask is never imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle
import dask
import pytest
from dask.utils import parse_timedelta
from distributed import LocalCluster

from explorer.catalog import cluster as cluster_module
from explorer.catalog.cluster import BATCH_ITEMS, BATCHES_PER_WORKER, LOCAL_CONFIG, _Clock, batch_size, map_on_cluster
from explorer.catalog.discovery import Entry, discover
from explorer.catalog.summary import ERROR, INTERNAL_ERROR, WORKER_CRASHED, summarize
from explorer.catalog.triage import json_line, triage
from explorer.catalog.workers import ClusterLost, WorkerCrashed, WorkerTimedOut, WorkRaised

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_packets"
CRASH_NAME, RAISE_NAME = "fp16-kv", "discarded-sample"

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module


@pytest.fixture(scope="module")
def scheduler():
    """A cluster set up as `--scheduler local:2` sets up its own (a task whose worker died re-runs once)."""
    with (
        dask.config.set(LOCAL_CONFIG),
        LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
    ):
        yield cluster.scheduler_address


def crashing_summarize(path: str):
    """summarize, except that one packet kills its worker process and another raises."""
    if path.endswith(CRASH_NAME):
        os._exit(70)
    if path.endswith(RAISE_NAME):
        raise RuntimeError("a programming error")
    return summarize(path)


def _lines(items) -> list[str]:
    return sorted(json_line(item) for item in items)


def test_the_cluster_gives_the_local_pools_json_lines(scheduler):
    entries = discover(SAMPLES)
    assert _lines(triage(entries, jobs=2, scheduler=scheduler)) == _lines(triage(entries, jobs=2))


def test_a_raising_task_and_a_killed_worker_each_end_as_one_error_line(scheduler):
    entries = discover(SAMPLES)
    items = list(triage(entries, jobs=2, scheduler=scheduler, work=crashing_summarize))
    assert sorted(item.name for item in items) == [entry.name for entry in entries]
    errors = {item.name: item.summary.codes for item in items if item.summary.status == ERROR}
    assert errors == {CRASH_NAME: (WORKER_CRASHED,), RAISE_NAME: (INTERNAL_ERROR,)}
    others = {item.name: item.summary for item in items if item.name not in errors}
    assert others == {name: summarize(SAMPLES / name) for name in others}


def test_a_path_the_workers_cannot_see_is_that_packets_path_missing(scheduler, tmp_path):
    missing = Entry("elsewhere", tmp_path / "not-on-the-workers")
    (item,) = triage([missing], jobs=1, scheduler=scheduler)
    assert (item.summary.status, item.summary.codes) == ("refused", ("path_missing",))


def test_the_command_runs_on_a_local_cluster():
    completed = subprocess.run(
        [sys.executable, "-m", "explorer", "triage", str(SAMPLES), "--json", "--scheduler", "local:2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert sorted(json.loads(line)["name"] for line in completed.stdout.splitlines()) == [
        entry.name for entry in discover(SAMPLES)
    ]
    assert "(Dask scheduler local:2," in completed.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "explorer", "triage", str(SAMPLES), "--scheduler", "local:0"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert bad.returncode == 2 and "local:N takes N from 1 to 64" in bad.stderr


NO_DASK = """
import sys
import explorer
from explorer.cli import main
assert main(["triage", sys.argv[1], "--json", "--jobs", "2"]) == 0
frame = explorer.triage(sys.argv[1], jobs=2)
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("dask", "distributed"))
print(loaded, file=sys.stderr)
sys.exit(1 if loaded else 0)
"""


def test_without_a_scheduler_dask_is_never_imported():
    completed = subprocess.run(
        [sys.executable, "-c", NO_DASK, str(SAMPLES)], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert completed.returncode == 0, completed.stderr


ITEMS = 16  # 2 per batch on 2 workers: several items share each batch, and a hanging batch waits 2 x its limit
CRASHING_ITEM, RAISING_ITEM, HANGING_ITEM = 3, 8, 13  # in three batches


def squaring_work(item: int) -> int:
    """item squared, except that one item kills its worker, one raises and one hangs."""
    if item == CRASHING_ITEM:
        os._exit(70)
    if item == RAISING_ITEM:
        raise ValueError("thirteen")
    if item == HANGING_ITEM:
        time.sleep(600)
    return item * item


WORK_TIMEOUT_S = 10  # per item: far above a healthy item even on a loaded 2-core machine (2 s flaked under xdist)


def test_batches_are_split_so_a_crash_a_raise_and_a_hang_cost_only_their_own_item(scheduler):
    items = list(range(ITEMS))
    assert batch_size(len(items), 2) == 2  # so several items share each batch
    results = dict(
        map_on_cluster(squaring_work, items, scheduler=scheduler, timeout=WORK_TIMEOUT_S, on_note=lambda note: None)
    )
    assert sorted(results) == items
    assert isinstance(results.pop(CRASHING_ITEM), WorkerCrashed)
    assert isinstance(results.pop(HANGING_ITEM), WorkerTimedOut)
    raised = results.pop(RAISING_ITEM)
    assert isinstance(raised, WorkRaised) and str(raised) == "ValueError: thirteen"
    assert results == {item: item * item for item in results}


def test_batches_hold_at_most_batch_items_and_give_every_worker_several():
    assert batch_size(2_000, 2) == BATCH_ITEMS
    assert batch_size(12, 2) == 1 and batch_size(0, 2) == 1
    assert batch_size(100, 4) == 100 // (BATCHES_PER_WORKER * 4)


def test_a_batch_has_the_per_item_limit_times_its_items():
    class Processing:
        def processing(self):
            return {"tcp://worker": ["batch", "single"]}

    clock = _Clock(Processing(), timeout=2.0)
    started = time.monotonic() - 5.0  # both tasks have run 5 s: past 2 s for one item, not past 8 s for four
    clock.since = {"batch": (started, "tcp://worker"), "single": (started, "tcp://worker")}
    assert clock.overdue({"batch": [0, 1, 2, 3], "single": [4]}) == [("single", "tcp://worker")]


def first_item_only(item: int) -> int:
    """item squared for item 0; every other item waits far longer than any test (its cluster is lost meanwhile)."""
    if item:
        time.sleep(600)
    return item * item


def _close_workers(cluster: LocalCluster) -> None:
    cluster.scale(0)  # workers and their nannies closed: none comes back


def _close_scheduler(cluster: LocalCluster) -> None:
    cluster.close()  # the scheduler with its workers


@pytest.mark.parametrize("lose", [_close_workers, _close_scheduler], ids=["no-worker-left", "scheduler-gone"])
def test_a_lost_cluster_answers_every_open_item_with_its_reason_and_the_run_ends(monkeypatch, lose):
    """Driven without a clock: the cluster is lost on purpose after the first answer, and a cluster without a
    worker is lost at once (WORKERLESS_S 0; the client gives up on a closed scheduler after CONNECT_TIMEOUT_S)."""
    monkeypatch.setattr(cluster_module, "WORKERLESS_S", 0.0)
    monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT_S", 1)  # how long the client tries to reconnect
    notes = []
    with (
        dask.config.set(LOCAL_CONFIG),
        LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
    ):
        results = map_on_cluster(
            first_item_only, list(range(4)), scheduler=cluster.scheduler_address, timeout=None, on_note=notes.append
        )
        assert next(results) == (0, 0)
        lose(cluster)
        rest = dict(results)
    assert sorted(rest) == [1, 2, 3]
    assert all(isinstance(result, ClusterLost) and isinstance(result, WorkerCrashed) for result in rest.values())
    reason = "had no worker left" if lose is _close_workers else "lost its scheduler"
    assert all(str(result).startswith(f"not worked: the Dask cluster {reason}") for result in rest.values())
    assert len(notes) == 1 and f"the Dask cluster {reason}" in notes[0] and "3 items not worked" in notes[0]


LOST_WORKER_TIMEOUT = "distributed.deploy.lost-worker-timeout"


def test_a_local_run_holds_its_lost_worker_timeout_until_it_ends(monkeypatch):
    """A LocalCluster reads lost-worker-timeout at each worker's removal, while the run goes on; with Dask's 15 s it
    closed for good the nannies restarting both workers after a crash, 15 s after an earlier removal of the same
    names (the batch-split test above, in a .ci/run on a loaded machine): the cluster was lost. A local run holds
    LOCAL_CONFIG's value, longer than WORKERLESS_S, until it ends, and gives the default back after."""
    for name in cluster_module.QUIET:  # connect() quiets the workers it starts through this process's environment
        monkeypatch.delenv(name, raising=False)
    default = dask.config.get(LOST_WORKER_TIMEOUT)
    seen = [
        dask.config.get(LOST_WORKER_TIMEOUT)
        for _ in map_on_cluster(abs, [-1, 2], scheduler="local:1", timeout=None, on_note=lambda note: None)
    ]
    assert seen == [LOCAL_CONFIG[LOST_WORKER_TIMEOUT]] * 2
    assert parse_timedelta(seen[0]) > cluster_module.WORKERLESS_S
    assert dask.config.get(LOST_WORKER_TIMEOUT) == default
