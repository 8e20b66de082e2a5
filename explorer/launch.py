"""The `explorer` script and `python -m explorer`: sets up the process and runs explorer.cli.

Loading numpy and the analysis takes 100 to 150 ms holding the interpreter lock; reading and hashing a Qwen-size
packet 10 to 20 ms, mostly without it. For `explorer analyze PACKET [--json]` the packet is admitted on a second
thread meanwhile (admission needs no numpy until it decodes the verified tensors), and the command uses it.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Sequence
from typing import NoReturn

from explorer.foundations.parallel import single_threaded_blas
from explorer.foundations.streams import open_standard_streams
from explorer.packet.admission import ReadAhead

# glibc's malloc returns every freed block of 128 KiB or more to the kernel, and the next temporary of that size
# faults its pages in afresh: about 0.3 ms per MB on this project's machines (several times that on a virtual
# machine whose host has reclaimed the memory), 3,300 faults in the references of a Qwen-size packet. A command
# keeps freed blocks below MMAP_THRESHOLD_BYTES for reuse instead; the peak resident size is unchanged.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (glibc's malloc.h)
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest: blocks of this size and more are still mapped and unmapped
TRIM_THRESHOLD_BYTES = 1 << 30  # free memory kept at the top of the heap before it is given back
READ_AHEAD_FLAGS = frozenset({"--json"})  # options of an `analyze` line whose packet is read ahead


def _reuse_freed_memory() -> None:
    """Tune glibc's malloc of this process to reuse freed blocks (nothing elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # numpy loads it anyway

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)


def packet_to_read(argv: Sequence[str]) -> str | None:
    """The PACKET of `analyze PACKET` with no option but --json (in any order), else None."""
    if not argv or argv[0] != "analyze":
        return None
    positional = [argument for argument in argv[1:] if not argument.startswith("-")]
    options = {argument for argument in argv[1:] if argument.startswith("-")}
    return positional[0] if len(positional) == 1 and options <= READ_AHEAD_FLAGS else None


def run() -> NoReturn:
    """Run the command line of this process, then exit with its status.

    gc.freeze() before the exit: the interpreter's exit would otherwise garbage-collect every object the command
    made, 40 to 100 ms of a Qwen-size analyze (frozen objects are still freed as the interpreter clears its modules;
    streams are flushed and atexit callbacks run as always).
    """
    open_standard_streams()  # before any file is opened: a closed descriptor 1 or 2 is /dev/null, never a file
    single_threaded_blas()
    _reuse_freed_memory()
    path = packet_to_read(sys.argv[1:])
    ahead = ReadAhead(path) if path is not None else None
    from explorer.cli import main  # numpy and the analysis load here, meanwhile the packet is read

    status = main(ahead=ahead)
    gc.freeze()
    sys.exit(status)
