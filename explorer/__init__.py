"""Attention Packet Explorer: `analyze(path)` is the public entry point; importing this never loads the UI."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from explorer.analysis.result import Analysis

__version__ = "0.1.0"
__all__ = ["analyze", "__version__"]


def analyze(path: str | os.PathLike) -> "Analysis":
    """Admit and analyze the packet at `path` (a directory or its packet.json); see report-v1.md section 3."""
    from explorer.analysis.analyze import analyze as _analyze

    return _analyze(path)
