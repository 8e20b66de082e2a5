"""Writes a new file whole or not at all, never replacing anything.

Never reads packets or imports the UI.

`write_new` writes the bytes to a temporary file in the target directory,
flushes and fsyncs it, then hard-links it to the final name, which succeeds
only while that name is free (a link never follows a symlink standing at the
name, and never replaces a file). The temporary name is removed whatever
happens, so a full disk, a file-size limit or a taken name leaves nothing
behind.
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
    """Create `path` holding exactly `data` (str is written as UTF-8); FileExistsError when the name is taken.

    With `dir_fd`, `path` is a name inside that open directory (no other path
    is resolved); otherwise its parent directory is opened by name.
    """
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
