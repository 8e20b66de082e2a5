"""Standard output and error as every command writes them: closed streams, gone readers, full disks.

A stream closed when the process started becomes /dev/null (else the next file opened would take its
descriptor), and `Sink` writes text without ever raising.
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
    """Give a closed standard output or error /dev/null and let both escape what their encoding cannot write (call
    it before any file is opened)."""
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
    """A text stream that never raises: a closed pipe ends the writing quietly, any other error ends it, kept in
    `error`."""

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
