"""A light paged table for the browser: search box, sortable headers, rows of one page, a pager.

The server owns the rows, the search, the sort and the paging (explorer.ui.packets); this draws the page it is
sent and sends back what the user does. `view` is everything the page shows, sent in one piece:
{"query", "page", "pages", "sort", "descending", "columns": [{"field", "title", "tooltip", "number"}],
"rows": [{"name", "status", "open", "numbers": [[shown, full], ...]}]}. Names and numbers are plain text
(set with textContent); `status` is HTML the server builds from fixed strings (a status badge).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import param
from panel.custom import JSComponent

SEARCH_DEBOUNCE_MS = 150  # a search text is sent once typing pauses this long
# Compact, fits the sidebar: the name column takes what the others leave and wraps; numbers never wrap.
TABLE_CSS = """
:host { display: block; }
.packet-search input { box-sizing: border-box; width: 100%; font: inherit; padding: 4px 8px; margin: 4px 0;
  border: 1px solid #c8ced6; border-radius: 4px; }
table.packet-rows { width: 100%; border-collapse: collapse; font-size: 0.85em; table-layout: auto; }
.packet-header { background: #f1f3f5; border-bottom: 1px solid #c8ced6; padding: 0; vertical-align: bottom;
  text-align: left; }
.packet-header button { all: unset; box-sizing: border-box; display: block; width: 100%; padding: 4px 3px;
  font-weight: 600; cursor: pointer; overflow-wrap: normal; }
.packet-header button:focus-visible, .packet-name:focus-visible { outline: 2px solid #2f6fb0; outline-offset: -2px; }
.packet-header.packet-number button { text-align: right; }
.packet-sort-arrow { display: inline-block; width: 0.9em; margin-left: 2px; color: #2f6fb0; }
.packet-row { border-bottom: 1px solid #e4e7eb; cursor: pointer; }
.packet-row:hover { background: #f5f8fb; }
.packet-row.packet-row-open { background: #dbe8f6; }
.packet-cell { padding: 3px; vertical-align: top; }
.packet-cell[data-field="packet"] { overflow-wrap: anywhere; word-break: break-word; }
.packet-name { all: unset; cursor: pointer; white-space: pre-wrap; overflow-wrap: anywhere; }
td.packet-number { white-space: nowrap; font-variant-numeric: tabular-nums; text-align: right; }
.packet-pager { display: flex; align-items: center; justify-content: space-between; gap: 6px; margin-top: 4px;
  font-size: 0.85em; }
.packet-pager button { font: inherit; padding: 2px 8px; }
"""
ESM = """
const DEBOUNCE_MS = SEARCH_DEBOUNCE_MS
const ARROWS = {ascending: "\\u25B2", descending: "\\u25BC", "": ""}

function element(tag, className, text) {
  const node = document.createElement(tag)
  if (className) node.className = className
  if (text !== undefined) node.textContent = text
  return node
}

export function render({ model }) {
  const root = element("div", "packet-list")
  const searchBox = element("div", "packet-search")
  const search = element("input")
  search.type = "search"
  search.placeholder = "Search packet names"
  search.setAttribute("aria-label", "Search packet names")
  search.value = model.view.query || ""
  let timer = null
  search.addEventListener("input", () => {
    clearTimeout(timer)
    timer = setTimeout(() => model.send_msg({search: search.value}), DEBOUNCE_MS)
  })
  searchBox.append(search)

  const table = element("table", "packet-rows")
  const headerRow = table.createTHead().insertRow()
  const headers = {}
  for (const column of model.view.columns) {
    const header = element("th", "packet-header" + (column.number ? " packet-number" : ""))
    header.dataset.field = column.field
    header.title = column.tooltip
    const button = element("button")
    button.type = "button"
    button.append(element("span", "packet-header-title", column.title), element("span", "packet-sort-arrow"))
    button.addEventListener("click", () => model.send_msg({sort: column.field}))
    header.append(button)
    headerRow.append(header)
    headers[column.field] = header
  }
  const body = table.createTBody()

  const pager = element("div", "packet-pager")
  const previous = element("button", "packet-previous", "previous")
  const place = element("span", "packet-page")
  const next = element("button", "packet-next", "next")
  previous.type = next.type = "button"
  previous.addEventListener("click", () => model.send_msg({page: model.view.page - 1}))
  next.addEventListener("click", () => model.send_msg({page: model.view.page + 1}))
  pager.append(previous, place, next)

  function row(item, index) {
    const tr = element("tr", "packet-row" + (item.open ? " packet-row-open" : ""))
    tr.dataset.name = item.name
    if (item.open) tr.setAttribute("aria-current", "true")
    const nameCell = element("td", "packet-cell")
    nameCell.dataset.field = "packet"
    const name = element("button", "packet-name", item.name)
    name.type = "button"
    name.title = item.name
    nameCell.append(name)
    const status = element("td", "packet-cell")
    status.dataset.field = "status"
    status.innerHTML = item.status  // server-built from fixed strings: the only HTML set here
    tr.append(nameCell, status)
    model.view.columns.slice(2).forEach((column, at) => {
      const [shown, full] = item.numbers[at]
      const cell = element("td", "packet-cell packet-number", shown)
      cell.dataset.field = column.field
      if (full) cell.title = full
      tr.append(cell)
    })
    tr.addEventListener("click", () => model.send_msg({choose: item.name, row: index}))
    return tr
  }

  function draw() {
    const view = model.view
    const focused = root.getRootNode().activeElement
    const refocus = focused && focused.classList.contains("packet-name") ? focused.textContent : null
    for (const [field, header] of Object.entries(headers)) {
      const sort = field === view.sort ? (view.descending ? "descending" : "ascending") : ""
      header.dataset.sort = sort
      header.setAttribute("aria-sort", sort || "none")
      header.querySelector(".packet-sort-arrow").textContent = ARROWS[sort]
    }
    body.replaceChildren(...view.rows.map(row))
    place.textContent = `page ${view.page} of ${view.pages}`
    previous.disabled = view.page <= 1
    next.disabled = view.page >= view.pages
    if (refocus !== null) {
      for (const name of body.querySelectorAll(".packet-name")) if (name.textContent === refocus) name.focus()
    }
  }

  model.on("view", draw)
  draw()
  root.append(searchBox, table, pager)
  return root
}
""".replace("SEARCH_DEBOUNCE_MS", str(SEARCH_DEBOUNCE_MS))


class PageTable(JSComponent):
    """One page of rows drawn in the browser; user actions come back through the `on_*` callbacks."""

    view = param.Dict(default={}, doc="The page as shown (see the module docstring).")

    _esm = ESM
    _stylesheets: ClassVar[list[str]] = [TABLE_CSS]

    def __init__(self, on_search: Callable, on_sort: Callable, on_page: Callable, on_choose: Callable):
        super().__init__(sizing_mode="stretch_width", css_classes=["packet-table"])
        self._on_search, self._on_sort, self._on_page, self._on_choose = on_search, on_sort, on_page, on_choose

    def _handle_msg(self, data) -> None:  # Panel's hook for the ESM's model.send_msg
        self.receive(data)

    def receive(self, data) -> None:
        """A user action from the browser: exactly one of search / sort / page / choose (anything else ignored)."""
        if not isinstance(data, dict):
            return
        if isinstance(data.get("search"), str):
            self._on_search(data["search"])
        elif isinstance(data.get("sort"), str):
            self._on_sort(data["sort"])
        elif isinstance(data.get("page"), int):
            self._on_page(data["page"])
        elif isinstance(data.get("choose"), str) and isinstance(data.get("row"), int):
            self._on_choose(data["choose"], data["row"])
