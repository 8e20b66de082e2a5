"""Inline display of core results (Jupyter, `pn.panel`), delegated to a display module.

Imported on first use, that module (explorer.notebook.packet, explorer.notebook.pair) is named by string: the
core stays free of the UI.
"""

from __future__ import annotations

from importlib import import_module
from typing import ClassVar

from explorer.foundations.record import Record


class InlineDisplay(Record):
    """Mixin: `_repr_html_`, `_repr_pretty_`, `.views` and `__panel__` from DISPLAY_MODULE."""

    DISPLAY_MODULE: ClassVar[str]

    def __repr__(self) -> str:
        """Short: the dataclass repr would print every array."""
        return f"<{type(self).__name__}: {getattr(self, 'status', '?')}>"

    def _repr_html_(self) -> str:
        return import_module(self.DISPLAY_MODULE).summary_html(self)

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(import_module(self.DISPLAY_MODULE).summary_text(self))

    @property
    def views(self):
        """The views of this result for inline display, e.g. `result.views.errors()`."""
        return import_module(self.DISPLAY_MODULE).views_of(self)

    def __panel__(self):
        """`pn.panel(result)`: every view."""
        return self.views.all()
