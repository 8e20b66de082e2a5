"""analyze(path): admission, tensor facts, numerics and the final status, cached by verified content hashes; no UI.

Admission (reading and hashing every file) runs on every call. The tensor facts,
numerics and after-numerics reasons are reused when the content key matches: the
SHA-256 of packet.json and the verified SHA-256 of the metadata file and of every
tensor file. Paths, sizes and modification times never enter the key.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from time import perf_counter
from typing import Iterable, MutableMapping, Sequence

from explorer.analysis.emulation import EmulatedOutput, emulations_for, expand, normalised_ids
from explorer.analysis.facts import tensor_facts
from explorer.analysis.numerics import after_numerics_reasons, compute_numerics
from explorer.analysis.result import Analysis, Emulation, Numerics, TensorFacts
from explorer.packet.admission import admit
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED, TENSOR_NAMES, Admission, Reason

CACHE_ENTRIES = 8

ContentKey = tuple[str, str | None, tuple[str, ...], bool]


@dataclass(frozen=True)
class _Computed:
    facts: TensorFacts
    numerics: Numerics | None
    reasons: tuple[Reason, ...]


_cache: OrderedDict[ContentKey, _Computed] = OrderedDict()
_cache_lock = threading.Lock()
# Emulations, keyed by the content key plus the normalised ids requested; they reuse the cached numerics.
EMULATION_CACHE_ENTRIES = 8
_emulation_cache: OrderedDict[tuple[ContentKey, tuple[str, ...]], tuple[Emulation, ...]] = OrderedDict()


def content_key(admission: Admission) -> ContentKey | None:
    """The cache key of a packet whose facts can be computed (not refused, tensors verified), else None."""
    if admission.refused or admission.tensors is None or admission.packet_sha256 is None:
        return None
    tensor_hashes = tuple(admission.tensors[name].sha256 for name in TENSOR_NAMES)
    return (admission.packet_sha256, admission.metadata_sha256, tensor_hashes, admission.numerics_allowed)


def clear_cache() -> None:
    """Forget every cached analysis."""
    with _cache_lock:
        _cache.clear()
        _emulation_cache.clear()


def _compute(admission: Admission, timings: MutableMapping[str, float] | None) -> _Computed:
    started = perf_counter()
    facts = tensor_facts(admission.tensors)
    if timings is not None:
        timings["facts"] = perf_counter() - started
    if not admission.numerics_allowed:
        return _Computed(facts, None, ())
    numerics = compute_numerics(admission, facts, timings)
    return _Computed(facts, numerics, after_numerics_reasons(facts, numerics))


def _status(admission: Admission, reasons: tuple[Reason, ...], numerics: Numerics | None) -> str:
    if admission.refused:
        return REFUSED
    if reasons:
        return INCONCLUSIVE
    if numerics is None:
        raise RuntimeError("admission allowed no numerics but gave no refusal or reason")
    return ANALYZED


def _emulations(key: ContentKey, admission: Admission, numerics: Numerics, ids: tuple[str, ...],
                timings: MutableMapping[str, float] | None,
                emulated: Sequence[EmulatedOutput] | None = None) -> tuple[Emulation, ...]:
    """The scored emulations `ids` of an analysed packet, computed once per content key and ids.

    `emulated`: the emulated outputs of `ids` already run on identical inputs (a pair's other
    side), scored here instead of run again.
    """
    with _cache_lock:
        found = _emulation_cache.get((key, ids))
        if found is not None:
            _emulation_cache.move_to_end((key, ids))
            return found
    started = perf_counter()
    found = emulations_for(admission.tensors, admission.scale, numerics.eligible, numerics.primary.reference, ids,
                           emulated)
    if timings is not None:
        timings["emulations"] = perf_counter() - started
    with _cache_lock:
        _emulation_cache[(key, ids)] = found
        while len(_emulation_cache) > EMULATION_CACHE_ENTRIES:
            _emulation_cache.popitem(last=False)
    return found


def emulations_of(analysis: Analysis, request: str | Iterable[str],
                  emulated: Sequence[EmulatedOutput] | None = None) -> tuple[Emulation, ...] | None:
    """The scored emulations of `request` on an existing analysis (None without numerics), cached as analyze's.

    `emulated` as for `_emulations`: outputs of the same ids on identical inputs, scored, not run.
    """
    key = content_key(analysis.admission)
    if analysis.numerics is None or key is None:
        return None
    ids = normalised_ids(request, analysis.admission.tensors["output"].dtype)
    return _emulations(key, analysis.admission, analysis.numerics, ids, None, emulated)


def analyze(path: str | os.PathLike, *, timings: MutableMapping[str, float] | None = None,
            emulate: str | Iterable[str] | None = None) -> Analysis:
    """The analysis of the packet at `path` (a directory or its packet.json); never raises for packet content.

    When `timings` is given it receives seconds per stage: "admission", and on a
    cache miss "facts", "reference" and "comparisons" (and "emulations" when they
    are computed); "cached" is 1.0 on a hit, 0.0 otherwise. `emulate` is None, "default"
    or emulation ids (emulation-v1); an unknown kernel, parameter or value raises
    EmulationIdError before anything is read. Emulations exist only when numerics do.
    """
    if emulate is not None:
        expand(emulate)  # an unknown kernel, parameter or value fails before anything is read
    started = perf_counter()
    admission = admit(path)
    if timings is not None:
        timings["admission"] = perf_counter() - started
    key = content_key(admission)
    computed = None
    if key is not None:
        with _cache_lock:
            computed = _cache.get(key)
            if computed is not None:
                _cache.move_to_end(key)
        if timings is not None:
            timings["cached"] = float(computed is not None)
        if computed is None:
            computed = _compute(admission, timings)
            with _cache_lock:
                _cache[key] = computed
                while len(_cache) > CACHE_ENTRIES:
                    _cache.popitem(last=False)
    facts = None if computed is None else computed.facts
    numerics = None if computed is None else computed.numerics
    reasons = admission.reasons + (() if computed is None else computed.reasons)
    ids = emulations = None
    if emulate is not None:
        ids = normalised_ids(emulate, None if admission.tensors is None else admission.tensors["output"].dtype)
        if numerics is not None:
            emulations = _emulations(key, admission, numerics, ids, timings)
    return Analysis(
        admission=admission,
        status=_status(admission, reasons, numerics),
        reasons=reasons,
        facts=facts,
        numerics=numerics,
        emulations=emulations,
        emulations_requested=ids,
    )
