"""A worker found dead as it is handed an item: the item it died on is still reported, once."""

from __future__ import annotations

import os
import time

from explorer.catalog.workers import WorkerCrashed, map_isolated

CRASHING_ITEM = 1
DEAD_BY_S = 1.0  # the parent waits this long after the first answer: its worker has died on the next item by then


def exit_on_the_crashing_item(item: int) -> int:
    if item == CRASHING_ITEM:
        os._exit(70)
    return item


def test_a_worker_found_dead_when_it_is_handed_an_item_still_answers_the_item_it_died_on():
    """One worker holding items 0 and 1 answers 0 and dies on 1; the parent, slow to ask for more, finds it dead as
    it hands out item 2. Item 1 is WorkerCrashed, 2 and 3 are worked by a new worker (item 1 was once lost)."""
    results = {}
    for index, result in map_isolated(exit_on_the_crashing_item, [0, 1, 2, 3], jobs=1, timeout=None):
        results[index] = result
        time.sleep(DEAD_BY_S if index == 0 else 0)
    assert sorted(results) == [0, 1, 2, 3]
    assert isinstance(results.pop(CRASHING_ITEM), WorkerCrashed)
    assert results == {0: 0, 2: 2, 3: 3}
