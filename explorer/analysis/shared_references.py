"""The references of one input set, computed once for every packet that holds those inputs; no I/O.

Two captures of one selection usually differ only in their output. The references are functions of the inputs,
the scale and the eligible heads alone, so they are keyed by each input's verified SHA-256, dtype and shape, the
scale's bits and the eligible mask, and the second packet reuses the first one's read-only arrays.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np

from explorer.analysis.metrics import readonly
from explorer.analysis.reference import AttentionPass, attend, attend_two
from explorer.foundations.cache import BoundedCache
from explorer.foundations.record import Record, record
from explorer.foundations.single_flight import SingleFlight
from explorer.packet.dtypes import narrow
from explorer.packet.model import NativeTensor

REFERENCE_CACHE_ENTRIES = 4  # input sets kept: a pair or a replay needs one, an app session a few
REFERENCE_CACHE_BYTES = 256 * 1024 * 1024  # summed array bytes kept (the weights are QH x T float32)
INPUT_TENSORS = ("queries", "storedKeys", "storedValues")  # what the references read


@record
class References(Record):
    """The primary FP32 pass (weights kept), the FP64 reference, the narrowed queries and their reference."""

    primary: AttentionPass
    exact: np.ndarray
    narrowed_queries: np.ndarray | None
    narrowed_reference: np.ndarray | None

    def nbytes(self) -> int:
        primary = self.primary
        arrays = (primary.reference, primary.weights, self.exact, self.narrowed_queries, self.narrowed_reference)
        return sum(array.nbytes for array in arrays if array is not None)


_cache: BoundedCache[References] = BoundedCache(
    REFERENCE_CACHE_ENTRIES, max_bytes=REFERENCE_CACHE_BYTES, size=References.nbytes
)
_flights: SingleFlight[References] = SingleFlight()


def _key(tensors: Mapping[str, NativeTensor], scale: float, eligible: np.ndarray, narrow_dtype: str | None) -> Hashable:
    inputs = tuple((tensors[name].sha256, tensors[name].dtype, tuple(tensors[name].shape)) for name in INPUT_TENSORS)
    return inputs, np.float32(scale).tobytes(), eligible.tobytes(), narrow_dtype


def _computed(
    tensors: Mapping[str, NativeTensor], scale: float, eligible: np.ndarray, narrow_dtype: str | None
) -> References:
    queries = tensors["queries"].values[0, :, 0, :]
    keys, values = tensors["storedKeys"].values[0], tensors["storedValues"].values[0]
    narrowed_queries = narrowed_reference = None
    if narrow_dtype is None:
        primary = attend(queries, keys, values, scale, eligible, np.float32, keep_weights=True)
    else:
        narrowed_queries = readonly(narrow(queries, narrow_dtype))
        primary, narrowed_reference = attend_two(queries, narrowed_queries, keys, values, scale, eligible, np.float32)
        readonly(narrowed_reference)
    readonly(primary.reference)
    readonly(primary.weights)
    exact = readonly(attend(queries, keys, values, scale, eligible, np.float64).reference)
    return References(primary, exact, narrowed_queries, narrowed_reference)


def references(
    tensors: Mapping[str, NativeTensor], scale: float, eligible: np.ndarray, narrow_dtype: str | None
) -> References:
    """The references of these verified inputs, from the cache when a packet with the same inputs had them."""
    key = _key(tensors, scale, eligible, narrow_dtype)

    def computed() -> References:
        held = _cache.get(key)
        if held is not None:
            return held
        found = _computed(tensors, scale, eligible, narrow_dtype)
        _cache.put(key, found)
        return found

    return _flights.run(key, computed)


def clear_references() -> None:
    """Forget every kept reference."""
    _cache.clear()
