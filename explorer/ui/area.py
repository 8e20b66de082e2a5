"""Parts of the page made only when first used (a view's area, the downloads an export offers).

Every widget on a page costs each session server time; computes nothing.

Measured on this 2-core machine: a Panel widget or pane costs 3 to 5 ms of the
server's one interpreter per session (made, turned into Bokeh models, sent),
a FileDownload more. Eight sessions opening at once queue behind one another
for it, so a part that most sessions never show is made when one first does.
"""

from __future__ import annotations

import html
import io
import logging
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import panel as pn

from explorer.export.files import ExportPaths
from explorer.views.shared.markup import written_note

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
        self.panel.objects = [
            pn.widgets.FileDownload(
                file=str(path), filename=path.name, label=label, color="light", width=DOWNLOAD_WIDTH
            )
            for path, label in files
        ]

    def offer_export(self, paths: ExportPaths, json_label: str) -> None:
        """Every file an export wrote: the page, the JSON (`json_label`), NAME.findings.md, and its PNG, or its
        several PNGs as one .zip archive."""
        files = [(paths.html, "Download HTML"), (paths.report, json_label)]
        if paths.findings is not None:
            files.append((paths.findings, "Download findings.md"))
        if len(paths.pngs) == 1:
            files.append((paths.pngs[0], "Download PNG"))
        self.offer(files)
        if len(paths.pngs) > 1:
            self.panel.append(
                pn.widgets.FileDownload(
                    callback=lambda pngs=paths.pngs: png_archive(pngs),
                    filename=f"{paths.html.stem}{PNG_ARCHIVE_SUFFIX}",
                    label=f"Download the {len(paths.pngs)} PNGs (.zip)",
                    color="light",
                    width=DOWNLOAD_WIDTH,
                )
            )

    def clear(self) -> None:
        self.panel.objects = []

    @property
    def offered(self) -> list[pn.widgets.FileDownload]:
        return list(self.panel.objects)


def png_archive(pngs: Iterable[Path]) -> io.BytesIO:
    """The PNGs as one .zip (stored, not compressed: PNG is compressed already), each under its file name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for png in pngs:
            archive.write(png, png.name)
    buffer.seek(0)
    return buffer


def export_written(css_class: str, paths: ExportPaths) -> str:
    """The note after an export naming every file it wrote (page, JSON, NAME.findings.md, each PNG), one per line,
    each with its test hook (`export-html`, `export-json`, `export-findings`, `export-png`)."""
    hooks = {paths.html: "export-html", paths.report: "export-json", paths.findings: "export-findings"}
    return written_note(css_class, ((hooks.get(path, "export-png"), path) for path in paths.files))


def note_and_buttons(note: pn.pane.HTML, buttons: list[pn.widgets.Button], css_class: str) -> list:
    """A sidebar list's parts: its note beside one line of its buttons, scrolled sideways when they are wider than
    the sidebar (three lists of buttons one per line pushed the packet list out of a 1280 x 800 window's first
    screen), or its note alone when there are none (an empty line would still cost every session)."""
    if not buttons:
        note.param.update(sizing_mode="stretch_width", width=None)
        return [note]
    note.param.update(sizing_mode=None, width=LIST_NOTE_WIDTH)
    line = pn.Row(*buttons, sizing_mode="stretch_width", styles=ONE_LINE_STYLE, css_classes=[css_class])
    return [pn.Row(note, line, sizing_mode="stretch_width")]


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


def add_problems(note: pn.pane.HTML, notes: list[str], css_class: str) -> None:
    """Notes about a click shown under the list where it happened."""
    if notes:
        note.object += f'<div class="{css_class}">{" ".join(notes)}</div>'


class ModeArea:
    """The area of a view shown instead of the single packet's (a pair, a replay run): its status line, Back and
    Export buttons, the export's note and downloads, then the view. Empty and hidden until it first opens."""

    def __init__(
        self,
        kind: str,
        *,
        export_label: str,
        export_width: int,
        on_close: Callable[[], None],
        on_export: Callable[[], None],
    ):
        """`kind` names its CSS classes (`{kind}-area`, `{kind}-close`, `{kind}-export`, `{kind}-view-holder`)."""
        self.kind = kind
        self._export_label, self._export_width = export_label, export_width
        self._on_close, self._on_export = on_close, on_export
        self.panel = pn.Column(visible=False, sizing_mode="stretch_width", css_classes=[f"{kind}-area"])
        self._made = False

    def _make(self) -> None:
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        close = pn.widgets.Button(
            label=CLOSE_LABEL, color="light", width=CLOSE_WIDTH, css_classes=[f"{self.kind}-close"]
        )
        close.on_click(lambda _event: self._on_close())
        self.export_button = pn.widgets.Button(
            label=self._export_label, color="primary", width=self._export_width, css_classes=[f"{self.kind}-export"]
        )
        self.export_button.on_click(lambda _event: self._on_export())
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
            view = pn.pane.HTML(
                f'<div class="view-error">The {html.escape(what)} could not be built: '
                f"{html.escape(type(error).__name__)}: {html.escape(str(error))}</div>"
            )
        self.view.objects = [view]
        self.panel.visible = True

    def hide(self) -> None:
        """Drop the view (its models leave the page) and hide the area."""
        if self._made:
            self.view.objects = []
        self.panel.visible = False
