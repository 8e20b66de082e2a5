"""Attention Packet Explorer: `analyze(path)` and `compare(a, b)` are the public entry points; importing this never loads the UI."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from explorer.pair.model import Pair
    from explorer.analysis.result import Analysis

from explorer.version import __version__
__all__ = ["analyze", "compare", "__version__"]


def analyze(path: str | os.PathLike, emulate: str | Iterable[str] | None = None) -> "Analysis":
    """Admit and analyze the packet at `path` (a directory or its packet.json); see report-v1.md section 3.

    `emulate`: None (no kernel emulation), "default" (the default set) or a list of
    emulation ids such as "mlx_two_pass(partialDType=float32)".
    """
    from explorer.analysis.analyze import analyze as _analyze

    return _analyze(path, emulate=emulate)


def compare(a: "str | os.PathLike | Analysis", b: "str | os.PathLike | Analysis",
            emulate: str | Iterable[str] | None = None) -> "Pair":
    """Compare two captures of one selection (paths or analyze() results) into an immutable Pair; never raises for packet content.

    `emulate` as for analyze: each side's kernel emulations and the emulation x side matrix.
    """
    from explorer.pair.compare import compare as _compare

    return _compare(a, b, emulate=emulate)
