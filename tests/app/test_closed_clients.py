"""A browser closed mid-update is one server log line.

A browser closed mid-update is one server log line (explorer.ui.closed); other errors keep a traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

from tornado.websocket import WebSocketClosedError

from explorer.ui.closed import CLOSED_CLIENT_LINE, quiet_closed_clients


def _unretrieved(error: BaseException) -> None:
    """A task that raised `error` and was never awaited, dropped: asyncio logs 'Task exception was never retrieved'."""

    async def failing():
        raise error

    def drop() -> None:  # on a thread of its own: no loop runs there, whatever an earlier test left running here
        loop = asyncio.new_event_loop()
        try:
            task = loop.create_task(failing())
            loop.run_until_complete(asyncio.sleep(0.01))
            del task
            gc.collect()
        finally:
            loop.close()

    thread = threading.Thread(target=drop)
    thread.start()
    thread.join()


def test_a_closed_websocket_is_one_line_and_another_error_keeps_its_traceback(caplog):
    quiet_closed_clients()
    quiet_closed_clients()  # once per process, however many sessions run the app's script
    assert len([f for f in logging.getLogger("asyncio").filters if type(f).__name__ == "ClosedClientFilter"]) == 1
    with caplog.at_level(logging.INFO, logger="asyncio"):
        _unretrieved(WebSocketClosedError())
        _unretrieved(ValueError("a real fault"))
    closed, fault = caplog.records
    assert closed.getMessage() == CLOSED_CLIENT_LINE.format(name="WebSocketClosedError")
    assert closed.exc_info is None and "\n" not in logging.Formatter().format(closed)  # one line, no traceback
    assert fault.levelno == logging.ERROR and fault.exc_info[0] is ValueError
    assert "Task exception was never retrieved" in fault.getMessage()
    assert "Traceback" in logging.Formatter().format(fault)
