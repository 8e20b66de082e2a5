"""The sidebar's packet list: a paged, searchable, sortable table of a PacketIndex, filled in as summaries arrive; computes nothing.

The names are listed at once (discovery only); statuses, worst linf and noise-floor
ratios arrive from the index's background fill (started once the page is drawn, so
worker processes never compete with the first paint), which asks the session's event loop
(`add_next_tick_callback`, the one thread-safe Document method) to draw them in
batches, so the page never waits for them. Rows are sorted by status
(analyzed, inconclusive, refused) and then by the largest ratio, unless the user
sorts by a column header; a click on a row calls `on_choose` with its name, and
`highlight(name)` marks the open packet's row (the table's one selected row).
Numbers show 4 significant digits; hovering a cell shows its full value.
"""

from __future__ import annotations

import html
import threading
from typing import Callable

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import ScientificFormatter

from explorer.catalog.summary import STATUS_ORDER, PacketSummary
from explorer.catalog.index import PacketIndex

PAGE_ROWS = 20
FLUSH_INTERVAL_MS = 300  # how often arrived summaries are pushed into the session's table
# Roots up to this many packets are summarized before the first paint (a few ms each once cached), so the first
# packet by status and ratio opens with the page; larger roots fill in the background.
SYNCHRONOUS_FILL_PACKETS = 64
SIGNIFICANT_DIGITS = 4
PENDING_HTML = '<span class="packet-pending" style="color:#666666">reading ...</span>'
COLUMNS = ("packet", "status", "worst linf", "ratio", "order")
DEFAULT_SORTERS = [{"field": "order", "dir": "asc"}, {"field": "ratio", "dir": "desc"}]
TITLES = {"worst linf": "max head linf", "ratio": "/ noise floor"}
WIDTHS = {"status": 92, "worst linf": 78, "ratio": 78}  # pixels; the packet name takes the rest and wraps
# The sort arrow sits beside a header title (in its margin), never inside the title's box.
TABLE_STYLE = (":host .tabulator { font-size: 0.85em; } "
               ":host .tabulator .tabulator-header .tabulator-col.tabulator-sortable .tabulator-col-title "
               "{ padding-right: 0 !important; margin-right: 22px; width: auto !important; }")
# Hover: a cell's own value (a number's full precision; the status badge says its word); header titles wrap;
# the columns fit the sidebar (no resize handles).
TABLE_CONFIGURATION = {"columnDefaults": {"tooltip": True, "headerWordWrap": True, "resizable": False},
                       "columns": [{"field": "status", "tooltip": False}]}
HEADER_TOOLTIPS = {
    "worst linf": "Largest primary per-head linf (output vs the FP32 reference)",
    "ratio": "That head's linf divided by its FP64 noise floor (the reference's own error against FP64)",
}


class PacketList(param.Parameterized):
    """One session's packet table over a PacketIndex; `filled` turns True once every summary is in."""

    filled = param.Boolean(default=False, doc="True once every listed packet has its summary.")

    def __init__(self, index: PacketIndex, badge: Callable[[str], str], on_choose: Callable[[str], None],
                 **params):
        super().__init__(**params)
        self.index = index
        self._badge = badge
        self._on_choose = on_choose
        self._arrived: list[tuple[str, PacketSummary]] = []
        self._arrived_lock = threading.Lock()
        self._closed = False
        self._flush_pending = False
        self._document = None
        self._highlighted: str | None = None
        self._rows = {entry.name: row for row, entry in enumerate(index.entries)}
        self._frame = pd.DataFrame({
            "packet": [entry.name for entry in index.entries], "status": PENDING_HTML,
            "worst linf": float("nan"), "ratio": float("nan"), "order": len(STATUS_ORDER),
        }, columns=list(COLUMNS))
        number = ScientificFormatter(precision=SIGNIFICANT_DIGITS - 1, power_limit_high=0, power_limit_low=0,
                                     nan_format="", null_format="")
        self._table = pn.widgets.Tabulator(
            self._frame.copy(), pagination="remote", page_size=PAGE_ROWS, disabled=True, selectable=1,
            layout="fit_columns",
            show_index=False, sorters=list(DEFAULT_SORTERS), hidden_columns=["order"], titles=TITLES,
            header_tooltips=HEADER_TOOLTIPS, widths=WIDTHS, sizing_mode="stretch_width", stylesheets=[TABLE_STYLE],
            formatters={"packet": {"type": "textarea"}, "status": {"type": "html"}, "worst linf": number,
                        "ratio": number},
            configuration=TABLE_CONFIGURATION, css_classes=["packet-table"])
        self._search = pn.widgets.TextInput(placeholder="Search packet names", sizing_mode="stretch_width",
                                            css_classes=["packet-search"])
        self._table.add_filter(pn.bind(self._matching, query=self._search.param.value_input))
        self._count = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["packet-count"])
        self.panel = pn.Column(self._count, self._search, self._table, sizing_mode="stretch_width")
        self._table.on_click(self._on_click)
        self._table.param.watch(self._say_count, "page")
        self._search.param.watch(self._say_count, "value_input")
        self._say_count()

    # ------------------------------------------------------------ filling

    def start(self) -> None:
        """Fill the index: in the background when serving a session on a large root, else right here."""
        if not self.index.entries:
            self._finish()
        elif (pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
              and len(self.index.entries) > SYNCHRONOUS_FILL_PACKETS):
            self._document = pn.state.curdoc
            pn.state.on_session_destroyed(self._close)
            # Once the page is drawn: worker processes started earlier would take the cores from the first paint.
            pn.state.onload(lambda: self.index.fill_in_background(self._arrive, lambda: self._closed))
        else:
            self.index.fill(self._arrive)
            self._flush()

    def _arrive(self, name: str, summary: PacketSummary) -> None:
        """On the filling thread: keep the summary, and ask the session's loop for a flush unless one is pending."""
        with self._arrived_lock:
            self._arrived.append((name, summary))
            if self._document is None or self._flush_pending or self._closed:
                return
            self._flush_pending = True
        self._document.add_next_tick_callback(self._flush_soon)

    def _flush_soon(self) -> None:  # on the session's loop: batch what arrives in the next interval
        document = self._document
        if document is not None:
            document.add_timeout_callback(self._flush, FLUSH_INTERVAL_MS)

    def _flush(self) -> None:
        with self._arrived_lock:
            arrived, self._arrived = self._arrived, []
            self._flush_pending = False
        if arrived:
            rows = [self._rows[name] for name, _ in arrived]
            summaries = [summary for _, summary in arrived]
            self._frame.loc[rows, "status"] = [self._badge(s.status) for s in summaries]
            self._frame.loc[rows, "worst linf"] = [_number(s.worst_linf) for s in summaries]
            self._frame.loc[rows, "ratio"] = [_number(s.noise_floor_ratio) for s in summaries]
            self._frame.loc[rows, "order"] = [STATUS_ORDER.index(s.status) for s in summaries]
            self._table.value = self._frame.copy()
            self._select_highlighted()
            self._say_count()
        if self.index.complete and not self.filled:
            self._finish()

    def _finish(self) -> None:
        self.filled = True

    def _close(self, _session_context) -> None:
        """The session closed: stop filling and pushing, drop what arrived and the document."""
        with self._arrived_lock:
            self._closed = True
            self._arrived = []
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
        text = f"<b>{total} packets</b> under <code>{html.escape(str(self.index.root))}</code><br>"
        text += f"showing {shown} of {matched}" if query else f"showing {shown} of {total}"
        if query:
            text += f" matching &quot;{html.escape(query)}&quot; ({total} in all)"
        pending = int((self._frame["order"] == len(STATUS_ORDER)).sum())
        if pending:
            text += f"<br>reading statuses: {total - pending} of {total} known"
        if not total:
            text += "<br>No directory holding packet.json was found one or two levels below the root."
        self._count.object = (f'<div class="packet-count-text" data-pending="{pending}" style="font-size:0.9em">'
                              f"{text}</div>")

    def _on_click(self, event) -> None:
        self._on_choose(self._frame["packet"].iloc[event.row])

    def highlight(self, name: str) -> None:
        """Mark `name`'s row as the open packet (the shell calls this whenever it shows a packet)."""
        self._highlighted = name
        self._select_highlighted()

    def _select_highlighted(self) -> None:
        row = self._rows.get(self._highlighted)
        self._table.selection = [] if row is None else [row]

    def first_in_order(self) -> str | None:
        """The first packet by status and noise-floor ratio (the default sort), or None for an empty root."""
        names = self.index.ordered_names()
        return names[0] if names else None


def _number(value: float | int | None) -> float:
    return float("nan") if value is None else float(value)
