"""ForkSafeExecutor: work submitted in a forked child runs there; a plain thread pool's does not."""

from __future__ import annotations

import os
import select
from concurrent.futures import ThreadPoolExecutor

import pytest

from explorer.foundations.executors import ForkSafeExecutor

CHILD_WAIT_S = 3.0


def _child_runs_submitted_work(executor) -> bool:
    """Fork; the child submits work to `executor` and says through a pipe whether it ran within CHILD_WAIT_S."""
    executor.submit(os.getpid).result()  # the pool has a thread before the fork
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            ran = executor.submit(os.getpid).result(timeout=CHILD_WAIT_S) == os.getpid()
        except Exception:
            ran = False
        os.write(writing, b"1" if ran else b"0")
        os._exit(0)
    os.close(writing)
    try:
        ready, _, _ = select.select([reading], [], [], 2 * CHILD_WAIT_S)
        return bool(ready) and os.read(reading, 1) == b"1"
    finally:
        os.close(reading)
        os.waitpid(child, 0)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_work_submitted_in_a_forked_child_runs_there_and_the_parent_keeps_its_pool():
    executor = ForkSafeExecutor(max_workers=1, thread_name_prefix="test-fork-safe")
    assert _child_runs_submitted_work(executor)
    assert executor.submit(os.getpid).result() == os.getpid()


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_plain_thread_pool_used_before_a_fork_never_runs_the_childs_work():
    assert not _child_runs_submitted_work(ThreadPoolExecutor(max_workers=1))  # what ForkSafeExecutor is for
