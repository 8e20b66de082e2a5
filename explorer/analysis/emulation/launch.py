"""What the real kernels launch for a packet's geometry, and each emulation's memory estimate.

What the real kernels launch for a packet's geometry (docs/emulations.md, The kernels, what each follows and
what is hypothesis: MLX's kernel and block choice, the paged kernel's simdgroups) and each emulation's memory
estimate; pure functions, no numerics, no I/O.
"""

from __future__ import annotations

from explorer.packet.record import Record, record

MLX_VECTOR_HEAD_DIMS = (64, 96, 128, 256)  # MLX's vector kernels; D 192 is routed to unfused attention for one token
MLX_GQA_HEAD_DIMS = (64, 128)  # the `_gqa` two-pass variant's head dims
MLX_GQA_FACTOR = 8
MLX_GQA_MIN_TOKENS = 8192
MLX_MAX_GQA_FACTOR = 32  # beyond it MLX runs unfused attention
MLX_LARGE_DEVICES = ("s", "d")  # last letter of the GPU architecture name: the large GPUs
MLX_LARGE_TWO_PASS_TOKENS = 1024  # large GPUs run the two-pass kernel from this many tokens
MLX_GQA_TWO_PASS_TOKENS = 4096  # any GPU runs it from this many tokens when KVH < QH
PAGED_THREADGROUP_BYTES = 32768  # the paged dispatcher's threadgroup-memory budget
PAGED_HEADS_PER_THREADGROUP_WIDTH = 1024  # hpt <= max(1, this / D)
PAGED_SIMDGROUP_CHOICES = (8, 4, 2, 1)
FLOAT32_BYTES = 4
# An emulation's working memory: the scores [QH, T] plus this many copies of its block states [B, QH, D + 1].
STATE_COPIES = 5
EMULATION_MEMORY_BYTES = 512 * 1024 * 1024  # an emulation whose estimate exceeds this is refused, not run
REQUEST_SCORE_COPIES = 2  # [QH, T] float32 scores a request holds at once (measured at most 1.5)
REQUEST_SCRATCH_BYTES = 64 * 1024 * 1024  # chunk temporaries (a float64 fused dot of 2**18 scores), outputs, counts

GQA_VARIANT, UNFUSED, PAGED_SHAPE, MEMORY_BOUND = ("mlx_gqa_variant", "mlx_unfused", "paged_shape_refused",
                                                   "memory_bound")


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
    """The two-pass block count MLX chooses on `device` (docs/emulations.md, The kernels, what each follows and what is
    hypothesis)."""
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


def mlx_launch(device: str, geometry: Geometry) -> tuple[str, int | None] | NotEmulated:
    """(kernel, blocks) MLX launches for one query token without a mask on `device`, or why it is not emulated."""
    g = geometry
    if g.head_dim not in MLX_VECTOR_HEAD_DIMS or g.group > MLX_MAX_GQA_FACTOR:
        return NotEmulated(UNFUSED, f"MLX runs unfused attention for D {g.head_dim} with QH/KVH {g.group} (its vector "
                                    f"kernels take D in {', '.join(map(str, MLX_VECTOR_HEAD_DIMS))} and QH/KVH up to "
                                    f"{MLX_MAX_GQA_FACTOR}); unfused attention is not emulated")
    two_pass = ((device in MLX_LARGE_DEVICES and g.tokens >= MLX_LARGE_TWO_PASS_TOKENS)
                or (g.kv_heads < g.query_heads and g.tokens >= MLX_GQA_TWO_PASS_TOKENS))
    if not two_pass:
        return "mlx_single_pass", None
    if g.group == MLX_GQA_FACTOR and g.head_dim in MLX_GQA_HEAD_DIMS and g.tokens >= MLX_GQA_MIN_TOKENS:
        return NotEmulated(GQA_VARIANT, f"MLX launches its sdpa_vector_2pass _gqa variant here "
                                        f"(QH = 8 x KVH, D {g.head_dim}, T {g.tokens} >= {MLX_GQA_MIN_TOKENS}); "
                                        "that variant is not emulated")
    return "mlx_two_pass", mlx_blocks(device, geometry)


def paged_heads_per_threadgroup(geometry: Geometry) -> int:
    """hpt: the largest divisor of QH / KVH not above max(1, 1024 / D)."""
    n, d = geometry.group, geometry.head_dim
    return max(h for h in range(1, n + 1) if n % h == 0 and (h == 1 or h * d <= PAGED_HEADS_PER_THREADGROUP_WIDTH))


def paged_simdgroups(geometry: Geometry) -> int | None:
    """The engine's simdgroups: the first of 8, 4, 2, 1 whose threadgroup memory fits; None when none fits."""
    hpt, d = paged_heads_per_threadgroup(geometry), geometry.head_dim
    for simdgroups in PAGED_SIMDGROUP_CHOICES:
        if FLOAT32_BYTES * (hpt * d + simdgroups * hpt * (d + 2)) <= PAGED_THREADGROUP_BYTES:
            return simdgroups
    return None


def paged_refusal(geometry: Geometry) -> NotEmulated:
    return NotEmulated(PAGED_SHAPE, f"the paged dispatcher refuses D {geometry.head_dim} with QH/KVH {geometry.group}: "
                                    "not even one simdgroup fits its "
                                    f"{PAGED_THREADGROUP_BYTES}-byte threadgroup memory")


def memory_estimate(geometry: Geometry, parallel_blocks: int) -> int:
    """Bytes an emulation with `parallel_blocks` block states holds at once: the scores and STATE_COPIES states."""
    g = geometry
    return FLOAT32_BYTES * (g.query_heads * g.tokens
                            + STATE_COPIES * parallel_blocks * g.query_heads * (g.head_dim + 1))


def request_bound(geometry: Geometry, parallel_blocks: int) -> int:
    """Bytes a request of emulations holds at once (docs/emulations.md, "Memory bound"), `parallel_blocks` being the
    largest of its runs: the runs sharing scores go one after another, so one [QH, T] array of scores and its
    scaled chunks live at a time (REQUEST_SCORE_COPIES of it), the largest run's states, and scratch."""
    g = geometry
    return (REQUEST_SCORE_COPIES * FLOAT32_BYTES * g.query_heads * g.tokens
            + memory_estimate(geometry, parallel_blocks) - FLOAT32_BYTES * g.query_heads * g.tokens
            + REQUEST_SCRATCH_BYTES)


def memory_refusal(geometry: Geometry, parallel_blocks: int) -> NotEmulated | None:
    """A refusal when the estimate of `parallel_blocks` block states exceeds EMULATION_MEMORY_BYTES, else None."""
    needed = memory_estimate(geometry, parallel_blocks)
    if needed <= EMULATION_MEMORY_BYTES:
        return None
    return NotEmulated(MEMORY_BOUND, f"{parallel_blocks} parallel block states would need about "
                                     f"{needed / 2**20:.0f} MiB, above the emulation bound of "
                                     f"{EMULATION_MEMORY_BYTES // 2**20} MiB; not run")
