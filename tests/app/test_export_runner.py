"""The app's one background runner (explorer.ui.background) and exports at once under distinct names."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import panel as pn
from panel.io.state import set_curdoc

import explorer
from explorer.export.browser import RenderError
from explorer.export.pages import export_packet
from explorer.ui import background, catalog
from explorer.ui.background import Runner, SessionLoop

ROOT = catalog.default_root()
SESSIONS = 3
run_export = Runner(inline=True).export  # an export as the app runs it outside a served session
INSTALL_HINT = "pip install -e '.[export]', or pip install playwright; no browser is downloaded"


def test_exports_at_the_same_moment_are_all_written_under_distinct_names(tmp_path):
    analysis = explorer.analyze(ROOT / "injected-error-head5")
    start = threading.Barrier(SESSIONS)

    def export(_):
        start.wait()
        return export_packet(analysis, tmp_path)

    with ThreadPoolExecutor(max_workers=SESSIONS) as sessions:
        written = list(sessions.map(export, range(SESSIONS)))
    names = sorted(paths.html.name for paths in written)
    assert names == ["injected-error-head5-2.html", "injected-error-head5-3.html", "injected-error-head5.html"]
    pages = [paths.html.read_text() for paths in written]
    assert all("export-view-overview" in page for page in pages)  # each page whole: no rendering spoiled another
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        name for paths in written for name in (paths.html.name, paths.report.name, paths.findings.name)
    )


def _controls():
    return pn.widgets.Button(label="Export"), pn.pane.HTML("")


def test_a_missing_playwright_is_said_whole_with_its_install_hint(tmp_path):
    button, note = _controls()
    message = f"Playwright is not installed: PNGs need it to drive /usr/bin/chromium ({INSTALL_HINT})"

    def work():
        raise RenderError(message)

    run_export(button, note, what="Export", busy="...", export_dir=tmp_path, work=work, finish=lambda _: None)
    assert "could not write" not in note.object and "wrote nothing" in note.object
    assert "pip install -e &#x27;.[export]&#x27;, or pip install playwright; no browser is downloaded)" in note.object
    assert button.loading is False


def test_the_runner_answers_success_and_every_failure_and_always_releases_the_button(tmp_path):
    button, note = _controls()
    settled = []
    run_export(
        button,
        note,
        what="Export",
        busy="...",
        export_dir=tmp_path,
        work=lambda: 42,
        finish=lambda result: setattr(note, "object", f"done {result}"),
        settled=lambda: settled.append(1),
    )
    assert note.object == "done 42" and button.loading is False and settled == [1]

    def full():
        raise OSError(28, "No space left on device")

    run_export(
        button,
        note,
        what="The pair export",
        busy="...",
        export_dir=tmp_path,
        work=full,
        finish=lambda _: None,
        settled=lambda: settled.append(2),
    )
    assert note.object.startswith("The pair export wrote nothing: it could not write to")
    assert "No space left on device" in note.object and str(tmp_path) in note.object and settled == [1, 2]

    def broken():
        raise MemoryError("simulated")

    run_export(button, note, what="Export", busy="...", export_dir=tmp_path, work=broken, finish=lambda _: None)
    assert note.object == "Export wrote nothing: MemoryError: simulated" and button.loading is False


class _LoadingDocument:
    """A session's document as the runner sees it (its page loaded or not)."""

    session_context = object()


class _Loop:
    """A session's loop as the runner sees it: the callbacks handed to it kept to be run by the test."""

    def __init__(self, document: _LoadingDocument):
        self.document, self.ticks, self.timeouts = document, [], []

    def call(self, callback, seconds: float = 0.0):
        (self.timeouts if seconds else self.ticks).append(callback)


def _run_loop_once(loop: _Loop) -> None:
    waiting, loop.ticks, loop.timeouts = loop.ticks + loop.timeouts, [], []
    for callback in waiting:
        with set_curdoc(loop.document):
            callback()


def test_an_answer_waits_for_the_page_to_load_then_comes_once(monkeypatch):
    # Panel drops layout changes made before the page reports itself loaded: a computed map was never drawn.
    document, answered = _LoadingDocument(), []
    runner = Runner(inline=False)
    runner._loop = loop = _Loop(document)
    runner.on_page(lambda: answered.append("drawn"))
    for _ in range(3):
        _run_loop_once(loop)
    assert answered == [] and len(loop.timeouts) == 1  # the page has not loaded: it looks again later
    monkeypatch.setitem(pn.state._loaded, document, True)
    _run_loop_once(loop)
    assert answered == ["drawn"] and loop.ticks == loop.timeouts == []


def test_an_answer_for_a_page_that_never_loads_comes_at_the_deadline(monkeypatch):
    document, answered = _LoadingDocument(), []
    runner = Runner(inline=False)
    runner._loop = loop = _Loop(document)
    monkeypatch.setattr(background, "LOADED_WAIT_S", 0.0)
    runner.on_page(lambda: answered.append("drawn"))
    _run_loop_once(loop)
    assert answered == ["drawn"]


class _LockingContext:
    """A session context whose document lock is taken by `with_locked_document` (as Bokeh's is), counted."""

    def __init__(self):
        self.locked = 0

    async def with_locked_document(self, func):
        self.locked += 1
        await func(None)


def test_a_callback_handed_over_from_another_thread_runs_on_the_loop_with_the_document_locked_and_current():
    # Handed to the document's own callback list from a thread, a campaign's answer was lost under load.
    document = type("Document", (), {"session_context": _LockingContext()})()
    made, ran = threading.Event(), threading.Event()
    seen = {}

    def serve():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        seen["loop"] = SessionLoop(document)
        seen["loop thread"] = threading.get_ident()
        made.set()
        loop.run_until_complete(asyncio.to_thread(ran.wait, 30))
        loop.close()

    server = threading.Thread(target=serve)
    server.start()
    assert made.wait(30)
    seen["loop"].call(lambda: (seen.update(thread=threading.get_ident(), curdoc=pn.state.curdoc), ran.set()))
    server.join(30)
    assert ran.is_set() and seen["thread"] == seen["loop thread"]
    assert seen["curdoc"] is document and document.session_context.locked == 1
