"""SingleFlight: one computation per key at a time, shared by every thread asking meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Result = TypeVar("Result")


class _Flight(Generic[Result]):
    """One computation under way: who waits for it waits on `done`, then reads `result` or `error`."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Result | None = None
        self.error: BaseException | None = None


class SingleFlight(Generic[Result]):
    """Runs `compute` for a key unless a computation of that key is under way; then waits for it and shares its
    result (or its exception). The caller's cache, checked inside `compute`, serves keys computed earlier."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, _Flight[Result]] = {}

    def run(self, key: Hashable, compute: Callable[[], Result]) -> Result:
        with self._lock:
            flight = self._flights.get(key)
            leading = flight is None
            if leading:
                flight = self._flights[key] = _Flight()
        if not leading:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.result
        try:
            flight.result = compute()
        except BaseException as error:
            flight.error = error
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()
        return flight.result

    def running(self) -> int:
        """How many keys are being computed now."""
        with self._lock:
            return len(self._flights)
