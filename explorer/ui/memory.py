"""release_memory: once a session is gone, collect its reference cycles and hand freed heap pages back to the OS; holds no session object."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

from tornado.ioloop import IOLoop

RELEASE_DELAY_S = 1.0  # Bokeh drops the document after the destroy callbacks: collect a little later

_libc_name = ctypes.util.find_library("c")
_malloc_trim = getattr(ctypes.CDLL(_libc_name), "malloc_trim", None) if _libc_name else None  # glibc only


def _collect() -> None:
    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)


def release_memory(session_context) -> None:
    """A session-destroyed callback: collect and trim the heap shortly after (on the server's loop)."""
    IOLoop.current().call_later(RELEASE_DELAY_S, _collect)
