"""Plain frozen records produced by packet admission; no I/O, no numerics, no UI."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from explorer.foundations.record import Record, record

if TYPE_CHECKING:  # only in annotations: reading a packet's files needs no numpy (explorer/packet/formats.py)
    import numpy as np

TENSOR_NAMES = ("queries", "storedKeys", "storedValues", "incomingKeys", "incomingValues", "output")

REFUSED = "refused"
INCONCLUSIVE = "inconclusive"
ANALYZED = "analyzed"


@record
class Problem(Record):
    """One refusal: a stable code, the JSON pointer at fault (or None) and free text."""

    code: str
    field: str | None
    message: str


@record
class Reason(Record):
    """One inconclusive reason: a stable code and free text."""

    code: str
    message: str


@record(eq=False)
class NativeTensor(Record):
    """One verified tensor: its native bit patterns (uint16 or uint32, the packet's bytes) and their exact float32
    values, both read-only."""

    name: str
    dtype: str
    shape: tuple[int, int, int, int]
    byte_count: int
    sha256: str
    bits: np.ndarray

    @functools.cached_property
    def values(self) -> np.ndarray:
        """The exact float32 values of `bits`, made on first use (24 MB for a Qwen-size packet's K/V)."""
        from explorer.packet.dtypes import promote  # numpy loads only when numbers are needed

        values = promote(self.bits, self.dtype)
        values.flags.writeable = False
        return values


@record(eq=False)
class Admission(Record):
    """Everything admission established about one packet (docs/packet-format.md), None where unknown.

    `refusals` is sorted by (code, field); `reasons` are section 6's first two tables, in order. `identity`,
    `selection`, `sample` and `geometry` are the report dicts (docs/report.md), filled for a refused packet too
    when established (its report shows none); `tensors` whenever all six files verified and the geometry holds.
    """

    path: str
    packet_sha256: str | None
    metadata_sha256: str | None
    refusals: tuple[Problem, ...]
    reasons: tuple[Reason, ...]
    packet_json: Any | None = None
    packet_text: str | None = None
    snapshot: Any | None = None
    snapshot_text: str | None = None
    identity: Mapping[str, Any] | None = None
    selection: Mapping[str, Any] | None = None
    sample: Mapping[str, Any] | None = None
    geometry: Mapping[str, int] | None = None
    tensors: Mapping[str, NativeTensor] | None = None
    scale: float | None = None
    kernel_output_dtype: str | None = None

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    @property
    def numerics_allowed(self) -> bool:
        """True when no refusal and no reason of the first two tables applies."""
        return not self.refusals and not self.reasons and self.tensors is not None
