"""The app's one export runner for the packet, pair and replay Export buttons; computes nothing.

The work runs on the app's own threads, the answer comes back on the page.

An export renders HTML and PNGs for seconds, so it never runs on the session's event
loop. In a served session the button's handler hands Panel a coroutine
(`pn.state.execute`, public API): the coroutine runs on the session's loop without
the document lock, awaits the work on EXPORT_EXECUTOR (`run_in_executor`), and then
sets the note, the downloads and the button (Panel sends widget changes made there to
the browser itself). Outside a served session (tests, a notebook) the work runs at
once. Whatever the work raises, the note says that nothing was written and why, and
the button comes back: no click is left without an answer (docs/triage-and-app.md,
"The app's Export").
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import panel as pn

from explorer.export.pages import RenderError
from explorer.foundations.bounded import clip
from explorer.foundations.executors import ForkSafeExecutor
from explorer.ui.shared import shown_name
from explorer.views.shared.common import served

log = logging.getLogger(__name__)

Result = TypeVar("Result")
# Exports rendering at once, whichever sessions asked (each starts a chromium and renders a page: more at once only
# queue for the same two cores); the others wait their turn on the executor, their buttons showing that they run.
EXPORT_WORKERS = 2
EXPORT_EXECUTOR = ForkSafeExecutor(max_workers=EXPORT_WORKERS, thread_name_prefix="explorer-export")


def failure_note(what: str, export_dir: Path, error: BaseException) -> str:
    """The note of an export that wrote nothing: where it could not write and why (an OSError), what is missing to
    render PNGs (a RenderError, said whole: it names what to install), or the unexpected error."""
    if isinstance(error, OSError):
        reason = error.strerror or str(error)
        return (
            f"{html.escape(what)} wrote nothing: it could not write to <code>{shown_name(clip(str(export_dir)))}"
            f"</code>: {shown_name(clip(reason))}."
        )
    if isinstance(error, RenderError):
        return f"{html.escape(what)} wrote nothing: {shown_name(str(error))}."
    return f"{html.escape(what)} wrote nothing: {html.escape(type(error).__name__)}: {shown_name(clip(str(error)))}"


def _attempt(work: Callable[[], Result]) -> tuple[Result | None, BaseException | None]:
    """(result, None), or (None, the error): on a worker thread, nothing may escape unanswered."""
    try:
        return work(), None
    except Exception as error:
        if not isinstance(error, (OSError, RenderError)):
            log.exception("an export failed")
        return None, error


def run_export(
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
    """Show `busy` in `note` with `button` loading, run `work` (the export, off the event loop when served), then
    on the page `settled()` (whatever the outcome) and `finish(result)` or the failure note; the button is released
    in every case. `what` names the export in a failure note ("Export", "The pair export")."""
    button.loading = True
    note.object = busy

    def settle(outcome: tuple[Result | None, BaseException | None]) -> None:
        result, error = outcome
        try:
            settled()
            if error is None:
                finish(result)
            else:
                note.object = failure_note(what, export_dir, error)
        finally:
            button.loading = False

    if not served():
        settle(_attempt(work))
        return

    async def in_background() -> None:
        settle(await asyncio.get_running_loop().run_in_executor(EXPORT_EXECUTOR, _attempt, work))

    pn.state.execute(in_background)
