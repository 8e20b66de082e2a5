"""Safe opening, reading and hashing of a packet's files (packet-v1.md section 5); never parses or decodes.

Every file is resolved (symlinks included) and must stay inside the packet
directory, is opened with `O_RDONLY | O_NONBLOCK | O_NOFOLLOW` (a FIFO opens
without blocking), is checked through `fstat` of that open descriptor, and is
read at most once, never past its declared length plus one byte. The bytes
returned are exactly the bytes hashed. Aliases (symlinks, hard links, the same
name twice, `packet.json` itself) are caught by `(st_dev, st_ino)` of the opened
files before anything is read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from typing import Sequence

from explorer.packet.model import Problem

PACKET_JSON = "packet.json"
JSON_SIZE_LIMIT = 256 * 1024  # packet.json and the metadata file, by their actual size
TENSOR_SIZE_LIMIT = 32 * 1024 * 1024  # one tensor, and all six together, by declared size
READ_CHUNK = 1024 * 1024
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISLNK, "a symbolic link"))


@dataclass(frozen=True)
class FileRequest:
    """One descriptor's file: `key` is the descriptor's JSON pointer (e.g. `/tensors/queries`).

    `byte_count` None means open and check only (the declared length is unusable);
    `sha256` None means the hash is not compared (the declared hash is unusable);
    `json_file` applies the JSON size limit to the file's actual size.
    """

    key: str
    path: str
    byte_count: int | None
    sha256: str | None
    json_file: bool = False


@dataclass(frozen=True)
class FileOutcome:
    """What section 5 established about one file: its problems and, when read, the bytes and their hash.

    `data` is set only when exactly `byte_count` bytes were read; `verified` when
    they also hash to the declared `sha256`.
    """

    problems: tuple[Problem, ...]
    data: bytes | None
    sha256: str | None
    verified: bool


@dataclass(frozen=True)
class PacketFile:
    """packet.json as read: the resolved packet directory, the bytes, their hash and the file's identity."""

    root: str | None
    problem: Problem | None
    data: bytes | None
    sha256: str | None
    identity: tuple[int, int] | None


class _Refusal(Exception):
    """A section 5 problem found while handling one file (internal control flow)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def relative_path_problem(path: str) -> str | None:
    """Why `path` is not a valid relative path (path_invalid), or None."""
    if path == "":
        return "the path is empty"
    if "\\" in path or "\0" in path:
        return "the path contains a backslash or NUL character"
    if path.startswith("/"):
        return "the path is absolute"
    if ".." in path.split("/"):
        return "the path has a '..' component"
    return None


def _kind(mode: int) -> str:
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def _open_inside(root: str, relative: str) -> tuple[int, os.stat_result]:
    """Open `relative` below `root` (already resolved) and return the descriptor and its fstat."""
    target = os.path.realpath(os.path.join(root, relative))
    if os.path.commonpath([root, target]) != root:
        raise _Refusal("path_escape", f"{relative!r} resolves to {target!r}, outside the packet directory")
    try:
        fd = os.open(target, OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        raise _Refusal("path_missing", f"nothing at {relative!r}") from None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket, or a device without a driver
            raise _Refusal("path_not_regular", f"{relative!r} is not a regular file ({error.strerror})") from None
        raise _Refusal("file_unreadable", f"cannot open {relative!r}: {error.strerror or error}") from None
    try:
        status = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise _Refusal("file_unreadable", f"cannot stat {relative!r}: {error.strerror or error}") from None
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise _Refusal("path_not_regular", f"{relative!r} is {_kind(status.st_mode)}, not a regular file")
    return fd, status


def _read_at_most(fd: int, limit: int, relative: str) -> bytes:
    chunks, total = [], 0
    try:
        while total < limit:
            chunk = os.read(fd, min(READ_CHUNK, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as error:
        raise _Refusal("file_unreadable", f"cannot read {relative!r}: {error.strerror or error}") from None
    return b"".join(chunks)


def _read_declared(fd: int, size: int, byte_count: int, relative: str) -> bytes:
    """Exactly `byte_count` bytes, or byte_count_mismatch (reads at most byte_count + 1 bytes)."""
    if size != byte_count:
        raise _Refusal("byte_count_mismatch", f"{relative!r} has {size} bytes, the descriptor declares {byte_count}")
    data = _read_at_most(fd, byte_count + 1, relative)
    try:
        size_after = os.fstat(fd).st_size
    except OSError as error:
        raise _Refusal("file_unreadable", f"cannot stat {relative!r}: {error.strerror or error}") from None
    if len(data) != byte_count or size_after != byte_count:
        raise _Refusal("byte_count_mismatch",
                       f"{relative!r} changed length while being read ({len(data)} bytes read, "
                       f"{size_after} now, {byte_count} declared)")
    return data


def read_packet_json(path: str | os.PathLike) -> PacketFile:
    """Locate the packet directory from a directory or its packet.json path and read packet.json."""
    given = os.fspath(path)
    try:
        status = os.stat(given)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return PacketFile(None, Problem("path_missing", None, f"no packet at {given!r}"), None, None, None)
    except OSError as error:
        return PacketFile(None, Problem("file_unreadable", None, f"cannot stat {given!r}: {error.strerror}"),
                          None, None, None)
    if stat.S_ISDIR(status.st_mode):
        root = given
    elif os.path.basename(given) == PACKET_JSON:
        root = os.path.dirname(given) or "."
    else:
        return PacketFile(None, Problem("path_not_regular", None,
                                        f"{given!r} is neither a packet directory nor its {PACKET_JSON}"),
                          None, None, None)
    root = os.path.realpath(root)
    try:
        fd, status = _open_inside(root, PACKET_JSON)
    except _Refusal as refusal:
        return PacketFile(root, Problem(refusal.code, None, refusal.message), None, None, None)
    try:
        if status.st_size > JSON_SIZE_LIMIT:
            raise _Refusal("json_too_large", f"{PACKET_JSON} has {status.st_size} bytes, more than {JSON_SIZE_LIMIT}")
        data = _read_at_most(fd, JSON_SIZE_LIMIT + 1, PACKET_JSON)
        if len(data) > JSON_SIZE_LIMIT:
            raise _Refusal("json_too_large", f"{PACKET_JSON} grew past {JSON_SIZE_LIMIT} bytes while being read")
    except _Refusal as refusal:
        return PacketFile(root, Problem(refusal.code, None, refusal.message), None, None, None)
    finally:
        os.close(fd)
    return PacketFile(root, None, data, hashlib.sha256(data).hexdigest(), (status.st_dev, status.st_ino))


def _read_one(request: FileRequest, fd: int, status: os.stat_result) -> FileOutcome:
    if request.json_file and status.st_size > JSON_SIZE_LIMIT:
        problem = Problem("json_too_large", f"{request.key}/file",
                          f"{request.path!r} has {status.st_size} bytes, more than {JSON_SIZE_LIMIT}")
        return FileOutcome((problem,), None, None, False)
    if request.byte_count is None:
        return FileOutcome((), None, None, False)
    try:
        data = _read_declared(fd, status.st_size, request.byte_count, request.path)
    except _Refusal as refusal:
        field = f"{request.key}/{'byteCount' if refusal.code == 'byte_count_mismatch' else 'file'}"
        return FileOutcome((Problem(refusal.code, field, refusal.message),), None, None, False)
    digest = hashlib.sha256(data).hexdigest()
    if request.sha256 is not None and digest != request.sha256:
        problem = Problem("sha256_mismatch", f"{request.key}/sha256",
                          f"{request.path!r} hashes to {digest}, the descriptor declares {request.sha256}")
        return FileOutcome((problem,), data, digest, False)
    return FileOutcome((), data, digest, request.sha256 is not None)


def verify_files(root: str, packet_identity: tuple[int, int], requests: Sequence[FileRequest]) -> dict[str, FileOutcome]:
    """Open every requested file, refuse aliases, then read and hash the rest; keyed by request key.

    A request whose file duplicates packet.json or an earlier request's file gets
    path_duplicate and is not read; the earlier one is handled normally.
    """
    outcomes: dict[str, FileOutcome] = {}
    opened: list[tuple[FileRequest, int, os.stat_result]] = []
    seen = {packet_identity: PACKET_JSON}
    try:
        for request in requests:
            try:
                fd, status = _open_inside(root, request.path)
            except _Refusal as refusal:
                outcomes[request.key] = FileOutcome((Problem(refusal.code, f"{request.key}/file", refusal.message),),
                                                    None, None, False)
                continue
            opened.append((request, fd, status))
            identity = (status.st_dev, status.st_ino)
            if identity in seen:
                problem = Problem("path_duplicate", f"{request.key}/file",
                                  f"{request.path!r} is the same file as {seen[identity]}")
                outcomes[request.key] = FileOutcome((problem,), None, None, False)
            else:
                seen[identity] = f"{request.key}/file ({request.path!r})"
        for request, fd, status in opened:
            if request.key not in outcomes:
                outcomes[request.key] = _read_one(request, fd, status)
    finally:
        for _, fd, _ in opened:
            os.close(fd)
    return outcomes
