"""What every mode of the app is (`Mode`) and what the shell lends each (`Context`); no widgets.

A mode is one kind of result the page shows (a packet, a pair, a replay run, a campaign); the single-packet mode
is the base the others return to when they close.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import panel as pn

from explorer.catalog.index import PacketIndex
from explorer.ui.arrival import wait_for_earlier
from explorer.ui.background import Runner
from explorer.ui.batch import one_message
from explorer.ui.packets import PacketList


class Mode(Protocol):
    """One kind of result on the page: its part of the sidebar, its area, its URL parameters and its Export."""

    QUERY: str  # the URL query parameter naming what it opens
    sidebar: pn.viewable.Viewable  # its list in the sidebar
    panel: pn.viewable.Viewable  # its area of the page, visible while it is the mode shown

    def query(self) -> dict[str, str]:
        """Its URL query parameters now ({} while it shows nothing)."""

    def from_query(self, query: Mapping[str, str]) -> list[str]:
        """Open what the URL query asks of it; returns notes for the message line."""

    def open(self, name: str) -> list[str]:
        """Open the result `name`; returns notes (nothing opened) when it cannot."""

    def close(self, notify: bool = True) -> None:
        """Drop what it shows; `notify` tells the shell (a Back button), else the shell closes it itself."""

    def export(self) -> None:
        """Export what it shows, as its Export button does."""

    def follow(self, packet: str) -> None:
        """The open packet is now `packet` (a mode bound to it lists its partners, runs, ...)."""


@dataclass
class Context:
    """What the shell lends every mode of one session."""

    index: PacketIndex
    packets: PacketList
    export_dir: Path
    runner: Runner
    lock: threading.RLock  # one change of the page at a time (explorer.ui.shell's docstring)
    shown: Callable[[Mode | None], None]  # this mode is now the one shown (the others close); None: back to the packet
    changed: Callable[[], None]  # what a mode shows changed within it: the URL follows
    open_pair: Callable[[Mode, str, str], list[str]]  # (opener, a, b): open packet a compared with b, keeping opener


def one_at_a_time(method: Callable) -> Callable:
    """`method` of a shell or mode run under the session's lock (`self.lock`), after every action of the session
    that arrived before it (explorer.ui.arrival)."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        wait_for_earlier()
        with self.lock, one_message():
            return method(self, *args, **kwargs)

    return locked
