"""The views' tab labels as one row of buttons: `active` is the open view's slug; draws no view.

Instead of Panel's Tabs, whose nine empty panes cost every page about 90 DOM elements (benchmarks/bench_scale.py).
"""

from __future__ import annotations

from typing import ClassVar

import param
from panel.custom import JSComponent

# Tab-like labels: the open one underlined; the row wraps instead of pushing labels past a narrow column's edge.
TAB_BAR_CSS = """
.view-tabs { display: flex; flex-wrap: wrap; gap: 0 2px; border-bottom: 1px solid #c8d0da; margin-bottom: 6px; }
.view-tab {
  font: inherit; font-size: 0.93em; color: #2f3e4e; background: none; border: none;
  border-bottom: 3px solid transparent; padding: 4px 10px 3px 10px; cursor: pointer;
}
.view-tab:hover { background: #eef2f6; }
.view-tab:focus-visible { outline: 2px solid #4a6f96; outline-offset: -2px; }
.view-tab.active { border-bottom-color: #2f5f8f; font-weight: 600; color: #1f3550; }
"""


class TabBar(JSComponent):
    """A row of tab labels; a click (or Enter / Space on a focused label) sets `active` to its slug."""

    tabs = param.List(default=[], item_type=list, doc="[slug, title] pairs in tab order.")
    active = param.String(default="", doc="Slug of the open view.")

    _stylesheets: ClassVar[list[str]] = [TAB_BAR_CSS]

    _esm = """
export function render({ model }) {
  const bar = document.createElement("div")
  bar.className = "view-tabs"
  bar.setAttribute("role", "tablist")
  const draw = () => {
    bar.replaceChildren(...model.tabs.map(([slug, title]) => {
      const label = document.createElement("button")
      const open = slug === model.active
      label.type = "button"
      label.className = open ? "view-tab active" : "view-tab"
      label.dataset.tab = slug
      label.setAttribute("role", "tab")
      label.setAttribute("aria-selected", String(open))
      label.textContent = title
      label.addEventListener("click", () => {
        model.active = slug
        draw()
      })
      return label
    }))
  }
  model.on(["tabs", "active"], draw)
  draw()
  return bar
}
"""
