"""Attention Packet Explorer: `analyze(path)` is the public entry point; importing this never loads the UI."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from explorer.analysis.result import Analysis

__version__ = "0.1.0"
__all__ = ["analyze", "__version__"]


def analyze(path: str | os.PathLike, emulate: str | Iterable[str] | None = None) -> "Analysis":
    """Admit and analyze the packet at `path` (a directory or its packet.json); see report-v1.md section 3.

    `emulate`: None (no kernel emulation), "default" (the default set) or a list of
    emulation ids such as "mlx_two_pass(partialDType=float32)".
    """
    from explorer.analysis.analyze import analyze as _analyze

    return _analyze(path, emulate=emulate)
