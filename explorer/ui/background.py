"""The app's one background runner: every export, campaign computation and emulation runs through it.

In a served session `Runner.run` submits the work to a bounded process-wide ForkSafeExecutor and hands the answer to
the session's loop; outside one (tests, notebooks) it runs at once. Whatever the work raises, the answer hears it.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import ClassVar, TypeVar

import panel as pn
from panel.io.state import set_curdoc
from tornado.ioloop import IOLoop

from explorer.export.browser import RenderError
from explorer.foundations.bounded import clip
from explorer.foundations.executors import ForkSafeExecutor
from explorer.views.shared.common import served
from explorer.views.shared.markup import esc

log = logging.getLogger(__name__)

Result = TypeVar("Result")
Answer = Callable[[object, BaseException | None], None]
# Exports rendering at once, whichever sessions asked (each starts a chromium and renders a page: more at once only
# queue for the same two cores); the others wait their turn on the executor, their buttons showing that they run.
EXPORT_WORKERS = 2
EXPORT_EXECUTOR = ForkSafeExecutor(max_workers=EXPORT_WORKERS, thread_name_prefix="explorer-export")
# Emulation sets and campaign computations at once in this process; the others wait their turn, their progress shown.
BACKGROUND_WORKERS = 4
BACKGROUND_EXECUTOR = ForkSafeExecutor(max_workers=BACKGROUND_WORKERS, thread_name_prefix="explorer-background")
# Panel drops a change made inside `pn.io.hold()` before the page reports itself loaded (document_ready), counting on
# the document sent at connection; one made after that was serialized and before the page loaded was lost (a
# computed emulation map never drawn). Answers wait for the loaded page, checked this often, at most this long.
LOADED_POLL_S = 0.1
LOADED_WAIT_S = 60.0


def failure_note(what: str, export_dir: Path, error: BaseException) -> str:
    """The note of an export that wrote nothing: where it could not write and why, what is missing to render PNGs
    (a RenderError, said whole: it names what to install), or the unexpected error."""
    if isinstance(error, OSError):
        where, reason = esc(clip(str(export_dir))), esc(clip(error.strerror or str(error)))
        return f"{esc(what)} wrote nothing: it could not write to <code>{where}</code>: {reason}."
    if isinstance(error, RenderError):
        return f"{esc(what)} wrote nothing: {esc(error)}."
    return f"{esc(what)} wrote nothing: {esc(type(error).__name__)}: {esc(clip(str(error)))}"


def error_line(what: str, error: BaseException) -> str:
    return f"{what} failed: {type(error).__name__}: {clip(str(error))}"


def _attempt(work: Callable[[], Result]) -> tuple[Result | None, BaseException | None]:
    try:
        return work(), None
    except Exception as error:
        if not isinstance(error, (OSError, RenderError)):
            log.exception("background work failed")
        return None, error


class SessionLoop:
    """A served session's loop, which any thread hands a callback to run with the session's document locked and
    current. Through the IO loop's one thread-safe method, never the document's callback list from another thread:
    a callback added there while the loop thread drained the document's held events was lost (a campaign grid
    never drawn in 2 bursts of page loads of 4 beside 3 CPU burners)."""

    _of: ClassVar[weakref.WeakKeyDictionary] = weakref.WeakKeyDictionary()  # document -> its session's loop

    def __init__(self, document):
        self.document, self._loop = document, IOLoop.current()  # made on the loop, as the session's page is built
        self._thread = threading.get_ident()
        SessionLoop._of[document] = self

    @classmethod
    def of(cls, document) -> SessionLoop | None:
        """The loop of `document`'s served session (None outside one, or before its page was built)."""
        return None if document is None else cls._of.get(document)

    def is_current(self) -> bool:
        return threading.get_ident() == self._thread

    def call(self, callback: Callable[[], object], seconds: float = 0.0) -> None:
        """Run `callback` on the loop (from any thread; after `seconds` only from the loop itself), awaiting what it
        returns to await."""
        if seconds:
            self._loop.call_later(seconds, self._locked, callback)
        else:
            self._loop.add_callback(self._locked, callback)

    async def _locked(self, callback: Callable[[], None]) -> None:
        async def run(_document) -> None:
            with set_curdoc(self.document):
                if inspect.isawaitable(result := callback()):
                    await result

        await self.document.session_context.with_locked_document(run)  # returns at once for a destroyed session


class Runner:
    """One session's background work: `run` for any work, `export` for an Export button; `busy` counts what runs."""

    def __init__(self, inline: bool | None = None):
        self.inline = not served() if inline is None else inline
        document = pn.state.curdoc  # the session's document: answers go to its loop
        self._loop = SessionLoop(document) if document is not None and document.session_context else None
        self._count, self.busy = threading.Lock(), 0

    def run(self, work: Callable[[], Result], answer: Answer, *, executor: ForkSafeExecutor = BACKGROUND_EXECUTOR):
        """Run `work` (off the page unless inline), then `answer(result, error)` on the page, in every case."""
        with self._count:
            self.busy += 1
        if self.inline:
            self._answer(answer, _attempt(work))
            return
        future = executor.submit(_attempt, work)
        future.add_done_callback(lambda done: self.on_page(partial(self._answer, answer, done.result())))

    def _answer(self, answer: Answer, outcome: tuple[object, BaseException | None]) -> None:
        try:
            answer(*outcome)
        except Exception:  # the answer's own failure: logged, the work is still counted done
            log.exception("the answer to background work failed")
        finally:
            with self._count:
                self.busy -= 1

    def on_page(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the session's loop once its page loaded, from any thread (at once outside a session)."""
        if self._loop is None:
            callback()
            return
        self._loop.call(partial(self._once_loaded, callback, time.monotonic() + LOADED_WAIT_S))

    def _once_loaded(self, callback: Callable[[], None], deadline: float) -> None:
        """On the session's loop: `callback` once the page has loaded (or, for a page that never loads, at
        `deadline`: its changes have nowhere to go); until then it looks again every LOADED_POLL_S."""
        if pn.state.loaded or time.monotonic() >= deadline:
            callback()
        else:
            self._loop.call(partial(self._once_loaded, callback, deadline), LOADED_POLL_S)

    def relay(self, callback: Callable[..., None]) -> Callable[..., None]:
        """`callback` made callable from any thread (a progress report): each call runs it on the session's loop."""
        return lambda *args: self.on_page(partial(callback, *args))

    def export(
        self,
        button: pn.widgets.Button,
        note: pn.pane.HTML,
        *,
        what: str,
        busy: str,
        export_dir: Path,
        work: Callable[[], Result],
        finish: Callable[[Result], None],
        settled: Callable[[], None] = lambda: None,
    ) -> None:
        """Show `busy` in `note` with `button` loading, run `work` on the export executor, then on the page
        `settled()` and `finish(result)` or the failure note (`what` names the export); the button is released."""
        button.loading = True
        note.object = busy

        def answer(result: Result | None, error: BaseException | None) -> None:
            try:
                settled()
                if error is None:
                    finish(result)
                else:
                    note.object = failure_note(what, export_dir, error)
            except Exception as failure:  # showing the files failed: said, never "Exporting ..." for good
                log.exception("finishing %s failed", what)
                note.object = esc(error_line(f"Showing the files of {what.lower()}", failure))
            finally:
                button.loading = False

        self.run(work, answer, executor=EXPORT_EXECUTOR)
