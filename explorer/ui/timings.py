"""Per-session server timings, one INFO line each on the `explorer` logger; changes nothing.

From the page request to the document built and to the first status line, naming the serving process.
"""

from __future__ import annotations

import logging
import os
import time

import panel as pn

log = logging.getLogger("explorer")  # the logger the operators' log configuration names
LOG_FORMAT = "%(asctime)s %(message)s"  # as `panel serve` prints its own lines


def log_info_lines() -> None:
    """Let the `explorer` logger's INFO lines through (unless its level is set), on stderr when no handler would."""
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)
    if not log.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        log.addHandler(handler)


class SessionTimings:
    """One session's clock, started when its page request runs the app script."""

    def __init__(self):
        self.requested = time.perf_counter()
        context = pn.state.curdoc.session_context if pn.state.curdoc is not None else None
        self.session = context.id if context is not None else "-"
        self._loaded = self._status_logged = False
        pn.state.onload(self._on_load)

    def _since(self) -> float:
        return time.perf_counter() - self.requested

    def _on_load(self) -> None:
        self._loaded = True

    def document_built(self) -> None:
        log.info(
            "session %s: document built %.3f s after the page request in process %d",
            self.session,
            self._since(),
            os.getpid(),
        )

    def status_shown(self, packet: str) -> None:
        """The shell showed a status line (only the session's first is logged)."""
        if self._status_logged:
            return
        self._status_logged = True
        how = "pushed to the open page" if self._loaded else "sent with the document"
        log.info(
            "session %s: status line of %r %s %.3f s after the page request", self.session, packet, how, self._since()
        )
