"""The explorer's views: `VIEWS` (slug, title, builder) in tab order and the shared `Selection`.

Both load Panel and HoloViews on first access: importing `explorer.views.shared.html_summary` stays free of them.
"""

from __future__ import annotations

__all__ = ["VIEWS", "Selection"]


def __getattr__(name: str):
    if name in __all__:
        from explorer.views.packet import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
