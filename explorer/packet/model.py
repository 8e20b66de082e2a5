"""Plain frozen records produced by packet admission; no I/O, no numerics, no UI.

The records holding arrays (NativeTensor, Admission) are `eq=False`: equality is identity, as in
explorer.analysis.result.
"""

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
    """One verified tensor: its native bit patterns and their exact FP32 promotion.

    `bits` is uint16 (float16, bfloat16) or uint32 (float32) holding the packet's
    bytes unchanged; `values` is float32. Both have `shape` and are read-only.
    """

    name: str
    dtype: str
    shape: tuple[int, int, int, int]
    byte_count: int
    sha256: str
    bits: np.ndarray

    @functools.cached_property
    def values(self) -> np.ndarray:
        """The exact float32 values of `bits`, made on first use (read-only): an app session that shows numbers
        the server already holds for the same verified content never needs them (24 MB for a Qwen-size packet's
        bfloat16 K/V, and a few tens of milliseconds of one core, per opening)."""
        from explorer.packet.dtypes import promote  # numpy loads only when numbers are needed

        values = promote(self.bits, self.dtype)
        values.flags.writeable = False
        return values


@record(eq=False)
class Admission(Record):
    """Everything admission established about one packet (docs/packet-format.md).

    `refusals` is sorted by (code, field). `reasons` holds the inconclusive reasons
    of the first two tables of section 6, in table order (empty when refused).
    `tensors` is present whenever all six files verified and the section 4
    geometry holds, whatever the status. `identity`, `selection`, `sample` and
    `geometry` are the report dicts of docs/report.md, The report's keys (None when unknown).
    `packet_json` / `snapshot` are the parsed JSON values as captured (None when not
    parsed or, for the snapshot, not interpreted); `packet_text` / `snapshot_text`
    are the decoded text as read, for the raw view.
    """

    path: str
    packet_sha256: str | None
    metadata_sha256: str | None
    refusals: tuple[Problem, ...]
    reasons: tuple[Reason, ...]
    packet_json: Any | None
    packet_text: str | None
    snapshot: Any | None
    snapshot_text: str | None
    identity: Mapping[str, Any] | None
    selection: Mapping[str, Any] | None
    sample: Mapping[str, Any] | None
    geometry: Mapping[str, int] | None
    tensors: Mapping[str, NativeTensor] | None
    scale: float | None
    kernel_output_dtype: str | None

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    @property
    def numerics_allowed(self) -> bool:
        """True when no refusal and no reason of the first two tables applies."""
        return not self.refusals and not self.reasons and self.tensors is not None
