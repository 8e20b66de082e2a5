"""The memory an analysis needs for a packet's geometry, and the room this process has; no packet I/O.

The bound (docs/report.md, "Memory"): beyond the interpreter with numpy and the explorer loaded,
`analyze` holds at most

    ADMISSION_PER_PAYLOAD_BYTE x payload                          (the files read, float32 promotions)
  + FACTS_PER_PAYLOAD_BYTE x payload                              (nonfinite maps, last rows)
  + WEIGHT_BYTES x QH x T                                         (the softmax weights the result keeps)
  + PASS_THREADS x PASS_ROW_BYTES x max(ROW_ELEMENTS, T)          (a batch of logit rows per thread, FP64)
  + OUTPUT_ELEMENT_BYTES x QH x D                                 (references and comparisons, [QH, D] arrays)
  + SCRATCH_BYTES                                                 (cast key chunks, token blocks)

bytes. The packet limits (payload <= 32 MiB, `2 QH T D <= 1e8`, QH <= 256, D <= 1,024) cap it at
CEILING_BYTES. Before computing, `analyze` checks the facts' and the numerics' parts against the room
the process's address-space limit (RLIMIT_AS) leaves and says `memory_bound_exceeded` instead of
allocating what cannot fit.
"""

from __future__ import annotations

import resource

from explorer.analysis.reference import PASS_THREADS, PRODUCT_ELEMENTS, ROW_ELEMENTS, TOKEN_BLOCK
from explorer.packet.model import TENSOR_NAMES, Admission

MIB = 1 << 20
ADMISSION_PER_PAYLOAD_BYTE = 3  # the bytes read, plus float32 promotions of 16-bit tensors (2 bytes -> 4)
FACTS_PER_PAYLOAD_BYTE = 5  # kinds (1 byte per element), a bool temporary, 8-byte per-(head, token) counts
WEIGHT_BYTES = 4  # float32 softmax weights [QH, T] held by the result
PASS_ROW_BYTES = 8  # one FP64 row batch of logits / weights
OUTPUT_ELEMENT_BYTES = 256  # about thirty float64 / int64 [QH, D] arrays: references, comparisons, ULP maps
# FP64 key chunks and value blocks of each thread, transient copies, and what the allocator keeps after freeing them
SCRATCH_BYTES = PASS_THREADS * 8 * (2 * PRODUCT_ELEMENTS + 1024 * TOKEN_BLOCK) + 64 * MIB
BASE_BYTES = 64 * MIB  # the interpreter with numpy and the explorer loaded (RSS), outside the bound
CEILING_BYTES = 768 * MIB  # no admitted packet's analysis needs more (662 MiB at most within the packet limits)
MEMORY_BOUND_EXCEEDED = "memory_bound_exceeded"
_PAGE_BYTES = resource.getpagesize()
_STATM = "/proc/self/statm"


def payload_bytes(admission: Admission) -> int:
    """The six tensors' bytes as read."""
    return sum(admission.tensors[name].byte_count for name in TENSOR_NAMES)


def numerics_bytes(query_heads: int, tokens: int, head_dim: int) -> int:
    """The most the references, comparisons and diagnostics allocate for this geometry (weights included)."""
    return (
        WEIGHT_BYTES * query_heads * tokens
        + PASS_THREADS * PASS_ROW_BYTES * max(ROW_ELEMENTS, tokens)
        + OUTPUT_ELEMENT_BYTES * query_heads * head_dim
        + SCRATCH_BYTES
    )


def bound_bytes(payload: int, query_heads: int, tokens: int, head_dim: int) -> int:
    """The documented bound on what `analyze` holds beyond the loaded interpreter (module docstring)."""
    per_payload_byte = ADMISSION_PER_PAYLOAD_BYTE + FACTS_PER_PAYLOAD_BYTE
    return per_payload_byte * payload + numerics_bytes(query_heads, tokens, head_dim)


def analysis_bound(admission: Admission) -> int:
    """`bound_bytes` of an admitted packet."""
    return ADMISSION_PER_PAYLOAD_BYTE * payload_bytes(admission) + facts_need(admission) + numerics_need(admission)


def facts_need(admission: Admission) -> int:
    """The most the tensor facts of an admitted packet allocate."""
    return FACTS_PER_PAYLOAD_BYTE * payload_bytes(admission)


def numerics_need(admission: Admission) -> int:
    """`numerics_bytes` of an admitted packet."""
    _, query_heads, _, head_dim = admission.tensors["queries"].shape
    return numerics_bytes(query_heads, admission.tensors["storedKeys"].shape[2], head_dim)


def address_space_room() -> int | None:
    """Bytes the address-space limit (RLIMIT_AS) still leaves this process, None when it sets no limit."""
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open(_STATM, encoding="ascii") as statm:
            used = int(statm.read().split()[0]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None
    return max(0, limit - used)


def shortfall(needed: int, what: str) -> str | None:
    """A one-line reason when `needed` bytes exceed the ceiling or the room the process has left, else None."""
    if needed > CEILING_BYTES:
        return f"the {what} need up to {needed / MIB:.0f} MiB, above the ceiling of {CEILING_BYTES / MIB:.0f} MiB"
    room = address_space_room()
    if room is None or needed <= room:
        return None
    return (
        f"the {what} need up to {needed / MIB:.0f} MiB and the process's address-space limit leaves "
        f"{room / MIB:.0f} MiB"
    )
