"""PacketIndex: the packets under a root, summaries filled in the background from one cache; no UI.

The summary cache is keyed by verified content (the analysis cache's key): filling re-admits every packet in
worker processes and analyzes only those whose key is not cached. A packet whose stat signature (of the
directory and everything in it, as git's index takes it) is unchanged since its last check is not re-read;
one changed within RACY_SECONDS or holding over SIGNATURE_MAX_ENTRIES entries is re-read every time. Opening
a packet always re-reads it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import multiprocessing
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

from explorer.analysis.analyze import ContentKey, analyze, content_key
from explorer.catalog.discovery import Entry, discover
from explorer.catalog.summary import PacketSummary, failed_summary, list_order, selection_groups, summary_of
from explorer.catalog.workers import default_jobs, map_isolated, work_here
from explorer.foundations.cache import BoundedCache
from explorer.foundations.executors import ForkSafeExecutor
from explorer.packet.admission import admit

log = logging.getLogger(__name__)

SUMMARY_CACHE_ENTRIES = 100_000  # a few hundred bytes each
KNOWN_KEY_ENTRIES = 100_000  # path -> last verified key, for routing only
SIGNED_ENTRIES = 100_000  # path -> (stat signature digest, summary) of its last check
SIGNATURE_DIGEST_BYTES = 16
SIGNATURE_MAX_ENTRIES = 64  # directory entries a signed packet may hold (a packet has 8 files)
SIGNATURE_MAX_DEPTH = 4  # subdirectory levels a signed packet may hold
RACY_SECONDS = 2.0  # a file changed this recently may change again within the same timestamp tick
INLINE_PACKETS = 16  # a root this small is checked in the filling thread, without worker processes
# Analyses the fill runs at once, whatever the core count: each holds up to analyze's memory bound, and the fills
# of all sessions run one after another on one thread.
FILL_JOBS = 2
WORKER_START_METHOD = "forkserver"  # never fork a threaded server; workers fork from a clean server process
WORKER_PRELOAD = ["__main__", "explorer.catalog.index"]

Signature = tuple[tuple[str, int, int, int, int, int, int], ...]
Check = tuple[ContentKey | None, PacketSummary | None, Signature | None]
OnSummary = Callable[[str, PacketSummary], None]  # told each new or changed summary, by name


SUMMARIES = BoundedCache(SUMMARY_CACHE_ENTRIES)  # shared by every session of the process
_known_keys = BoundedCache(KNOWN_KEY_ENTRIES)  # str(path) -> the last verified key
_signed = BoundedCache(SIGNED_ENTRIES)  # str(path) -> (stat signature digest, summary) of its last check
_filler = ForkSafeExecutor(max_workers=1, thread_name_prefix="packet-index")  # one fill at a time, in order


class _Unsigned(Exception):
    """The directory cannot be signed (too many entries, too deep, unreadable, or changed too recently)."""


def stat_signature(path: str) -> Signature | None:
    """The stat signature of the packet directory at `path` and everything under it (links not followed), or None."""
    signed: list = []
    newest = 0

    def add(name: str, result: os.stat_result) -> None:
        nonlocal newest
        signed.append(
            (name, result.st_dev, result.st_ino, result.st_mode, result.st_size, result.st_mtime_ns, result.st_ctime_ns)
        )
        newest = max(newest, result.st_mtime_ns, result.st_ctime_ns)
        if len(signed) > SIGNATURE_MAX_ENTRIES:
            raise _Unsigned

    def walk(directory: str, prefix: str, depth: int) -> None:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        for entry in entries:
            result = entry.stat(follow_symlinks=False)
            add(prefix + entry.name, result)
            if stat.S_ISDIR(result.st_mode):
                if depth >= SIGNATURE_MAX_DEPTH:
                    raise _Unsigned
                walk(entry.path, f"{prefix}{entry.name}/", depth + 1)

    try:
        top = os.lstat(path)
        if not stat.S_ISDIR(top.st_mode):
            return None
        add("", top)
        walk(path, "", 1)
    except (OSError, _Unsigned):
        return None
    if newest > time.time_ns() - RACY_SECONDS * 1e9:
        return None
    return tuple(signed)


def checked_summary(task: tuple[str, ContentKey | None]) -> Check:
    """Re-admit the packet (in a worker): (key, None, signature) when its key is `known`, else (key, a fresh
    summary, signature); the signature is taken before anything is read."""
    path, known = task
    signature = stat_signature(path)
    if known is not None:
        key = content_key(admit(path))
        if key == known:
            return key, None, signature
    analysis = analyze(path)
    return content_key(analysis.admission), summary_of(analysis), signature


def _checks(tasks: list[tuple[str, ContentKey | None]]) -> Iterator[tuple[int, Check | Exception]]:
    """Check every task: a small root in this thread, a larger one in at most FILL_JOBS worker processes."""
    if len(tasks) <= INLINE_PACKETS:
        for index, task in enumerate(tasks):
            yield index, work_here(checked_summary, task)
        return
    multiprocessing.get_context(WORKER_START_METHOD).set_forkserver_preload(WORKER_PRELOAD)
    yield from map_isolated(
        checked_summary,
        tasks,
        jobs=min(default_jobs(), FILL_JOBS),
        context=WORKER_START_METHOD,
        on_note=lambda note: log.warning("packet index: %s", note),
    )


def _resolved(path: str, check: Check | Exception) -> PacketSummary:
    """The summary a check stands for, the process-wide caches updated."""
    if isinstance(check, Exception):
        return failed_summary(path, check)
    key, fresh, signature = check
    cached = SUMMARIES.get(key) if fresh is None else None
    if fresh is None and cached is None:  # evicted meanwhile: summarize here
        key, fresh, signature = checked_summary((path, None))
    if key is not None:
        _known_keys.put(path, key)
        if fresh is not None:
            SUMMARIES.put(key, fresh)
    summary = fresh if fresh is not None else dataclasses.replace(cached, path=path)
    if signature is not None:
        _signed.put(path, (_digest(signature), summary))
    return summary


def _digest(signature: Signature) -> bytes:
    """16 bytes standing for a signature in the cache."""
    return hashlib.blake2b(repr(signature).encode(), digest_size=SIGNATURE_DIGEST_BYTES).digest()


def _unchanged(path: str) -> PacketSummary | None:
    """The summary of the last check of `path` when its stat signature has not changed since (a write through a
    shared memory map can leave it unchanged: the list says how many statuses come from here), else None."""
    signed = _signed.get(path)
    if signed is None:
        return None
    signature = stat_signature(path)
    return signed[1] if signature is not None and _digest(signature) == signed[0] else None


class PacketIndex:
    """The packets under one root as last discovered, and their summaries as they arrive (thread-safe reads)."""

    def __init__(self, root: Path):
        self.root = root
        self.entries: tuple[Entry, ...] = discover(root)
        self._summaries: dict[str, PacketSummary] = {}
        self._signed: set[str] = set()  # names whose summary last came from the stat-signature fast path
        self._lock = threading.Lock()
        self._running: Future | None = None

    def summary(self, name: str) -> PacketSummary | None:
        with self._lock:
            return self._summaries.get(name)

    def signed_count(self) -> int:
        """How many listed statuses come from the stat-signature fast path (their files not re-read)."""
        with self._lock:
            return len(self._signed)

    @property
    def complete(self) -> bool:
        with self._lock:
            return all(entry.name in self._summaries for entry in self.entries)

    def ordered_names(self) -> list[str]:
        """Every name in the one list order (catalog.summary.list_order: analyzed first, by score); unknown last."""
        with self._lock:
            return sorted(
                (entry.name for entry in self.entries), key=lambda name: list_order(name, self._summaries.get(name))
            )

    def partners(self, name: str) -> tuple[str, ...]:
        """Other packets under the root with the same known partner selection key (docs/pairs.md, Partners) as `name`,
        by name."""
        with self._lock:
            groups = selection_groups(self._summaries.items())
        return next((tuple(other for other in group if other != name) for group in groups if name in group), ())

    def fill(
        self, on_summary: OnSummary = lambda name, summary: None, cancelled: Callable[[], bool] = lambda: False
    ) -> None:
        """Check every entry (blocking) and record its summary, calling `on_summary` for each new or changed one;
        stops when `cancelled()`."""
        unchecked = []
        for entry in self.entries:
            if cancelled():
                return
            summary = _unchanged(str(entry.path))
            if summary is None:
                unchecked.append(entry)
            else:
                self._record(entry.name, summary, True, on_summary)
        checks = _checks([(str(entry.path), _cached_key(str(entry.path))) for entry in unchecked])
        try:
            for position, check in checks:
                if cancelled():
                    return
                entry = unchecked[position]
                self._record(entry.name, _resolved(str(entry.path), check), False, on_summary)
        finally:
            checks.close()

    def rescan(
        self, on_summary: OnSummary = lambda name, summary: None, cancelled: Callable[[], bool] = lambda: False
    ) -> bool:
        """Discover the root again, forget the packets gone and fill; True when the listed names changed."""
        entries = discover(self.root)
        with self._lock:
            changed = entries != self.entries
            self.entries = entries
            names = {entry.name for entry in entries}
            self._summaries = {name: summary for name, summary in self._summaries.items() if name in names}
            self._signed &= names
        self.fill(on_summary, cancelled)
        return changed

    def _record(self, name: str, summary: PacketSummary, signed: bool, on_summary: OnSummary) -> None:
        with self._lock:
            same = self._summaries.get(name) == summary
            self._summaries[name] = summary
            (self._signed.add if signed else self._signed.discard)(name)
        if not same:
            on_summary(name, summary)

    def fill_in_background(self, on_summary: OnSummary, cancelled: Callable[[], bool]) -> Future:
        """`fill` on the process-wide filling thread (fills of several sessions run one after another)."""
        return self._in_background(self.fill, on_summary, cancelled)

    def rescan_in_background(
        self, on_summary: OnSummary, on_rescanned: Callable[[bool], None], cancelled: Callable[[], bool]
    ) -> Future | None:
        """`rescan` on the filling thread, then `on_rescanned(names changed)`; None (nothing started) while this
        index's previous fill or rescan still runs."""
        if self._running is not None and not self._running.done():
            return None
        return self._in_background(lambda *args: on_rescanned(self.rescan(*args)), on_summary, cancelled)

    def _in_background(self, task: Callable, *args) -> Future:
        self._running = _filler.submit(task, *args)
        self._running.add_done_callback(_log_failure)
        return self._running


def _log_failure(future: Future) -> None:
    if future.exception() is not None:
        log.error("packet index: the fill stopped", exc_info=future.exception())


def _cached_key(path: str) -> ContentKey | None:
    """The last verified key of `path` when its summary is still cached (so a match costs no analysis)."""
    key = _known_keys.get(path)
    return key if key is not None and SUMMARIES.get(key) is not None else None
