"""The sidebar's packet list: a paged, searchable, sortable table of a PacketIndex.

That follows its root while open; computes nothing.

The names are listed at once (discovery only); statuses, scores, noise-floor ratios
and worst ULPs arrive from the index's background fill (started once the page is
drawn, so worker processes never compete with the first paint), which asks the
session's event loop (`add_next_tick_callback`, the one thread-safe Document method)
to redraw the table in batches, so the page never waits for them. Every RESCAN_MS the
index rescans its root on the filling thread: packets that appeared are listed and
checked, packets gone are dropped, and only packets whose stat signature changed are
read again (one still being written has no signature yet, so it is listed as what it
is now and read again at the next rescan); the table changes in place, without a page
reload. Rows are in the one list order of `explorer.catalog.summary.list_order`
(analyzed, inconclusive, refused, error, each by the largest score; the order of
`explorer triage`), unless the user sorts by a column header (every column, both
directions). A click on a row calls `on_choose` with its name, and `highlight(name)`
marks the open packet's row. Numbers show 4 significant digits; hovering a cell shows
its full value. A name with a byte that is not UTF-8 is shown with that byte escaped.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import ScientificFormatter

from explorer.catalog.index import PacketIndex
from explorer.catalog.summary import STATUS_ORDER, PacketSummary, list_order

PAGE_ROWS = 20
FLUSH_INTERVAL_MS = 300  # how often arrived summaries are pushed into the session's table
RESCAN_MS = 5_000  # how often an open list rescans its root (each unchanged packet costs a few stat calls)
# Roots up to this many packets are summarized before the first paint (a few ms each once cached), so the first
# packet by status and score opens with the page; larger roots fill in the background.
SYNCHRONOUS_FILL_PACKETS = 64
SIGNIFICANT_DIGITS = 4
PENDING_HTML = '<span class="packet-pending" style="color:#666666">reading ...</span>'
LIST_ORDER = STATUS_ORDER  # the one order of every packet list (catalog.summary.list_order), not an order of its own
PENDING_ORDER = len(LIST_ORDER)
NUMBER_COLUMNS = ("score", "ratio", "worst ULP")
COLUMNS = ("packet", "status", *NUMBER_COLUMNS)
# A status cell starts with its place in LIST_ORDER and then its row's place in the default order (by score within a
# status), so sorting the status column gives the default order back, scores still ordered within each status.
ORDER_HTML = '<span class="packet-order" data-order="{order}:{rank:0{digits}d}">{badge}</span>'
# The default order is the rows' own (built sorted), not initial sorters: Tabulator keeps initial sorters beside
# the one a header click sets, so a click on a column would only reorder within each status.
TITLES = {"ratio": "/ noise floor"}
WIDTHS = {"status": 84, "score": 64, "ratio": 64, "worst ULP": 64}  # pixels; the packet name takes the rest, wrapped
# The sort arrow sits beside a header title (in its margin), never inside the title's box; the 1-pixel filler
# column Tabulator adds after the last one shows no sort arrow (it would stick out of the sidebar).
TABLE_STYLE = (
    ":host .tabulator { font-size: 0.85em; } "
    ":host .tabulator .tabulator-header .tabulator-col.tabulator-sortable .tabulator-col-title "
    "{ padding-right: 0 !important; margin-right: 16px; width: auto !important; } "
    ":host .tabulator .tabulator-header .tabulator-col:not([tabulator-field]) .tabulator-col-sorter "
    "{ display: none; }"
)
# Hover: a cell's own value (a number's full precision; the status badge says its word); header titles wrap;
# the columns fit the sidebar (no resize handles).
TABLE_CONFIGURATION = {
    "columnDefaults": {"tooltip": True, "headerWordWrap": True, "resizable": False},
    "columns": [{"field": "status", "tooltip": False}],
}
HEADER_TOOLTIPS = {
    "score": "Error / allowance of the worst head: |output - FP32 reference| over half the output dtype's spacing "
    "plus the head's FP64 noise floor (docs/report.md)",
    "ratio": "The worst head's primary linf divided by its FP64 noise floor (the reference's own error against FP64)",
    "worst ULP": "Largest ULP distance of the output to the reference rounded to the output dtype",
}


def shown_name(name: str) -> str:
    """`name` as the list shows it: a byte that is not UTF-8 (kept by Python as a surrogate) becomes \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class PacketList(param.Parameterized):
    """One session's packet table over a PacketIndex; `filled` turns True once every summary is in."""

    filled = param.Boolean(default=False, doc="True once every listed packet has its summary.")

    def __init__(self, index: PacketIndex, badge: Callable[[str], str], on_choose: Callable[[str], None], **params):
        super().__init__(**params)
        self.index = index
        self._badge = badge
        self._on_choose = on_choose
        self._lock = threading.Lock()
        self._closed = False
        self._flush_pending = False
        self._document = None
        self._highlighted: str | None = None
        self._names: list[str] = []  # the listed names, row by row (the table shows them escaped)
        self._signed_shown = 0  # statuses from stat signatures, as the count line says
        self._pending = 0  # listed packets without a status yet
        self._frame = self._rows()
        number = ScientificFormatter(
            precision=SIGNIFICANT_DIGITS - 1, power_limit_high=0, power_limit_low=0, nan_format="", null_format=""
        )
        self._table = pn.widgets.Tabulator(
            self._frame.copy(),
            pagination="remote",
            page_size=PAGE_ROWS,
            disabled=True,
            selectable=1,
            layout="fit_columns",
            show_index=False,
            titles=TITLES,
            header_tooltips=HEADER_TOOLTIPS,
            widths=WIDTHS,
            sizing_mode="stretch_width",
            stylesheets=[TABLE_STYLE],
            formatters={
                "packet": {"type": "textarea"},
                "status": {"type": "html"},
                **dict.fromkeys(NUMBER_COLUMNS, number),
            },
            configuration=TABLE_CONFIGURATION,
            css_classes=["packet-table"],
        )
        self._search = pn.widgets.TextInput(
            placeholder="Search packet names", sizing_mode="stretch_width", css_classes=["packet-search"]
        )
        self._table.add_filter(pn.bind(self._matching, query=self._search.param.value_input))
        self._count = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["packet-count"])
        self.panel = pn.Column(self._count, self._search, self._table, sizing_mode="stretch_width")
        self._table.on_click(self._on_click)
        self._table.param.watch(self._say_count, "page")
        self._search.param.watch(self._say_count, "value_input")
        self._say_count()

    def _rows(self) -> pd.DataFrame:
        """The table as the index knows it now, in the default order (and self._names, row by row)."""
        known = [(entry.name, self.index.summary(entry.name)) for entry in self.index.entries]
        known.sort(key=lambda item: list_order(*item))
        self._names = [name for name, _ in known]
        summaries = [summary for _, summary in known]
        self._pending = sum(summary is None for summary in summaries)
        return pd.DataFrame(
            {
                "packet": pd.Series([shown_name(name) for name in self._names], dtype=object),
                "status": pd.Series(
                    [
                        self._status_html(summary, rank, len(str(len(summaries))))
                        for rank, summary in enumerate(summaries)
                    ],
                    dtype=object,
                ),
                "score": pd.Series([_number(s and s.score) for s in summaries], dtype="float64"),
                "ratio": pd.Series([_number(s and s.noise_floor_ratio) for s in summaries], dtype="float64"),
                "worst ULP": pd.Series([_number(s and s.worst_ulp) for s in summaries], dtype="float64"),
            },
            columns=list(COLUMNS),
        )

    def _status_html(self, summary: PacketSummary | None, rank: int, digits: int) -> str:
        """The status cell of the row at `rank` in the default order (`digits`: the rank's width, for sorting)."""
        if summary is None:
            return ORDER_HTML.format(order=PENDING_ORDER, rank=rank, digits=digits, badge=PENDING_HTML)
        return ORDER_HTML.format(
            order=LIST_ORDER.index(summary.status), rank=rank, digits=digits, badge=self._badge(summary.status)
        )

    # ------------------------------------------------------------ filling and rescanning

    def start(self) -> None:
        """Fill the index (in the background when serving a session on a large root, else right here); in a
        session, rescan its root every RESCAN_MS while the session lasts."""
        session = pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
        if session and len(self.index.entries) > SYNCHRONOUS_FILL_PACKETS:
            self._document = pn.state.curdoc
            # Once the page is drawn: worker processes started earlier would take the cores from the first paint.
            pn.state.onload(lambda: self.index.fill_in_background(self._arrive, lambda: self._closed))
        else:
            self.index.fill(self._arrive)
            self._flush()
            self._document = pn.state.curdoc if session else None
        if session:
            pn.state.on_session_destroyed(self._close)
            pn.state.add_periodic_callback(self._rescan, period=RESCAN_MS)

    def _rescan(self) -> None:
        """On the session's loop: start a rescan on the filling thread unless this index's last one still runs."""
        if not self._closed:
            self.index.rescan_in_background(self._arrive, self._rescanned, lambda: self._closed)

    def _rescanned(self, names_changed: bool) -> None:
        """On the filling thread: redraw when the names or the count of statuses from signatures changed."""
        if names_changed or self.index.signed_count() != self._signed_shown:
            self._arrive()

    def _arrive(self, *_summary) -> None:
        """On the filling thread: a summary arrived or the names changed; ask the session's loop for one flush."""
        with self._lock:
            if self._document is None or self._flush_pending or self._closed:
                return
            self._flush_pending = True
        self._document.add_next_tick_callback(self._flush_soon)

    def _flush_soon(self) -> None:  # on the session's loop: batch what arrives in the next interval
        document = self._document
        if document is not None:
            document.add_timeout_callback(self._flush, FLUSH_INTERVAL_MS)

    def _flush(self) -> None:
        """Redraw the table from the index (rows appear, change and disappear in place)."""
        with self._lock:
            self._flush_pending = False
        self._frame = self._rows()
        self._table.value = self._frame.copy()
        self._select_highlighted()
        self._say_count()
        if self.index.complete and not self.filled:
            self.filled = True

    def _close(self, _session_context) -> None:
        """The session closed: stop filling, rescanning and pushing, drop the document."""
        with self._lock:
            self._closed = True
            self._document = None

    # ------------------------------------------------------------ search, count, clicks

    @staticmethod
    def _matching(frame: pd.DataFrame, query: str | None) -> pd.DataFrame:
        query = (query or "").strip().lower()
        return frame[frame["packet"].str.lower().str.contains(query, regex=False)] if query else frame

    def _say_count(self, *_events) -> None:
        total = len(self._frame)
        query = (self._search.value_input or "").strip()
        matched = len(self._matching(self._frame, query))
        shown = max(0, min(PAGE_ROWS, matched - (self._table.page - 1) * PAGE_ROWS))
        text = f"<b>{total} packets</b> under <code>{html.escape(shown_name(str(self.index.root)))}</code><br>"
        text += f"showing {shown} of {matched}" if query else f"showing {shown} of {total}"
        if query:
            text += f" matching &quot;{html.escape(query)}&quot; ({total} in all)"
        pending = self._pending
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

    def _on_click(self, event) -> None:
        if 0 <= event.row < len(self._names):
            self._on_choose(self._names[event.row])

    def highlight(self, name: str) -> None:
        """Mark `name`'s row as the open packet (the shell calls this whenever it shows a packet)."""
        self._highlighted = name
        self._select_highlighted()

    def _select_highlighted(self) -> None:
        self._table.selection = [self._names.index(self._highlighted)] if self._highlighted in self._names else []

    def first_in_order(self) -> str | None:
        """The list's first row (list_order: the analyzed packet with the largest score), None for an empty root."""
        names = self.index.ordered_names()
        return names[0] if names else None


def _number(value: float | int | None) -> float:
    return float("nan") if value is None else float(value)
