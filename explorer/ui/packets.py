"""The sidebar's packet list: a paged, searchable, sortable table of a PacketIndex following its root.

Names are listed at once; statuses and numbers arrive from the index's background fill (started once the page is
drawn, so worker processes never compete with the first paint) and reach the table in batches through the session's
loop (explorer.ui.background.SessionLoop, handed over from the filling thread). Every RESCAN_MS the index rescans.
Rows keep the one list order (explorer.catalog.summary.list_order) unless a header sorts them; the server keeps every
row and sends the browser only the PAGE_ROWS rows of the page shown (explorer.ui.table).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import panel as pn
import param

from explorer.catalog.index import PacketIndex
from explorer.catalog.summary import STATUS_ORDER, PacketSummary, list_order
from explorer.foundations.bounded import escaped_bytes
from explorer.foundations.formatting import full_number, scientific_number
from explorer.ui.background import SessionLoop
from explorer.ui.table import PageTable
from explorer.views.shared.markup import esc

PAGE_ROWS = 20
FLUSH_INTERVAL_S = 0.3  # how often arrived summaries are pushed into the session's table
RESCAN_MS = 5_000  # how often an open list rescans its root (each unchanged packet costs a few stat calls)
# Roots up to this many packets are summarized before the first paint (a few ms each once cached), so the first
# packet by status and score opens with the page; larger roots fill in the background.
SYNCHRONOUS_FILL_PACKETS = 64
PENDING_HTML = '<span class="packet-pending" style="color:#666666">reading ...</span>'
LIST_ORDER = STATUS_ORDER  # the one order of every packet list (catalog.summary.list_order), not an order of its own
NUMBER_COLUMNS = ("score", "ratio", "worst ULP")
COLUMNS = ("packet", "status", *NUMBER_COLUMNS)
TITLES = {"ratio": "/ noise floor"}
HEADER_TOOLTIPS = {
    "packet": "The packet's directory name under the root",
    "status": "analyzed, inconclusive, refused or error; sorting by it gives the list order (docs/triage-and-app.md)",
    "score": "Error / allowance of the worst head: |output - FP32 reference| over half the output dtype's spacing "
    "plus the head's FP64 noise floor (docs/report.md)",
    "ratio": "The worst head's primary linf divided by its FP64 noise floor (the reference's own error against FP64)",
    "worst ULP": "Largest ULP distance of the output to the reference rounded to the output dtype",
}
HEADERS = [  # the table's column headers, as its `view` names them
    {"field": c, "title": TITLES.get(c, c), "tooltip": HEADER_TOOLTIPS[c], "number": c in NUMBER_COLUMNS}
    for c in COLUMNS
]


def number_cell(value: float) -> str:
    """A number as its cell shows it; empty when unknown."""
    return "" if math.isnan(value) else scientific_number(value)


@dataclass(frozen=True)
class Row:
    """One listed packet: its name, the name shown, its status cell (HTML) and its numbers (NaN: unknown)."""

    name: str
    shown: str
    status: str
    numbers: tuple[float, ...]
    full: tuple[str, ...]  # each number in full, for its hover ("" when unknown)


def sorted_rows(rows: list[Row], column: str | None, descending: bool) -> list[Row]:
    """`rows` sorted by `column` (None or "status": the list order); unknown numbers last both ways."""
    if column is None or column == "status":
        return list(reversed(rows)) if descending else list(rows)
    if column == "packet":
        return sorted(rows, key=lambda row: row.shown.lower(), reverse=descending)
    at = NUMBER_COLUMNS.index(column)
    known = [row for row in rows if not math.isnan(row.numbers[at])]
    unknown = [row for row in rows if math.isnan(row.numbers[at])]
    return sorted(known, key=lambda row: row.numbers[at], reverse=descending) + unknown


def matching_rows(rows: list[Row], query: str) -> list[Row]:
    """The rows whose shown name holds `query` (stripped, ignoring case); every row for an empty query."""
    query = query.strip().lower()
    return [row for row in rows if query in row.shown.lower()] if query else rows


class PacketList(param.Parameterized):
    """One session's packet table over a PacketIndex; `filled` turns True once every summary is in."""

    filled = param.Boolean(default=False, doc="True once every listed packet has its summary.")

    def __init__(self, index: PacketIndex, badge: Callable[[str], str], on_choose: Callable[[str], None], **params):
        super().__init__(**params)
        self.index, self._badge, self._on_choose = index, badge, on_choose
        self._lock = threading.Lock()
        self._closed = self._flush_pending = self._descending = False
        self._loop: SessionLoop | None = None  # the session's loop, which the filling thread hands flushes to
        self._highlighted = None
        self._signed_shown = self._pending = 0  # statuses from stat signatures; packets without a status yet
        self._query, self._page = "", 1
        self._sort: str | None = None  # None: the list order
        self._page_rows: list[Row] = []
        self._all = self._rows()
        self.table = PageTable(self.search, self._toggle_sort, self.go_to_page, self._chosen)
        self._count = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["packet-count"])
        self.panel = pn.Column(self._count, self.table, sizing_mode="stretch_width")
        self._show()

    def _rows(self) -> list[Row]:
        known = [(entry.name, self.index.summary(entry.name)) for entry in self.index.entries]
        known.sort(key=lambda item: list_order(*item))
        self._pending = sum(summary is None for _, summary in known)
        return [self._row(name, summary) for name, summary in known]

    def _row(self, name: str, summary: PacketSummary | None) -> Row:
        known = summary is not None
        values = (summary.score, summary.noise_floor_ratio, summary.worst_ulp) if known else (None, None, None)
        return Row(
            name,
            escaped_bytes(name),
            self._badge(summary.status) if known else PENDING_HTML,
            tuple(float("nan") if value is None else float(value) for value in values),
            tuple("" if value is None else full_number(value) for value in values),
        )

    def start(self) -> None:
        """Fill the index (in the background for a large root in a session); in a session, rescan every RESCAN_MS."""
        session = pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
        if session and len(self.index.entries) > SYNCHRONOUS_FILL_PACKETS:
            self._loop = SessionLoop(pn.state.curdoc)
            pn.state.onload(lambda: self.index.fill_in_background(self._arrive, lambda: self._closed))
        else:
            self.index.fill(self._arrive)
            self.flush()
            self._loop = SessionLoop(pn.state.curdoc) if session else None
        if session:
            pn.state.on_session_destroyed(self._close)
            pn.state.add_periodic_callback(self._rescan, period=RESCAN_MS)

    def _rescan(self) -> None:
        if not self._closed:
            self.index.rescan_in_background(self._arrive, self._rescanned, lambda: self._closed)

    def _rescanned(self, names_changed: bool) -> None:
        if names_changed or self.index.signed_count() != self._signed_shown:
            self._arrive()

    def _arrive(self, *_summary) -> None:
        """On the filling thread: ask the session's loop for one flush."""
        with self._lock:
            if self._loop is None or self._flush_pending or self._closed:
                return
            self._flush_pending = True
        self._loop.call(self._flush_soon)

    def _flush_soon(self) -> None:  # on the session's loop: batch what arrives in the next interval
        loop = self._loop
        if loop is not None:
            loop.call(self.flush, FLUSH_INTERVAL_S)

    def flush(self) -> None:
        """Redraw the table from the index (rows appear, change and disappear in place)."""
        with self._lock:
            self._flush_pending = False
        self._all = self._rows()
        self._show()
        if self.index.complete and not self.filled:
            self.filled = True

    def _close(self, _session_context) -> None:
        with self._lock:
            self._closed, self._loop = True, None

    def search(self, text: str) -> None:
        """Show the rows whose shown name holds `text` (ignoring case), from the first page."""
        self._query, self._page = text, 1
        self._show()

    def sort_by(self, column: str | None, descending: bool = False) -> None:
        """Sort by one of COLUMNS (None: the list order), from the first page."""
        if column is not None and column not in COLUMNS:
            raise ValueError(f"no column {column!r}: one of {', '.join(COLUMNS)}")
        self._sort, self._descending, self._page = column, descending, 1
        self._show()

    def _toggle_sort(self, column: str) -> None:
        if column in COLUMNS:
            self.sort_by(column, descending=column == self._sort and not self._descending)

    def go_to_page(self, page: int) -> None:
        """Show page `page` (1-based; kept within the pages there are)."""
        self._page = page
        self._show()

    def shown_rows(self) -> list[Row]:
        """The rows of the page shown, top to bottom."""
        return list(self._page_rows)

    page_count = property(
        lambda self: max(1, math.ceil(len(matching_rows(self._all, self._query)) / PAGE_ROWS)),
        doc="How many pages the rows matching the search fill (at least one).",
    )
    count_text = property(lambda self: self._count.object, doc="The count line above the table, as HTML.")

    def _show(self) -> None:
        """Send the page shown (search, sort, page and the open packet applied) and the count line."""
        matched = sorted_rows(matching_rows(self._all, self._query), self._sort, self._descending)
        pages = max(1, math.ceil(len(matched) / PAGE_ROWS))
        self._page = min(max(1, self._page), pages)
        self._page_rows = matched[(self._page - 1) * PAGE_ROWS : self._page * PAGE_ROWS]
        self.table.view = {
            "query": self._query,
            "page": self._page,
            "pages": pages,
            "sort": self._sort or "",
            "descending": self._descending,
            "columns": HEADERS,
            "rows": [self._row_view(row) for row in self._page_rows],
        }
        self._say_count(len(matched))

    def _row_view(self, row: Row) -> dict:
        numbers = [[number_cell(value), full] for value, full in zip(row.numbers, row.full, strict=True)]
        return {"name": row.shown, "status": row.status, "open": row.name == self._highlighted, "numbers": numbers}

    def _say_count(self, matched: int) -> None:
        total, query, pending = len(self._all), self._query.strip(), self._pending
        text = f"<b>{total} packets</b> under <code>{esc(str(self.index.root))}</code><br>"
        text += f"showing {len(self._page_rows)} of {matched if query else total}"
        if query:
            text += f" matching &quot;{esc(query)}&quot; ({total} in all)"
        if pending:
            text += f"<br>reading statuses: {total - pending} of {total} known"
        signed = self._signed_shown = self.index.signed_count()
        if signed:
            text += (
                f'<br><span class="packet-signed" title="A write through a shared memory map can leave a '
                f'file&#39;s times unchanged; opening a packet always reads it again.">{signed} of {total} '
                f"statuses from unchanged stat signatures (files not read again)</span>"
            )
        if not total:
            text += "<br>No directory holding packet.json was found one or two levels below the root."
        text += f"<br>The root is read again every {RESCAN_MS // 1000} s."
        self._count.object = (
            f'<div class="packet-count-text" data-pending="{pending}" data-signed="{signed}" '
            f'style="font-size:0.9em">{text}</div>'
        )

    def _chosen(self, shown: str, at: int) -> None:
        """A row clicked in the browser: the `at`-th row of the page it showed, showing `shown`."""
        if 0 <= at < len(self._page_rows) and self._page_rows[at].shown == shown:
            self._on_choose(self._page_rows[at].name)  # the page is still the one clicked
            return
        named = [row.name for row in self._all if row.shown == shown]
        if named:
            self._on_choose(named[0])

    def highlight(self, name: str) -> None:
        """Mark `name`'s row as the open packet (the shell calls this whenever it shows a packet)."""
        self._highlighted = name
        self._show()

    def first_in_order(self) -> str | None:
        """The list's first row (list_order: the analyzed packet with the largest score), None for an empty root."""
        names = self.index.ordered_names()
        return names[0] if names else None
