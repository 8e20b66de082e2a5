"""mlx_run: the installed MLX library on a packet's exact inputs (imported only when asked).

Its numbers are whatever that library computes on this machine (docs/emulations.md, "mlx_run"). It runs in a
child interpreter of its own (this module, request and answer pickled through its standard streams): safe in a
threaded server or a daemonic worker, and a crash inside MLX is the entry's `library_failed` note naming it,
never the end of the explorer.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from explorer.analysis.emulation.launch import LIBRARY_FAILED, NO_LIBRARY, NotEmulated
from explorer.foundations.record import Record, record

LIBRARY_NAME = "mlx"
INSTALL_HINT = "pip install -e '.[mlx]'"
MAX_MESSAGE_CHARACTERS = 200  # of the library's own error message
CHILD_MODULE = "explorer.analysis.emulation.library"  # run as the child: reads a request, writes its answer
PACKAGE_PARENT = Path(__file__).resolve().parents[3]  # the directory holding this explorer package


@record
class LibraryRun(Record):
    """A real run: the output float32 [QH, D] in the library's output dtype, or why there is none; the library."""

    values: np.ndarray | None = None
    output_dtype: str | None = None
    library: Mapping[str, Any] | None = None
    not_emulated: NotEmulated | None = None
    launch_device: str | None = None  # "cpu", or the GPU's architecture letter class (s, d, other) for its launch rule


def available() -> bool:
    """Whether MLX can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec("mlx.core") is not None
    except (ImportError, ValueError):
        return False


def _gpu_class(mx: Any) -> str:
    """The GPU's class for MLX's launch rule: the last letter of its architecture name (s, d), else "other"."""
    letter = str(mx.metal.device_info().get("architecture", ""))[-1:]
    return letter if letter in ("s", "d") else "other"


def run(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, scale: np.float32, dtypes: tuple[str, str], device: str
) -> LibraryRun:
    """mx.fast.scaled_dot_product_attention(q, k, v, scale) on `device` ("default", "cpu" or "gpu"), in a child,
    on float32 values of `dtypes` cast back exactly; a library that is missing, raises or dies gives no values."""
    if not available():
        hint = f"install the extra with {INSTALL_HINT} to run the real library on this packet"
        return LibraryRun(not_emulated=NotEmulated(NO_LIBRARY, f"MLX is not installed here; {hint}"))
    request = pickle.dumps((queries, keys, values, scale, dtypes, device), protocol=pickle.HIGHEST_PROTOCOL)
    path = os.pathsep.join(filter(None, (str(PACKAGE_PARENT), os.environ.get("PYTHONPATH"))))
    environment = {**os.environ, "PYTHONPATH": path}
    try:
        done = subprocess.run(child_command(), input=request, capture_output=True, env=environment, check=False)
    except OSError as error:  # a process or memory limit: no child, no run
        return LibraryRun(not_emulated=NotEmulated(LIBRARY_FAILED, f"MLX's process could not start: {error}"))
    if done.returncode != 0 or not done.stdout:  # the child died before answering
        return LibraryRun(not_emulated=NotEmulated(LIBRARY_FAILED, _death(done.returncode, device)))
    result, output_dtype, library, not_emulated, launch_device = pickle.loads(done.stdout)  # our own child's answer
    library = None if library is None else MappingProxyType(library)
    return LibraryRun(result, output_dtype, library, not_emulated, launch_device)


def child_command() -> list[str]:
    """The child interpreter's command line: this module run as a script by this process's Python."""
    return [sys.executable, "-m", CHILD_MODULE]


def _death(exitcode: int | None, device: str) -> str:
    """The sentence of a child that died without answering: the signal that ended it, or its exit status."""
    signalled = exitcode is not None and exitcode < 0
    ended = f"by signal {signal.Signals(-exitcode).name}" if signalled else f"with exit status {exitcode}"
    return f"MLX died in its process on this packet ({device}) {ended}; the explorer went on without its numbers"


def serve() -> None:
    """The child's work: the pickled request on standard input, its LibraryRun's fields on standard output."""
    found = _run_here(*pickle.loads(sys.stdin.buffer.read()))
    library = None if found.library is None else dict(found.library)
    answer = (found.values, found.output_dtype, library, found.not_emulated, found.launch_device)
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _run_here(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, scale: np.float32, dtypes: tuple[str, str], device: str
) -> LibraryRun:
    """The library call itself, in this process (run's child)."""
    try:
        import mlx.core as mx

        query_dtype, kv_dtype = (getattr(mx, name) for name in dtypes)
        target = mx.default_device() if device == "default" else getattr(mx, device)
        with mx.stream(target):
            q = mx.array(queries[None, :, None, :]).astype(query_dtype)
            k = mx.array(keys[None]).astype(kv_dtype)
            v = mx.array(values[None]).astype(kv_dtype)
            out = mx.fast.scaled_dot_product_attention(q, k, v, scale=float(scale))
            result = np.array(out.astype(mx.float32))[0, :, 0, :]
        on_gpu = target == mx.gpu
        library = {"name": LIBRARY_NAME, "version": mx.__version__, "device": "gpu" if on_gpu else "cpu"}
        return LibraryRun(result, str(out.dtype).rsplit(".", 1)[-1], library, None, _gpu_class(mx) if on_gpu else "cpu")
    except (RuntimeError, ValueError, MemoryError, TypeError) as error:
        text = " ".join(str(error).split())[:MAX_MESSAGE_CHARACTERS]
        said = f"MLX raised on this packet ({device}): {type(error).__name__}: {text}"
        return LibraryRun(not_emulated=NotEmulated(LIBRARY_FAILED, said))


if __name__ == "__main__":
    serve()
