"""Operator replay runs beside their packet (docs/replay.md).

The Replay model, reading the run, its computation and its JSON report; never imports UI code.

The package is callable as `explorer.replay(run, ...)`: importing any module of it makes
Python bind the package itself to the name `explorer.replay`, where the public function
of the same name stood; calling the package runs that function, so both spellings work.
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
