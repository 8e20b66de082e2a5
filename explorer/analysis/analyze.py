"""analyze(path): admission, tensor facts, numerics and the final status, cached by content; no UI.

Admission (reading and hashing every file) runs on every call. The facts, numerics and after-numerics reasons
are reused when the content key matches: the SHA-256 of packet.json and the verified SHA-256 of the metadata
and of every tensor file (never paths, sizes or times). The cache is process-wide, bounded in entries and in
array bytes, and one content is computed once however many threads ask for it at the same time.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from explorer.analysis.facts import tensor_facts
from explorer.analysis.memory import MEMORY_BOUND_EXCEEDED, MIB, facts_need, numerics_need, shortfall
from explorer.analysis.numerics import after_numerics_reasons, compute_numerics
from explorer.analysis.result import Analysis, Emulation, EmulationCounts, Numerics, TensorFacts
from explorer.analysis.shared_references import clear_references
from explorer.foundations.cache import BoundedCache
from explorer.foundations.record import Record, record
from explorer.foundations.single_flight import SingleFlight
from explorer.packet.admission import admit
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED, TENSOR_NAMES, Admission, Reason

if TYPE_CHECKING:
    from explorer.analysis.emulation import EmulatedOutput

CACHE_ENTRIES = 8
LOGGER_NAME = __name__  # INFO lines reach the served app's log (explorer/ui/timings.py)
SHA_LOG_DIGITS = 12
CACHE_BYTES = 256 * 1024 * 1024  # summed nbytes of the arrays of every cached entry

ContentKey = tuple[str, str | None, tuple[str, ...], bool]
T = TypeVar("T")


def array_bytes(value: Any) -> int:
    """Summed nbytes of every numpy array reachable through dataclass fields, mappings, tuples and lists."""
    if value is None or isinstance(value, (str, int, float, np.generic)):  # most of the walk: settled first
        return 0
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(array_bytes(item) for item in value)
    if dataclasses.is_dataclass(value):
        return sum(array_bytes(getattr(value, field.name)) for field in dataclasses.fields(value))
    if isinstance(value, Mapping):
        return sum(array_bytes(item) for item in value.values())
    return 0


@record
class _Computed(Record):
    facts: TensorFacts | None
    numerics: Numerics | None
    reasons: tuple[Reason, ...]
    complete: bool = True  # False when memory was short: such an entry is never cached


_cache: BoundedCache[_Computed] = BoundedCache(CACHE_ENTRIES, max_bytes=CACHE_BYTES, size=array_bytes)
# Emulations (scored, with their counts), keyed by the content key plus the normalised ids requested;
# they reuse the cached numerics.
EMULATION_CACHE_ENTRIES = 8
Scored = tuple[tuple[Emulation, ...], EmulationCounts]
_emulation_cache: BoundedCache[Scored] = BoundedCache(EMULATION_CACHE_ENTRIES)
# One computation per key at a time, whichever threads (app sessions) ask for it meanwhile.
_analyses: SingleFlight[_Computed] = SingleFlight()
_emulation_runs: SingleFlight[Scored] = SingleFlight()


def content_key(admission: Admission) -> ContentKey | None:
    """The cache key of a packet whose facts can be computed (not refused, tensors verified), else None."""
    if admission.refused or admission.tensors is None or admission.packet_sha256 is None:
        return None
    tensor_hashes = tuple(admission.tensors[name].sha256 for name in TENSOR_NAMES)
    return (admission.packet_sha256, admission.metadata_sha256, tensor_hashes, admission.numerics_allowed)


def clear_cache() -> None:
    """Forget every cached analysis (and the references shared between packets with the same inputs)."""
    _cache.clear()
    _emulation_cache.clear()
    clear_references()


def _within_memory(compute: Callable[[], T], needed: int, what: str) -> tuple[T | None, Reason | None]:
    """(compute(), None), or (None, a memory_bound_exceeded reason) when `needed` bytes cannot fit or run out."""
    message = shortfall(needed, what)
    if message is None:
        try:
            return compute(), None
        except MemoryError:
            message = f"the {what} ran out of memory (estimated at up to {needed / MIB:.0f} MiB)"
    return None, Reason(MEMORY_BOUND_EXCEEDED, f"{message}; they were not computed")


def _compute(admission: Admission, timings: MutableMapping[str, float] | None) -> _Computed:
    """Facts, numerics and reasons; a part that cannot fit in memory is left out with its reason (and not cached)."""
    started = perf_counter()
    facts, shortage = _within_memory(lambda: tensor_facts(admission.tensors), facts_need(admission), "tensor facts")
    if timings is not None:
        timings["facts"] = perf_counter() - started
    if facts is None:
        return _Computed(None, None, (shortage,), complete=False)
    if not admission.numerics_allowed:
        return _Computed(facts, None, ())
    numerics, shortage = _within_memory(
        lambda: compute_numerics(admission, facts, timings), numerics_need(admission), "references and comparisons"
    )
    if numerics is None:
        return _Computed(facts, None, (shortage,), complete=False)
    return _Computed(facts, numerics, after_numerics_reasons(facts, numerics))


def _cached_or_computed(
    key: ContentKey, admission: Admission, timings: MutableMapping[str, float] | None
) -> tuple[_Computed, bool]:
    """(entry, whether it was cached); a key another thread is computing is waited for, not computed twice."""
    held = _cache.get(key)
    if held is not None:
        return held, True
    computed_here = []

    def computed() -> _Computed:
        held = _cache.get(key)  # finished by another thread between the look above and this flight
        if held is not None:
            return held
        entry = _compute(admission, timings)
        computed_here.append(entry)
        if entry.complete:
            _cache.put(key, entry)
        return entry

    entry = _analyses.run(key, computed)
    return entry, not computed_here


def _status(admission: Admission, reasons: tuple[Reason, ...], numerics: Numerics | None) -> str:
    if admission.refused:
        return REFUSED
    if reasons:
        return INCONCLUSIVE
    if numerics is None:
        raise RuntimeError("admission allowed no numerics but gave no refusal or reason")
    return ANALYZED


def _emulations(
    key: ContentKey,
    admission: Admission,
    numerics: Numerics,
    ids: tuple[str, ...],
    timings: MutableMapping[str, float] | None,
    emulated: Sequence[EmulatedOutput] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Scored:
    """The scored emulations `ids` of an analysed packet and their counts, computed once per content key and ids;
    `emulated`: outputs of `ids` already run on identical inputs (a pair's other side), scored, not run again."""

    def computed() -> Scored:
        from explorer.analysis.emulation import emulations_for  # the emulation machinery loads when first asked for

        found = _emulation_cache.get((key, ids))
        if found is not None:
            return found
        started = perf_counter()
        found = emulations_for(
            admission.tensors,
            admission.scale,
            numerics.eligible,
            numerics.primary.reference,
            numerics.rounded_to_output.rounded_bits,
            ids,
            emulated,
            progress,
        )
        seconds = perf_counter() - started
        if timings is not None:
            timings["emulations"] = seconds
        import logging  # imported here: a command that computes no emulation never loads it

        logging.getLogger(LOGGER_NAME).info(
            "emulations %s of packet %s computed in %.3f s", ",".join(ids), key[0][:SHA_LOG_DIGITS], seconds
        )
        _emulation_cache.put((key, ids), found)
        return found

    return _emulation_runs.run((key, ids), computed)


def _emulation_key(analysis: Analysis, request: str | Iterable[str]) -> tuple[ContentKey, tuple[str, ...]] | None:
    """The emulation cache's key of `request` on an analysis, None without numerics or verified content."""
    from explorer.analysis.emulation import normalised_ids, shape_of

    key = content_key(analysis.admission)
    if analysis.numerics is None or key is None:
        return None
    return key, normalised_ids(request, shape_of(analysis.admission.tensors))


def emulations_of(
    analysis: Analysis,
    request: str | Iterable[str],
    emulated: Sequence[EmulatedOutput] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Scored | None:
    """`_emulations` of `request` on an existing analysis (None without numerics), cached as analyze's."""
    found = _emulation_key(analysis, request)
    if found is None:
        return None
    key, ids = found
    return _emulations(key, analysis.admission, analysis.numerics, ids, None, emulated, progress)


def cached_emulations(analysis: Analysis, request: str | Iterable[str]) -> Scored | None:
    """The scored emulations of `request` when this content already has them, else None; computes nothing."""
    found = _emulation_key(analysis, request)
    if found is None:
        return None
    return _emulation_cache.peek(found)


def analyze(
    path: str | os.PathLike,
    *,
    timings: MutableMapping[str, float] | None = None,
    emulate: str | Iterable[str] | None = None,
    admission: Admission | None = None,
) -> Analysis:
    """The analysis of the packet at `path` (a directory or its packet.json); never raises for packet content.

    `timings` receives seconds per stage ("admission"; on a miss "facts", "reference", "comparisons",
    "emulations") and "cached" (1.0 on a hit). `emulate`: None, a named set or emulation ids (docs/emulations.md,
    Ids); an unknown one raises EmulationIdError before anything is read. `admission`: one this process made
    earlier of `path` (explorer/launch.py reads the packet ahead).
    """
    if emulate is not None:
        # the emulation machinery (about a tenth of the analysis modules' import time) loads only when asked for
        from explorer.analysis.emulation import expand, normalised_ids, shape_of

        expand(emulate)  # an unknown kernel, parameter or value fails before anything is read
    started = perf_counter()
    if admission is None:
        admission = admit(path)
    if timings is not None:
        timings["admission"] = perf_counter() - started
    key = content_key(admission)
    computed = None
    if key is not None:
        computed, hit = _cached_or_computed(key, admission, timings)
        if timings is not None:
            timings["cached"] = float(hit)
    facts = None if computed is None else computed.facts
    numerics = None if computed is None else computed.numerics
    reasons = admission.reasons + (() if computed is None else computed.reasons)
    ids = emulations = counts = None
    if emulate is not None:
        ids = normalised_ids(emulate, shape_of(admission.tensors))
        if numerics is not None:
            emulations, counts = _emulations(key, admission, numerics, ids, timings)
    return Analysis(admission, _status(admission, reasons, numerics), reasons, facts, numerics, emulations, ids, counts)
