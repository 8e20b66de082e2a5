"""The explorer's views: `VIEWS` (slug, title, builder) in tab order and the shared `Selection`.

Views draw, they never compute.

`VIEWS` and `Selection` load Panel and HoloViews on first access, so importing
`explorer.views.shared.html_summary` (plain HTML strings) stays free of UI libraries.
"""

from __future__ import annotations

__all__ = ["VIEWS", "Selection"]


def __getattr__(name: str):
    if name in __all__:
        from explorer.views.packet import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
