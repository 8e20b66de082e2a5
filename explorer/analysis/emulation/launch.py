"""What the real kernels launch for a packet's geometry, and each emulation's memory estimate.

MLX's kernel and blocks per build, the paged kernel's simdgroups per dispatcher (sources: docs/emulations.md).
"""

from __future__ import annotations

import math

from explorer.analysis.emulation.builds import BUILD_TABLE, DEFAULT_BUILD
from explorer.foundations.record import Record, record

MLX_VECTOR_HEAD_DIMS = (64, 96, 128, 256)  # MLX's vector kernels; D 192 is routed to unfused attention for one token
MLX_D512_TWO_PASS_HEAD_DIM = 512  # a build with D 512 two-pass kernels runs them at every T
MLX_GQA_HEADS_PER_SIMDGROUP = {64: 8, 128: 4}  # the `_gqa` two-pass variant: head dim -> HPT
MLX_GQA_FACTOR = 8
MLX_GQA_MIN_TOKENS = 8192
MLX_BLOCKS_MULTIPLE = 32  # a build that rounds MLX_SDPA_BLOCKS rounds it up to a multiple of this
MLX_MAX_GQA_FACTOR = 32  # beyond it MLX runs unfused attention
MLX_LARGE_DEVICES = ("s", "d")  # last letter of the GPU architecture name: the large GPUs
MLX_LARGE_TWO_PASS_TOKENS = 1024  # large GPUs run the two-pass kernel from this many tokens
MLX_GQA_TWO_PASS_TOKENS = 4096  # any GPU runs it from this many tokens when KVH < QH
PAGED_THREADGROUP_BYTES = 32768  # the paged dispatcher's threadgroup-memory budget
PAGED_HEADS_PER_THREADGROUP_WIDTH = 1024  # hpt <= max(1, this / D)
PAGED_SIMDGROUP_CHOICES = (8, 4, 2, 1)
PAGED_HEAD_DIMS = (64, 128, 256, 512)  # the paged kernel's instantiations; the engine refuses other head dims
FLOAT32_BYTES = 4
# An emulation's working memory: the scores [QH, T] plus this many copies of its block states [B, QH, D + 1].
STATE_COPIES = 5
EMULATION_MEMORY_BYTES = 512 * 1024 * 1024  # an emulation whose estimate exceeds this is refused, not run
REQUEST_SCORE_COPIES = 2  # [QH, T] float32 scores a request holds at once (measured at most 1.5)
REQUEST_SCRATCH_BYTES = 64 * 1024 * 1024  # chunk temporaries (a float64 fused dot of 2**18 scores), outputs, counts

PAGED_SHAPE, PAGED_HEAD_DIM = "paged_shape_refused", "paged_head_dim_refused"
PAGED_OUTPUT_DTYPE, MEMORY_BOUND = "paged_output_dtype", "memory_bound"
NO_LIBRARY, LIBRARY_FAILED = "library_not_installed", "library_failed"
# mlx_run's working memory, in its own process: the interpreter with MLX loaded, MLX's unfused composition (the
# scores, the softmax) and the copies of K and V on their way to MLX.
LIBRARY_SCORE_COPIES = 3  # [QH, T] scores, their softmax, and a temporary of the softmax (measured 1)
LIBRARY_KV_COPIES = 12  # of K or V: pickled here, received, unpickled, MLX's array and its cast (measured 8.4 in it)
LIBRARY_PROCESS_BYTES = 64 * 1024 * 1024  # the child interpreter with numpy and MLX loaded (measured 38 MiB)
UNFUSED_CHUNK_ELEMENTS = 1 << 18  # mlx_unfused scores made at once: whole query rows, at least one (memory only)
UNFUSED_ROW_COPIES = 40  # float32 arrays of one chunk's scores mlx_unfused holds at once (measured 31, bfloat16)


@record
class Geometry(Record):
    """QH, KVH, D and T of a packet (what every launch rule reads)."""

    query_heads: int
    kv_heads: int
    head_dim: int
    tokens: int

    @property
    def group(self) -> int:
        return self.query_heads // self.kv_heads


@record
class NotEmulated(Record):
    """Why an entry has no numbers: a code and a sentence."""

    code: str
    message: str


def mlx_blocks(device: str, geometry: Geometry) -> int:
    """The two-pass block count MLX chooses on `device` (docs/emulations.md, The kernels)."""
    tokens, n = geometry.tokens, geometry.group
    if device == "s":
        if tokens > 1024 and n > 4:
            return 128 if tokens <= 8192 else 256 if tokens <= 32768 else 512 if tokens <= 65536 else 1024
        return 64
    if device == "d":
        if n >= 6 and 16384 <= tokens < 65536:
            return 512
        if n >= 6 and tokens >= 65536:
            return 1024
        return 256 if n <= 2 and tokens > 8192 else 128
    return 64 if n >= 4 else 32


@record
class Launch(Record):
    """What MLX launches for one query token: the kernel, its blocks, the unfused device, the `_gqa` variant's HPT."""

    kernel: str
    blocks: int | None = None
    device: str | None = None
    gqa_heads_per_simdgroup: int | None = None


def mlx_blocks_read(build: str, blocks: int) -> int:
    """MLX_SDPA_BLOCKS as `build` reads it: rounded up to a multiple of 32 (since the v0.32.2 sync), or as given."""
    if BUILD_TABLE[build].rounds_blocks:
        return -(-blocks // MLX_BLOCKS_MULTIPLE) * MLX_BLOCKS_MULTIPLE
    return blocks


def mlx_launch(device: str, geometry: Geometry, build: str = DEFAULT_BUILD, blocks: int | None = None) -> Launch:
    """What `build` launches for one unmasked query token on `device`; `blocks`: MLX_SDPA_BLOCKS when set."""
    g = geometry
    if device == "cpu":
        return Launch("mlx_unfused", device="cpu")
    d512 = BUILD_TABLE[build].two_pass_d512 and g.head_dim == MLX_D512_TWO_PASS_HEAD_DIM
    if (g.head_dim not in MLX_VECTOR_HEAD_DIMS and not d512) or g.group > MLX_MAX_GQA_FACTOR:
        return Launch("mlx_unfused", device="gpu")
    two_pass = (
        d512
        or (device in MLX_LARGE_DEVICES and g.tokens >= MLX_LARGE_TWO_PASS_TOKENS)
        or (g.kv_heads < g.query_heads and g.tokens >= MLX_GQA_TWO_PASS_TOKENS)
    )
    if not two_pass:
        return Launch("mlx_single_pass")
    chosen = mlx_blocks(device, geometry) if blocks is None else mlx_blocks_read(build, blocks)
    gqa = (
        BUILD_TABLE[build].gqa
        and g.group == MLX_GQA_FACTOR
        and g.tokens >= MLX_GQA_MIN_TOKENS
        and g.head_dim in MLX_GQA_HEADS_PER_SIMDGROUP
    )
    return Launch(
        "mlx_two_pass", chosen, gqa_heads_per_simdgroup=MLX_GQA_HEADS_PER_SIMDGROUP[g.head_dim] if gqa else None
    )


def paged_heads_per_threadgroup(geometry: Geometry) -> int:
    """hpt: the largest divisor of QH / KVH not above max(1, 1024 / D)."""
    n, d = geometry.group, geometry.head_dim
    return max(h for h in range(1, n + 1) if n % h == 0 and (h == 1 or h * d <= PAGED_HEADS_PER_THREADGROUP_WIDTH))


def paged_simdgroups(geometry: Geometry, dispatcher: str = "current") -> int | None:
    """The engine's simdgroups: the first of 8, 4, 2, 1 whose threadgroup memory fits; `current` holds `hpt` heads
    (None when none fits), `early` the whole GQA factor (else 1 simdgroup)."""
    d = geometry.head_dim
    hpt = paged_heads_per_threadgroup(geometry) if dispatcher == "current" else geometry.group
    for simdgroups in PAGED_SIMDGROUP_CHOICES:
        if FLOAT32_BYTES * (hpt * d + simdgroups * hpt * (d + 2)) <= PAGED_THREADGROUP_BYTES:
            return simdgroups
    return None if dispatcher == "current" else 1


def paged_refusal(geometry: Geometry) -> NotEmulated:
    return NotEmulated(
        PAGED_SHAPE,
        f"the paged dispatcher refuses D {geometry.head_dim} with QH/KVH {geometry.group}: not even one simdgroup "
        f"fits its {PAGED_THREADGROUP_BYTES}-byte threadgroup memory",
    )


def paged_head_dim_refusal(geometry: Geometry) -> NotEmulated | None:
    """The engine's refusal of a head dim its paged kernel has no instantiation for, else None."""
    if geometry.head_dim in PAGED_HEAD_DIMS:
        return None
    return NotEmulated(
        PAGED_HEAD_DIM,
        f"the engine refuses head dim {geometry.head_dim} for its paged kernel (it runs "
        f"only for D {', '.join(map(str, PAGED_HEAD_DIMS))}); this kernel cannot have run",
    )


def paged_output_refusal(kv_dtype: str, output_dtype: str) -> NotEmulated | None:
    """The paged kernel writes its output in the stored keys' dtype: a refusal when the packet's output is another."""
    if kv_dtype == output_dtype:
        return None
    return NotEmulated(
        PAGED_OUTPUT_DTYPE,
        f"the paged kernel writes its output in the stored keys' dtype ({kv_dtype}); "
        f"this kernel cannot have written a {output_dtype} output",
    )


def unfused_rows(geometry: Geometry) -> int:
    """Query rows of one KV head mlx_unfused computes at once: UNFUSED_CHUNK_ELEMENTS scores, at least one row."""
    return max(1, min(geometry.group, UNFUSED_CHUNK_ELEMENTS // max(1, geometry.tokens)))


def unfused_estimate(geometry: Geometry) -> int:
    """Bytes mlx_unfused holds at once: UNFUSED_ROW_COPIES of one chunk's scores, and its output [QH, D] twice."""
    g = geometry
    return FLOAT32_BYTES * (UNFUSED_ROW_COPIES * unfused_rows(g) * g.tokens + 2 * g.query_heads * g.head_dim)


def library_estimate(geometry: Geometry) -> int:
    """Bytes a real MLX run holds at once (float32 bound): its process, its scores and copies of K or V."""
    g = geometry
    return LIBRARY_PROCESS_BYTES + FLOAT32_BYTES * (
        LIBRARY_SCORE_COPIES * g.query_heads * g.tokens + LIBRARY_KV_COPIES * g.kv_heads * g.tokens * g.head_dim
    )


def memory_estimate(geometry: Geometry, parallel_blocks: int) -> int:
    """Bytes an emulation with `parallel_blocks` block states holds at once: the scores and STATE_COPIES states."""
    g = geometry
    return FLOAT32_BYTES * (
        g.query_heads * g.tokens + STATE_COPIES * parallel_blocks * g.query_heads * (g.head_dim + 1)
    )


def request_bound(geometry: Geometry, parallel_blocks: int) -> int:
    """Bytes a request of emulations holds at once (docs/emulations.md, "Memory bound"): REQUEST_SCORE_COPIES of
    one [QH, T] scores array, the largest run's `parallel_blocks` states, and scratch."""
    g = geometry
    return (
        REQUEST_SCORE_COPIES * FLOAT32_BYTES * g.query_heads * g.tokens
        + memory_estimate(geometry, parallel_blocks)
        - FLOAT32_BYTES * g.query_heads * g.tokens
        + REQUEST_SCRATCH_BYTES
    )


def memory_refusal(
    geometry: Geometry, parallel_blocks: int, needed: tuple[str, int] | None = None
) -> NotEmulated | None:
    """A refusal when the estimate (of `parallel_blocks` states, or `needed`: what, bytes) exceeds the bound; shown
    rounded up, so it never reads as the bound itself."""
    what, needed_bytes = needed or (
        f"{parallel_blocks} parallel block states",
        memory_estimate(geometry, parallel_blocks),
    )
    if needed_bytes <= EMULATION_MEMORY_BYTES:
        return None
    return NotEmulated(
        MEMORY_BOUND,
        f"{what} would need about {math.ceil(needed_bytes / 2**20)} MiB, above the emulation "
        f"bound of {EMULATION_MEMORY_BYTES // 2**20} MiB; not run",
    )
