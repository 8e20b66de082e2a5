"""A session's browser actions handled in the order they arrived, whichever thread runs each.

Panel's loop hands each message of a page to its thread pool in the order the browser sent them; the threads then
raced for the session's lock (a packet row clicked just before a campaign button was now and then opened after it,
closing the campaign). `ArrivalPool` numbers each callback per session as the loop submits it; `wait_for_earlier()`
waits until the session's callbacks that arrived before this thread's are done (other threads never wait).
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import panel as pn
from bokeh.document import Document

log = logging.getLogger(__name__)

# A safety bound, never reached by a live page: an earlier callback still running after this long no longer holds
# a later one back (a wedged callback must not freeze its session).
EARLIER_WAIT_S = 60.0

_numbers = itertools.count(1)
_pending: dict[int, set[int]] = defaultdict(set)  # id(document) -> numbers of its callbacks not done yet
_changed = threading.Condition()
_here = threading.local()  # this thread's (document id, number) while it runs a numbered callback


def _document_of(work, args: tuple) -> Document | None:
    while isinstance(work, functools.partial):
        args, work = (*work.args, *args), work.func
    return next((arg for arg in args if isinstance(arg, Document)), None)


class ArrivalPool(ThreadPoolExecutor):
    """A thread pool numbering each callback it is given with its session, in the order it is given them."""

    def submit(self, work, /, *args, **kwargs):
        key = None if (document := _document_of(work, args)) is None else id(document)
        with _changed:
            number = next(_numbers)
            if key is not None:
                _pending[key].add(number)
        return super().submit(_numbered, key, number, work, *args, **kwargs)


def _numbered(key: int | None, number: int, work, *args, **kwargs):
    _here.arrival = (key, number)
    try:
        return work(*args, **kwargs)
    finally:
        _here.arrival = None
        if key is not None:
            with _changed:
                _pending[key].discard(number)
                if not _pending[key]:
                    del _pending[key]
                _changed.notify_all()


def wait_for_earlier() -> None:
    """Wait until every callback of this thread's session that arrived before this thread's is done."""
    key, number = getattr(_here, "arrival", None) or (None, 0)
    if key is None:
        return
    with _changed:
        done = _changed.wait_for(lambda: all(other >= number for other in _pending.get(key, ())), EARLIER_WAIT_S)
    if not done:
        log.warning("an earlier callback of this session ran for %.0f s; this one went ahead", EARLIER_WAIT_S)


def install_arrival_pool() -> None:
    """Make Panel's thread pool (started by `pn.config.nthreads`) an ArrivalPool of as many threads, once."""
    pool = pn.state._thread_pool  # Panel's pool for browser callbacks; no public way to give it another
    if pool is None or isinstance(pool, ArrivalPool):
        return
    pn.state._thread_pool = ArrivalPool(max_workers=pool._max_workers)
    pool.shutdown(wait=False)
