"""One action, one message (explorer.ui.batch): a worker's page changes run on the loop at once."""

from __future__ import annotations

import threading
from functools import partial

from bokeh.document import Document
from panel.io.document import retrigger_events
from panel.io.state import set_curdoc

from explorer.ui import batch
from explorer.ui.background import SessionLoop


class _Loop:
    """A session's loop as one_message sees it: on another thread; what it is handed waits in `handed`."""

    def __init__(self, document: Document):
        self.document, self.handed = document, []
        SessionLoop._of[document] = self

    def is_current(self) -> bool:
        return False

    def call(self, callback) -> None:
        self.handed.append(callback)


def _on_worker(work) -> None:
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()


def test_an_actions_callbacks_reach_the_loop_as_one_call_in_their_order_and_a_failing_one_drops_none():
    batch.install()
    document = Document()
    loop = _Loop(document)
    ran = []

    def fails():
        raise RuntimeError("a broken page change")

    def action():
        with set_curdoc(document), batch.one_message():
            document.add_next_tick_callback(partial(ran.append, "first"))
            with batch.one_message():  # nested: the outer action's message
                document.add_next_tick_callback(fails)
            document.add_next_tick_callback(partial(ran.append, "last"))

    _on_worker(action)
    assert len(loop.handed) == 1 and ran == []  # kept until the action ended, then handed over once
    with set_curdoc(document):
        loop.handed[0]()
    assert ran == ["first", "last"]


def test_outside_an_action_and_for_coroutines_or_panels_plumbing_the_document_gets_the_callback():
    batch.install()
    document = Document()
    loop = _Loop(document)

    async def redraw():
        """A coroutine: Bokeh awaits it on the loop itself."""

    def action():
        with set_curdoc(document), batch.one_message():
            document.add_next_tick_callback(redraw)

    _on_worker(action)
    assert loop.handed == []  # the coroutine went to the document: nothing kept, nothing handed over
    assert batch._passes(partial(retrigger_events, document, []))  # Panel's own: as Panel meant it
    assert not batch._passes(partial(print, "a page change"))
    document.add_next_tick_callback(lambda: None)  # no action open on this thread: Bokeh's own method


def test_a_maps_click_runs_under_the_documents_lock():
    """Panel schedules a HoloViews stream event (a map's click) for the loop; without the lock (`nolock`) a change made
    in it before the page was called loaded raised in Bokeh and the click was lost."""
    from holoviews.plotting.bokeh.callbacks import Callback
    from panel.io.server import async_execute

    batch.install()
    scheduled = []

    class Served:  # a served session's document, as the scheduler reads it
        session_context = object()

        def add_next_tick_callback(self, callback) -> None:
            scheduled.append(callback)

    click = Callback.__new__(Callback)  # its scheduling reads only the method
    with set_curdoc(Served()):
        async_execute(click.process_on_event)
        async_execute(click.process_on_change)
    assert len(scheduled) == 2 and not any(getattr(callback, "nolock", False) for callback in scheduled)
