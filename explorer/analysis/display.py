"""Inline display of core results (Jupyter, `pn.panel`).

Delegated to a display module imported on first use; no numerics, no I/O.

The display module (explorer.notebook.packet, explorer.notebook.pair) loads the UI
libraries; naming it by string keeps the core itself free of them.
"""

from __future__ import annotations

from importlib import import_module
from typing import ClassVar

from explorer.foundations.record import Record


class InlineDisplay(Record):
    """Mixin: `_repr_html_`, `_repr_pretty_`, `.views` and `__panel__` from the module named DISPLAY_MODULE.

    That module provides `summary_html(result)`, `summary_text(result)` and
    `views_of(result)` (an object whose methods return Panel viewables, `.all()` among them).
    """

    DISPLAY_MODULE: ClassVar[str]

    def __repr__(self) -> str:
        """Short: the dataclass repr would print every array (the dataclasses using this set repr=False)."""
        return f"<{type(self).__name__}: {getattr(self, 'status', '?')}>"

    def _repr_html_(self) -> str:
        """Compact HTML when the result is the last expression of a Jupyter cell."""
        return import_module(self.DISPLAY_MODULE).summary_html(self)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """One line in IPython's plain-text display, instead of the dataclass repr of every array."""
        printer.text(import_module(self.DISPLAY_MODULE).summary_text(self))

    @property
    def views(self):
        """The views of this result for inline display, e.g. `result.views.errors()`."""
        return import_module(self.DISPLAY_MODULE).views_of(self)

    def __panel__(self):
        """`pn.panel(result)`: every view."""
        return self.views.all()
