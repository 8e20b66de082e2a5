"""Safe opening, reading and hashing of a packet's files (docs/packet-format.md, How files are read).

Never parses or decodes. Every path is walked below the one open packet directory a component at a time, no
link followed by the kernel (`_walk`); each file is checked with `fstat`, read at most once and never past its
declared length plus one byte, and the bytes returned are the bytes hashed. Aliases are caught by
`(st_dev, st_ino)` before anything is read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from explorer.foundations.bounded import quoted
from explorer.foundations.parallel import run_on_threads
from explorer.foundations.record import Record, record
from explorer.packet.model import Problem

PACKET_JSON = "packet.json"
JSON_SIZE_LIMIT = 256 * 1024  # packet.json and the metadata file, by their actual size
TENSOR_SIZE_LIMIT = 32 * 1024 * 1024  # one tensor, and all six together, by declared size
READ_CHUNK = 64 * 1024 * 1024  # above every admitted file's size: one read per file, no joined copy
READ_THREADS = 2  # files read and hashed at once (reads and SHA-256 release the interpreter lock)
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC  # the last component of a path
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC  # every other one
ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC  # the packet directory as given
MAX_SYMLINK_HOPS = 40  # links followed (by this module) within one path, as the kernel allows
PROC_FD = "/proc/self/fd"

_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


@record
class FileRequest(Record):
    """One descriptor's file at its JSON pointer `key`; `byte_count` None: open and check only, `sha256` None: the
    hash not compared, `json_file`: the JSON size limit applies to its actual size."""

    key: str
    path: str
    byte_count: int | None
    sha256: str | None
    json_file: bool = False


@record
class FileOutcome(Record):
    """What section 5 established about one file: its problems, the bytes (exactly `byte_count` of them) and their
    hash when read, `verified` when that is the declared hash."""

    problems: tuple[Problem, ...]
    data: bytes | None
    sha256: str | None
    verified: bool


@record
class PacketRoot(Record):
    """The open packet directory: its descriptor and the components of its own path (for absolute link targets)."""

    fd: int
    parts: tuple[str, ...]

    def inside(self, target: str) -> list[str] | None:
        """The components of an absolute `target` below this directory, or None when it names no place inside."""
        parts = [part for part in target.split("/") if part not in ("", ".")]
        if tuple(parts[: len(self.parts)]) != self.parts:
            return None
        return parts[len(self.parts) :]


@record
class PacketFile(Record):
    """packet.json as read: the open packet directory, the bytes, their hash and the file's identity."""

    root: PacketRoot | None
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
    if path.endswith("/"):
        return "the path ends with '/' (names a directory)"
    return None


def _kind(mode: int) -> str:
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def _link_target(name: str, directory: int) -> str | None:
    """The target of the symbolic link `name` in `directory`, or None when `name` is not a link."""
    try:
        return os.readlink(name, dir_fd=directory)
    except OSError as error:
        if error.errno == errno.EINVAL:
            return None
        raise


def _walk(root: PacketRoot, relative: str) -> int:
    """Open `relative` below the packet directory, one component at a time (`O_NOFOLLOW` on each).

    A link met on the way is read and its target walked the same way (at most MAX_SYMLINK_HOPS): a relative
    target from the link's directory, `..` no higher than the packet directory, an absolute one only when it names
    a place inside it; anything else raises _Refusal("path_escape"). OSError for what the system refuses.
    """
    parts = deque(relative.split("/"))
    directories: list[int] = []  # descriptors of the directories walked below the root, innermost last
    hops = 0
    retried = False  # a component that looked like a link once but was none when read
    try:
        while True:  # `parts` is never empty here: every path below ends on a component that is opened
            part = parts.popleft()
            if part in ("", os.curdir, os.pardir):
                if part == os.pardir:
                    if not directories:
                        raise _Refusal("path_escape", f"{quoted(relative)} leads outside the packet directory")
                    os.close(directories.pop())
                if parts:
                    continue
                part = os.curdir  # the walk ends on a directory: opened, then refused by fstat
            here = directories[-1] if directories else root.fd
            last = not parts
            try:
                fd = os.open(part, OPEN_FLAGS if last else DIRECTORY_FLAGS, dir_fd=here)
            except OSError as error:
                if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                target = _link_target(part, here)
                if target is None:
                    if retried:
                        raise
                    retried = True
                    parts.appendleft(part)  # swapped while looking: look once more
                    continue
                hops, retried = hops + 1, False
                if hops > MAX_SYMLINK_HOPS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                if target.startswith("/"):
                    below = root.inside(target)
                    if below is None:
                        raise _Refusal(
                            "path_escape", f"{quoted(relative)} leads outside the packet directory"
                        ) from None
                    while directories:
                        os.close(directories.pop())
                    parts.extendleft(reversed(below or [os.curdir]))
                else:
                    parts.extendleft(reversed(target.split("/")))
                continue
            retried = False
            if last:
                return fd
            directories.append(fd)
    finally:
        for directory in directories:
            os.close(directory)


def _open_inside(root: PacketRoot, relative: str) -> tuple[int, os.stat_result]:
    """Open `relative` below the packet directory and return the descriptor and its fstat."""
    shown = quoted(relative)
    try:
        fd = _walk(root, relative)
    except (FileNotFoundError, NotADirectoryError):
        raise _Refusal("path_missing", f"nothing at {shown}") from None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket, or a device without a driver
            raise _Refusal("path_not_regular", f"{shown} is not a regular file ({error.strerror})") from None
        raise _Refusal("file_unreadable", f"cannot open {shown}: {error.strerror or error}") from None
    except ValueError as error:  # a name the operating system cannot take
        raise _Refusal("file_unreadable", f"cannot open {shown}: {error}") from None
    try:
        status = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise _Refusal("file_unreadable", f"cannot stat {shown}: {error.strerror or error}") from None
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise _Refusal("path_not_regular", f"{shown} is {_kind(status.st_mode)}, not a regular file")
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
        raise _Refusal("file_unreadable", f"cannot read {quoted(relative)}: {error.strerror or error}") from None
    return b"".join(chunks)


def _read_declared(fd: int, size: int, byte_count: int, relative: str) -> bytes:
    """Exactly `byte_count` bytes, or byte_count_mismatch (reads at most byte_count + 1 bytes)."""
    if size != byte_count:
        raise _Refusal(
            "byte_count_mismatch", f"{quoted(relative)} has {size} bytes, the descriptor declares {byte_count}"
        )
    data = _read_at_most(fd, byte_count + 1, relative)
    try:
        size_after = os.fstat(fd).st_size
    except OSError as error:
        raise _Refusal("file_unreadable", f"cannot stat {quoted(relative)}: {error.strerror or error}") from None
    if len(data) != byte_count or size_after != byte_count:
        raise _Refusal(
            "byte_count_mismatch",
            f"{quoted(relative)} changed length while being read ({len(data)} bytes read, "
            f"{size_after} now, {byte_count} declared)",
        )
    return data


def _root_parts(fd: int, given_root: str) -> tuple[str, ...]:
    """The components of the opened directory's own path (from /proc when there is one)."""
    try:
        path = os.readlink(f"{PROC_FD}/{fd}")
    except OSError:
        path = os.path.realpath(given_root)
    return tuple(part for part in path.split("/") if part)


def _open_root(given: str) -> tuple[PacketRoot | None, Problem | None]:
    """The packet directory from a directory or its packet.json path (the caller's path is followed as given)."""
    shown = quoted(given)
    root = given
    try:
        try:
            fd = os.open(given, ROOT_FLAGS)
        except NotADirectoryError:
            if os.path.basename(given) != PACKET_JSON:
                raise
            root = os.path.dirname(given) or os.curdir
            fd = os.open(root, ROOT_FLAGS)
    except (FileNotFoundError, ValueError):
        return None, Problem("path_missing", None, f"no packet at {shown}")
    except NotADirectoryError:
        return None, Problem("path_not_regular", None, f"{shown} is neither a packet directory nor its {PACKET_JSON}")
    except OSError as error:
        return None, Problem("file_unreadable", None, f"cannot open {shown}: {error.strerror or error}")
    return PacketRoot(fd, _root_parts(fd, root)), None


def read_json_file(root: PacketRoot, relative: str, limit: int = JSON_SIZE_LIMIT) -> PacketFile:
    """The JSON file `relative` below `root`, walked and read as packet.json is (at most `limit` bytes, not parsed);
    `problem` carries the section 5 code."""
    try:
        fd, status = _open_inside(root, relative)
        try:
            if status.st_size > limit:
                raise _Refusal("json_too_large", f"{quoted(relative)} has {status.st_size} bytes, more than {limit}")
            data = _read_at_most(fd, limit + 1, relative)
            if len(data) > limit:
                raise _Refusal("json_too_large", f"{quoted(relative)} grew past {limit} bytes while being read")
        finally:
            os.close(fd)
    except _Refusal as refusal:
        return PacketFile(root, Problem(refusal.code, None, refusal.message), None, None, None)
    return PacketFile(root, None, data, hashlib.sha256(data).hexdigest(), (status.st_dev, status.st_ino))


@contextmanager
def open_directory(given: str) -> Iterator[tuple[PacketRoot | None, Problem | None]]:
    """Open the directory `given` (a packet or a replay run) as the root of later walks: (root, None) or (None,
    the problem); closed on exit."""
    root, problem = _open_root(given)
    if root is None:
        yield None, problem
        return
    try:
        yield root, None
    finally:
        os.close(root.fd)


@contextmanager
def open_packet(given: str) -> Iterator[PacketFile]:
    """Open the packet directory (`given` is it or its packet.json) and read packet.json; closed on exit."""
    with open_directory(given) as (root, problem):
        yield PacketFile(None, problem, None, None, None) if root is None else read_json_file(root, PACKET_JSON)


def _unread(code: str, field: str, message: str) -> FileOutcome:
    """The outcome of a refused file whose bytes are not kept: its one problem."""
    return FileOutcome((Problem(code, field, message),), None, None, False)


def _read_one(request: FileRequest, fd: int, status: os.stat_result) -> FileOutcome:
    if request.json_file and status.st_size > JSON_SIZE_LIMIT:
        message = f"{quoted(request.path)} has {status.st_size} bytes, more than {JSON_SIZE_LIMIT}"
        return _unread("json_too_large", f"{request.key}/file", message)
    if request.byte_count is None:
        return FileOutcome((), None, None, False)
    try:
        data = _read_declared(fd, status.st_size, request.byte_count, request.path)
    except _Refusal as refusal:
        field = f"{request.key}/{'byteCount' if refusal.code == 'byte_count_mismatch' else 'file'}"
        return _unread(refusal.code, field, refusal.message)
    digest = hashlib.sha256(data).hexdigest()
    if request.sha256 is not None and digest != request.sha256:
        message = f"{quoted(request.path)} hashes to {digest}, the descriptor declares {request.sha256}"
        return FileOutcome((Problem("sha256_mismatch", f"{request.key}/sha256", message),), data, digest, False)
    return FileOutcome((), data, digest, request.sha256 is not None)


def verify_files(
    root: PacketRoot, packet_identity: tuple[int, int], requests: Sequence[FileRequest]
) -> dict[str, FileOutcome]:
    """Open every requested file, refuse aliases (path_duplicate for the later one, not read), then read and hash
    the rest (READ_THREADS files at a time); keyed by request key, in request order."""
    outcomes: dict[str, FileOutcome] = {}
    opened: list[tuple[FileRequest, int, os.stat_result]] = []
    seen = {packet_identity: PACKET_JSON}
    try:
        for request in requests:
            try:
                fd, status = _open_inside(root, request.path)
            except _Refusal as refusal:
                outcomes[request.key] = _unread(refusal.code, f"{request.key}/file", refusal.message)
                continue
            opened.append((request, fd, status))
            identity = (status.st_dev, status.st_ino)
            if identity in seen:
                message = f"{quoted(request.path)} is the same file as {seen[identity]}"
                outcomes[request.key] = _unread("path_duplicate", f"{request.key}/file", message)
            else:
                seen[identity] = f"{request.key}/file ({quoted(request.path)})"
        to_read = [(request, fd, status) for request, fd, status in opened if request.key not in outcomes]
        for (request, _, _), outcome in zip(
            to_read, run_on_threads(lambda item: _read_one(*item), to_read, READ_THREADS), strict=True
        ):
            outcomes[request.key] = outcome
    finally:
        for _, fd, _ in opened:
            os.close(fd)
    return outcomes
