"""ForkSafeExecutor: a process-wide thread pool that a forked child replaces with a pool of its own.

A fork copies a pool but none of its threads, so work submitted in the child would never run; `panel serve
--num-procs N` and multiprocessing workers fork (docs/app-internals.md, Serving: what a session costs).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor


class ForkSafeExecutor(Executor):
    """A ThreadPoolExecutor of this process; a child forked from it starts with a fresh one."""

    def __init__(self, max_workers: int, thread_name_prefix: str):
        self._options = {"max_workers": max_workers, "thread_name_prefix": thread_name_prefix}
        self._pool = ThreadPoolExecutor(**self._options)
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._pool = ThreadPoolExecutor(**self._options)

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
