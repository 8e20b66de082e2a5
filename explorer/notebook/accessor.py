"""The `result.views` accessors' shared parts: a method per view section and the inline-views hint."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any, ClassVar

HINT_STYLE = "color:#555;font-size:0.85em;margin:0.2em 0"


def views_hint(calls: tuple[str, ...], tail: str = "") -> str:
    """The line under a rich display naming its inline views."""
    listed = ", ".join(f"<code>.views.{call}</code>" for call in calls)
    return f'<p class="views-hint" style="{HINT_STYLE}">Inline views: {listed}{tail}.</p>'


def section(name: str, doc: str) -> Callable[[Any], Any]:
    """An accessor method returning the view's section `name`, documented by `doc`."""

    def show(self):
        return self._section(name)

    show.__name__, show.__qualname__, show.__doc__ = name, name, doc
    return show


class SectionViews:
    """A result's view sections, each a Panel viewable to show inline; VIEW is the module of SECTIONS and build."""

    VIEW: ClassVar[str]
    CALLS: ClassVar[tuple[str, ...]]
    TEXT: ClassVar[Callable[[Any], str]]  # the result's one-line summary

    def __init__(self, result: Any) -> None:
        self._result = result

    def __repr__(self) -> str:
        return f"Views of {type(self).TEXT(self._result)}: " + ", ".join(self.CALLS)

    def _section(self, name: str):
        return import_module(self.VIEW).SECTIONS[name][1](self._result)

    def all(self):
        """The whole view (what the app and the export show)."""
        return import_module(self.VIEW).build(self._result)
