"""Standard output and error as every command writes them: closed streams, gone readers, full devices.

One mechanism for every command: a stream closed before the process started is /dev/null, a write never raises.

A command started with its standard output or error closed (`>&-`, `2>&-`) would get None as
sys.stdout or sys.stderr, and the next file it opens would take descriptor 1 or 2 (a child such as
chromium would then write into it). `open_standard_streams` gives each closed descriptor /dev/null
first, so what would be written there is dropped, as after a reader that went away, and the command
keeps its own exit status. `Sink` writes text and never raises: a reader that went away (closed pipe)
ends the writing quietly, any other error (a full device) ends it and is kept for the caller to report.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO

STANDARD_STREAMS = (("stdout", 1), ("stderr", 2))  # sys attribute and descriptor of the streams a command writes
STREAM_ERRORS = "backslashreplace"  # a character the encoding lacks is escaped, never an exit 1


def _is_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True


def open_standard_streams() -> None:
    """Give standard output and error that were closed when the process started /dev/null (descriptor and sys
    stream), and let both escape what their encoding cannot write. Call it before any file is opened."""
    for name, descriptor in STANDARD_STREAMS:
        if not _is_open(descriptor):
            devnull = os.open(os.devnull, os.O_WRONLY)
            if devnull != descriptor:
                os.dup2(devnull, descriptor)
                os.close(devnull)
        if getattr(sys, name) is None:
            stream = open(descriptor, "w", closefd=False, errors=STREAM_ERRORS)  # noqa: SIM115 (the process's own)
            setattr(sys, name, stream)
        with contextlib.suppress(AttributeError, ValueError):
            getattr(sys, name).reconfigure(errors=STREAM_ERRORS)


def discard_stdout() -> None:
    """Point standard output at /dev/null, so that what is still buffered is dropped quietly at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class Sink:
    """A text stream written line by line that never raises: a reader that went away (closed pipe) ends the
    writing quietly, any other write error (a full device) ends it and is kept in `error`."""

    def __init__(self, stream: TextIO):
        self.stream, self.open, self.error = stream, True, None

    def write(self, text: str) -> None:
        if not self.open:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.open = False
        except OSError as error:
            self.open, self.error = False, error
