"""Writes a new file whole or not at all, never replacing anything; no packets, no UI.

The bytes go to a fsynced temporary file hard-linked to the final name, which succeeds only while the name is
free (never following a link there); the temporary name is removed whatever happens.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

TEMP_PREFIX = ".explorer-"
TEMP_SUFFIX = ".tmp"
TEMP_TOKEN_BYTES = 8
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
NEW_FILE_MODE = 0o666  # before the umask, as open() creates files


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_new(path: str | os.PathLike, data: str | bytes, *, dir_fd: int | None = None) -> Path:
    """Create `path` holding exactly `data` (str as UTF-8; with `dir_fd` a name in that open directory);
    FileExistsError when the name is taken."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    directory = os.open(path.parent, DIRECTORY_FLAGS) if dir_fd is None else dir_fd
    name = path.name if dir_fd is None else os.fspath(path)
    temp = f"{TEMP_PREFIX}{os.urandom(TEMP_TOKEN_BYTES).hex()}{TEMP_SUFFIX}"
    try:
        fd = os.open(temp, CREATE_FLAGS, NEW_FILE_MODE, dir_fd=directory)
        try:
            try:
                _write_all(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(temp, name, src_dir_fd=directory, dst_dir_fd=directory, follow_symlinks=False)
            except FileExistsError:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fspath(path)) from None
        finally:
            os.unlink(temp, dir_fd=directory)
        with contextlib.suppress(OSError):  # the file is whole and in place; this only hastens the name to disk
            os.fsync(directory)
    finally:
        if dir_fd is None:
            os.close(directory)
    return path
