"""Parts of the page made when first used (a view's area, an export's downloads); the listed modes.

Computes nothing. A Panel widget or pane costs 3 to 5 ms of the server's one interpreter per session (measured
on a 2-core machine), so a part that most sessions never show is made when one first does.
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import panel as pn
import param

from explorer.export.files import ExportPaths
from explorer.ui.batch import one_message
from explorer.ui.mode import Context, one_at_a_time
from explorer.ui.shared import echo
from explorer.views.shared.markup import esc, written_note

log = logging.getLogger(__name__)

DOWNLOAD_WIDTH = 200  # the download buttons' labels are short; the export note names the files
PNG_ARCHIVE_SUFFIX = "-png.zip"  # an export's several PNGs (one per view, or a view's parts) offered as one archive
CLOSE_LABEL, CLOSE_WIDTH = "Back to the single packet", 210
LIST_NOTE_WIDTH = 110  # a sidebar list's note ("Pairs (2)") beside its one line of buttons
ONE_LINE_STYLE = {"overflow-x": "auto", "flex-wrap": "nowrap", "min-width": "0"}  # one line, scrolled sideways


class Downloads:
    """Download buttons for the files an export wrote, made when they are offered (none before the first export)."""

    def __init__(self, css_class: str):
        self.panel = pn.Row(sizing_mode="stretch_width", css_classes=[css_class])

    def offer(self, files: Iterable[tuple[Path, str]]) -> None:
        """One button per (path, label), replacing any offered before."""
        self.panel.objects = [_download(label, file=str(path), filename=path.name) for path, label in files]

    def offer_export(self, paths: ExportPaths, json_label: str) -> None:
        """Every file an export wrote (the JSON labelled `json_label`), several PNGs as one .zip archive."""
        files = [(paths.html, "Download HTML"), (paths.report, json_label)]
        if paths.findings is not None:
            files.append((paths.findings, "Download findings.md"))
        if len(paths.pngs) == 1:
            files.append((paths.pngs[0], "Download PNG"))
        self.offer(files)
        if len(paths.pngs) > 1:
            archive = f"{paths.html.stem}{PNG_ARCHIVE_SUFFIX}"
            label = f"Download the {len(paths.pngs)} PNGs (.zip)"
            self.panel.append(_download(label, callback=lambda pngs=paths.pngs: png_archive(pngs), filename=archive))

    def clear(self) -> None:
        self.panel.objects = []

    @property
    def offered(self) -> list[pn.widgets.FileDownload]:
        return list(self.panel.objects)


def _download(label: str, **source) -> pn.widgets.FileDownload:
    return pn.widgets.FileDownload(label=label, color="light", width=DOWNLOAD_WIDTH, **source)


def png_archive(pngs: Iterable[Path]) -> io.BytesIO:
    """The PNGs as one .zip, stored (PNG is compressed already)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for png in pngs:
            archive.write(png, png.name)
    buffer.seek(0)
    return buffer


def export_written(css_class: str, paths: ExportPaths) -> str:
    """The note after an export naming every file it wrote, one per line, each with its test hook."""
    hooks = {paths.html: "export-html", paths.report: "export-json", paths.findings: "export-findings"}
    return written_note(css_class, ((hooks.get(path, "export-png"), path) for path in paths.files))


def note_and_buttons(note: pn.pane.HTML, buttons: list[pn.widgets.Button], css_class: str) -> list:
    """A sidebar list's note beside one line of its buttons, scrolled sideways (buttons one per line pushed the packet
    list out of a 1280 x 800 first screen), or its note alone when there are none."""
    if not buttons:
        note.param.update(sizing_mode="stretch_width", width=None)
        return [note]
    note.param.update(sizing_mode=None, width=LIST_NOTE_WIDTH)
    line = pn.Row(*buttons, sizing_mode="stretch_width", styles=ONE_LINE_STYLE, css_classes=[css_class])
    return [pn.Row(note, line, sizing_mode="stretch_width")]


def button(label: str, width: int, css_class: str, on_click: Callable[[], None], color="light") -> pn.widgets.Button:
    """A button `width` px wide whose click calls `on_click()`."""
    made = pn.widgets.Button(label=label, color=color, width=width, css_classes=[css_class])
    made.on_click(lambda _event: on_click())
    return made


def choice_buttons(choices: Iterable[tuple[str, str, str, list[str]]], on_choose: Callable[[str], None]) -> list:
    """One light button per (value, label, description, CSS classes); a click calls `on_choose(value)`."""
    buttons = []
    for value, label, description, css_classes in choices:
        button = pn.widgets.Button(label=label, color="light", css_classes=css_classes, description=description)
        button.on_click(lambda _event, chosen=value: on_choose(chosen))
        buttons.append(button)
    return buttons


def first_shown(count: int, limit: int, parameter: str) -> str:
    """The note's line saying that only the first `limit` of `count` are buttons (`parameter` opens any other)."""
    if count <= limit:
        return ""
    return f"<br>The first {limit} by name are shown; <code>?{parameter}</code> in the URL opens any other."


class ModeArea:
    """The area of a view shown instead of the single packet's: status line, Back and Export buttons, the export's
    note and downloads, then the view. Empty and hidden until it first opens."""

    def __init__(self, kind: str, export: tuple[str, int], on_close: Callable, on_export: Callable):
        """`export`: the Export button's label and width."""
        self.kind, self._export, self._on_close, self._on_export = kind, export, on_close, on_export
        self.panel = pn.Column(visible=False, sizing_mode="stretch_width", css_classes=[f"{kind}-area"])
        self._made = False

    def _make(self) -> None:
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        close = button(CLOSE_LABEL, CLOSE_WIDTH, f"{self.kind}-close", self._on_close)
        self.export_button = button(*self._export, f"{self.kind}-export", self._on_export, color="primary")
        self.export_note = pn.pane.HTML("", sizing_mode="stretch_width")
        self.downloads = Downloads(f"{self.kind}-downloads")
        self.view = pn.Column(sizing_mode="stretch_width", css_classes=[f"{self.kind}-view-holder"])
        self.panel.objects = [
            self.status,
            pn.Row(close, self.export_button),
            self.export_note,
            self.downloads.panel,
            self.view,
        ]
        self._made = True

    def show(self, status_html: str, build: Callable[[], pn.viewable.Viewable], what: str) -> None:
        """Show the status line and the view `build` makes (`what` names it in a note when building raises)."""
        if not self._made:
            self._make()
        self.status.object = status_html
        self.export_note.object = ""
        self.downloads.clear()
        try:
            view = build()
        except Exception as error:  # a programming error in the view must not blank the page
            log.exception("the %s could not be built", what)
            view = pn.pane.HTML(view_error(what, error))
        self.view.objects = [view]
        self.panel.visible = True

    def hide(self) -> None:
        """Drop the view (its models leave the page) and hide the area."""
        if self._made:
            self.view.objects = []
        self.panel.visible = False


def view_error(what: str, error: BaseException) -> str:
    """The note in place of a view whose building raised (a programming error must not blank the page)."""
    return (
        f'<div class="view-error">The {esc(what)} could not be built: {esc(type(error).__name__)}: {esc(error)}</div>'
    )


class ListedMode(param.Parameterized):
    """A mode listed in the sidebar (a note beside one line of buttons) with an area of its own and an Export.

    A subclass names the parameter holding what is open (`OPENED`, '' when nothing is) and its URL parameter
    (`QUERY`, with `WHAT` naming it in notes), and keeps the result on screen in `shown_result`.
    """

    OPENED: str
    QUERY: str
    WHAT: str

    def __init__(self, context: Context, kind: str, classes: tuple[str, str, str], export: tuple[str, int], **params):
        """`classes`: the CSS classes of the list's note, of the list and of a click's problem."""
        super().__init__(**params)
        self.context, self.index, self.export_dir, self.lock = context, context.index, context.export_dir, context.lock
        self._note = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=[classes[0]])
        self._problem_class = classes[2]
        self.buttons: list[pn.widgets.Button] = []
        self.sidebar = pn.Column(self._note, sizing_mode="stretch_width", css_classes=[classes[1]])
        self.area = ModeArea(kind, export, self.close, self.export)
        self.panel = self.area.panel
        self.shown_result = None

    def _opened(self, value: str, result) -> None:
        """Show `result` of the opened `value` instead of the single packet, as one message."""
        with one_message():
            self.shown_result = result
            setattr(self, self.OPENED, value)
            self._show(result)
            self.context.shown(self)

    def close(self, notify: bool = True) -> None:
        """Back to the single packet: the view is dropped and its parameter leaves the URL."""
        if not getattr(self, self.OPENED):
            return
        with one_message():
            self.shown_result = None
            setattr(self, self.OPENED, "")
            self.area.hide()
            if notify:
                self.context.shown(None)

    def query(self) -> dict[str, str]:
        """The URL query parameters of what is open."""
        value = getattr(self, self.OPENED)
        return {self.QUERY: value} if value else {}

    def from_query(self, query: Mapping[str, str]) -> list[str]:
        """Open what the URL query's parameter names of the open packet's; returns notes."""
        value = query.get(self.QUERY)
        if value is None:
            return []
        if not self.packet:
            return [f"{self.WHAT} &quot;{echo(value)}&quot; needs an open packet; it was ignored."]
        return self.open(value)

    def _list(self, note_html: str, choices: Iterable[tuple[str, str, str, list[str]]], list_class: str) -> None:
        """The note and one button per (value, label, description, CSS classes); a click opens the value."""
        self.buttons = choice_buttons(choices, self._clicked)
        self._note.object = note_html
        self.sidebar.objects = note_and_buttons(self._note, self.buttons, list_class)

    @one_at_a_time
    def _clicked(self, value: str) -> None:
        self._say(self.open(value))

    def _say(self, notes: list[str]) -> None:
        """Notes about a click, under the list where it happened."""
        if notes:
            self._note.object += f'<div class="{self._problem_class}">{" ".join(notes)}</div>'

    def _export_through_runner(self, what: str, busy: str, work: Callable, finish: Callable, **settled) -> None:
        """Run the Export of this mode through the session's runner (off the event loop)."""
        self.context.runner.export(
            self.area.export_button,
            self.area.export_note,
            what=what,
            busy=busy,
            export_dir=self.export_dir,
            work=work,
            finish=finish,
            **settled,
        )
