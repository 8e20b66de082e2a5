"""One browser action, one message: the page changes an action makes reach the browser together.

Panel applies a change made on one of its worker threads through a callback it hands the document, which the
session's loop runs later, each its own message to the browser, and each message relays the whole page; a
`pn.io.hold()` taken on the worker gathers none of them (the loop runs them after the hold let go: a packet row's
click sent eleven messages). `one_message()` holds the document on the loop; on a worker it keeps the callbacks the
thread hands the document and, when the action ends, runs them together on the loop under one hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import Callable, Iterator
from functools import partial

import panel as pn
from bokeh.document import Document

from explorer.ui.background import SessionLoop

log = logging.getLogger(__name__)

PANEL_PLUMBING = "panel.io.document"  # the module of Panel's hold: its callbacks go to the loop as Panel meant
_gathering = threading.local()  # this worker thread's (document, callbacks) while an action's changes are kept


def install() -> None:
    """Let `Document.add_next_tick_callback` keep the callbacks of a thread gathering for that document, and run
    HoloViews' stream events under the document's lock, once."""
    from holoviews.plotting.bokeh.callbacks import Callback

    # A map's click (a HoloViews stream event) ran on the loop without the lock: a change made there before Panel
    # called the page loaded raised in Bokeh, the click lost (docs/app-internals.md). Panel's `with_lock` flag:
    Callback.process_on_event.lock = Callback.process_on_change.lock = True
    handed = Document.add_next_tick_callback
    if getattr(handed, "gathers", False):
        return

    def add_next_tick_callback(document: Document, callback: Callable):
        kept = getattr(_gathering, "kept", None)
        if kept is None or kept[0] is not document or _passes(callback):
            return handed(document, callback)
        kept[1].append(callback)
        return None

    add_next_tick_callback.gathers = True
    Document.add_next_tick_callback = add_next_tick_callback


def _passes(callback: Callable) -> bool:
    """A coroutine, or Panel's own plumbing (the end of a hold taken on the worker: kept, it would end ours early)."""
    while isinstance(callback, partial):
        callback = callback.func
    plumbing = getattr(callback, "__module__", None) == PANEL_PLUMBING
    return plumbing or inspect.iscoroutinefunction(inspect.unwrap(callback))


@contextlib.contextmanager
def one_message() -> Iterator[None]:
    """The page changes made inside reach the browser as one message (nested: the outer one's)."""
    loop = SessionLoop.of(pn.state.curdoc)
    if loop is None or getattr(_gathering, "kept", None) is not None:
        yield
    elif loop.is_current():
        with pn.io.hold():
            yield
    else:
        _gathering.kept = kept = (loop.document, [])
        try:
            yield
        finally:
            _gathering.kept = None
            if kept[1]:
                loop.call(partial(_run_held, kept[1]))


def _run_held(callbacks: list[Callable]):
    """On the loop: run the kept callbacks under one hold; what they return to await, awaited after it."""
    pending = []
    with pn.io.hold():
        for callback in callbacks:
            try:
                if inspect.isawaitable(done := callback()):
                    pending.append(done)
            except Exception:  # Panel's own callbacks report their errors; one failing must not drop the others
                log.exception("a page change failed")
    return asyncio.gather(*pending) if pending else None
