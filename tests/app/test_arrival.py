"""A session's actions run in the order they arrived on Panel's pool, whichever thread is first."""

from __future__ import annotations

import threading

from bokeh.document import Document

from explorer.ui.arrival import ArrivalPool, wait_for_earlier
from explorer.ui.mode import one_at_a_time


class Page:
    """A session's shell reduced to its lock and two actions that each choose what the page shows."""

    def __init__(self):
        self.lock = threading.RLock()
        self.shown: list[str] = []

    @one_at_a_time
    def show(self, what: str) -> None:
        self.shown.append(what)


def test_an_action_that_arrived_later_waits_for_one_whose_thread_is_slower_to_reach_the_lock():
    page, document = Page(), Document()
    row_reached_its_thread, row_may_go_on = threading.Event(), threading.Event()
    campaign_started = threading.Event()

    def row_click(_document):  # the packet row: its thread is held up before it reaches the shell
        row_reached_its_thread.set()
        row_may_go_on.wait()
        page.show("packet")

    def campaign_click(_document):
        campaign_started.set()
        page.show("campaign")

    with ArrivalPool(max_workers=2) as pool:
        row = pool.submit(row_click, document)
        row_reached_its_thread.wait()
        campaign = pool.submit(campaign_click, document)
        campaign_started.wait()  # the campaign's thread runs while the row's is still held up
        row_may_go_on.set()
        row.result(), campaign.result()
    assert page.shown == ["packet", "campaign"]


def test_sessions_do_not_wait_for_each_other():
    page, mine, other = Page(), Document(), Document()
    other_may_end = threading.Event()
    with ArrivalPool(max_workers=2) as pool:
        held = pool.submit(lambda _document: other_may_end.wait(), other)
        pool.submit(lambda _document: page.show("mine"), mine).result()  # returns while the other session's runs
        other_may_end.set()
        held.result()
    assert page.shown == ["mine"]


def test_calls_outside_the_pool_never_wait():
    wait_for_earlier()  # a test, a notebook or the server's loop: nothing to wait for
