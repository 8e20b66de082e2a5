"""The five MLX core states (builds) the engine shipped or is compared with, and how they launch.

Pure data (docs/emulations.md, "The builds"); the launch rule that reads it is in launch.py.
"""

from __future__ import annotations

from types import MappingProxyType

from explorer.foundations.record import Record, record


@record
class Build(Record):
    """One MLX core state: its name, where it was read, and the launch choices that set it apart."""

    name: str
    source: str  # repository and commit it was read from
    gqa: bool  # launches the `_gqa` two-pass variant (QH = 8 KVH, D 64 / 128, T >= 8192)
    rounds_blocks: bool  # rounds MLX_SDPA_BLOCKS up to a multiple of 32 (else takes it as given)
    two_pass_d512: bool  # has D 512 two-pass kernels, run at every T (else D 512 is unfused)
    float32_partials: bool  # two-pass partials always float32 (else the promoted dtype)


UPSTREAM, FORK_BASE, FORK_0322, FORK_FP32_PARTIALS, FORK_D512 = (
    "upstream",
    "fork-base",
    "fork-0.32.2",
    "fork-fp32-partials",
    "fork-d512",
)
BUILD_TABLE: MappingProxyType[str, Build] = MappingProxyType(
    {
        UPSTREAM: Build(UPSTREAM, "ml-explore/mlx 846d1762", True, True, False, False),
        FORK_BASE: Build(FORK_BASE, "Layr-Labs/mlx darkbloom-base 0a725e30", False, False, False, False),
        FORK_0322: Build(FORK_0322, "Layr-Labs/mlx PR #10, core fab0f39f (v0.32.2 sync)", True, True, False, False),
        FORK_FP32_PARTIALS: Build(
            FORK_FP32_PARTIALS, "Layr-Labs/mlx PR #16 (fork main, the 0.9.0 build)", True, True, False, True
        ),
        FORK_D512: Build(FORK_D512, "Layr-Labs/mlx 22b4c028 (.cpp) with 01f65ed1 (.metal)", True, True, True, True),
    }
)
BUILDS = tuple(BUILD_TABLE)
DEFAULT_BUILD = FORK_FP32_PARTIALS  # the newest state shown to ship
# The order builds are run and named in (`--emulate builds`, its sentence): the cores shown to ship first, newest
# first, then the older and the experimental line, upstream last.
SHIPPED_FIRST = (FORK_FP32_PARTIALS, FORK_0322, FORK_BASE, FORK_D512, UPSTREAM)
