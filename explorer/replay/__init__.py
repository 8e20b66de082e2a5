"""Operator replay runs beside their packet (docs/replay.md); never imports UI code.

Callable as `explorer.replay(run, ...)`: importing a module of the package binds the package to that name, where the
public function stood, so calling the package runs the function.
"""

from __future__ import annotations

import sys
from types import ModuleType


class _CallablePackage(ModuleType):
    def __call__(self, *args, **kwargs):
        """`explorer.replay(run, packet=None, partner=None, emulate=None)`: see explorer.replay.replay.replay."""
        from explorer.replay.replay import replay

        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
