"""A browser that closed while an update was on its way: one server log line, not a traceback.

An update queued for a page that closed meets a closed websocket, which asyncio reports with a full traceback an
operator cannot tell from a fault; other errors keep theirs (docs/triage-and-app.md, "Server log").
"""

from __future__ import annotations

import logging

CLOSED_CLIENT_LINE = "a browser closed before an update reached it ({name}); the update was dropped"
REPORTING_LOGGERS = ("asyncio", "tornado.application", "tornado.general")
CLOSED_ERRORS = ("WebSocketClosedError", "StreamClosedError")  # tornado's: a websocket, its underlying stream
MAX_CAUSES = 8  # links of an exception's cause/context chain looked at


def closed_client_error(error: BaseException | None) -> BaseException | None:
    """The closed-connection error in `error`'s cause/context chain (by class name, Tornado not imported), or None."""
    for _ in range(MAX_CAUSES):
        if error is None:
            return None
        if any(cls.__name__ in CLOSED_ERRORS for cls in type(error).__mro__):
            return error
        error = error.__cause__ or error.__context__
    return None


class ClosedClientFilter(logging.Filter):
    """Rewrites a record carrying a closed-connection error as one line (no traceback); passes every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        closed = closed_client_error(error)
        if closed is None:
            return True
        record.msg, record.args = CLOSED_CLIENT_LINE.format(name=type(closed).__name__), ()
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)  # not a fault
        return True


def quiet_closed_clients() -> None:
    """Install ClosedClientFilter on REPORTING_LOGGERS, once per process."""
    for name in REPORTING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, ClosedClientFilter) for existing in logger.filters):
            logger.addFilter(ClosedClientFilter())
