"""The table of emulated kernels (parameters, defaults, what each accepts) and the named sets."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from explorer.analysis.emulation.arithmetic import BUTTERFLY, EXACT, EXP2_SCALED, SEQUENTIAL
from explorer.analysis.emulation.builds import BUILD_TABLE, BUILDS, DEFAULT_BUILD, SHIPPED_FIRST
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import DTYPES

DEFAULT_SET_NAME, SWEEP_NAME, BUILDS_NAME = "default", "sweep", "builds"
MLX_TWO_PASS, MLX_SINGLE_PASS, MLX_SDPA = "mlx_two_pass", "mlx_single_pass", "mlx_sdpa"
MLX_UNFUSED, MLX_RUN = "mlx_unfused", "mlx_run"
PAGED_TWO_PASS, SINGLE_PASS = "paged_two_pass", "single_pass"
MIN_BLOCKS, MAX_BLOCKS = 1, 1024  # MLX_SDPA_BLOCKS as a build may read it (upstream rounds it up to a multiple of 32)
MAX_PARTITION_TOKENS = 1 << 24  # an id is user input: this keeps it a sane request
SIMDGROUP_CHOICES = (1, 2, 4, 8)
GPU_CLASSES = ("s", "d", "other")  # the last letter of the GPU architecture name
CPU, GPU = "cpu", "gpu"
DEVICES = (*GPU_CLASSES, CPU)  # mlx_sdpa's devices: a GPU class, or MLX's CPU backend
UNFUSED_DEVICES = (CPU, GPU)
DEFAULT_DEVICE = "default"  # mlx_run: the GPU on Apple silicon, the CPU elsewhere
RUN_DEVICES = (DEFAULT_DEVICE, CPU, GPU)
CURRENT, EARLY = "current", "early"
DISPATCHERS = (CURRENT, EARLY)
DISPATCHER_SOURCES = {  # where each dispatcher was read: Layr-Labs/mlx-swift-lm, at these commits
    CURRENT: "PagedAttentionKernel.swift fd75caa3",  # the newest
    EARLY: "PagedAttentionKernel.swift 7c69e2c9",
}
LAUNCH_RULE = "the build's launch rule"  # the default of mlx_sdpa's blocks (MLX_SDPA_BLOCKS unset)
OUTPUT_DTYPE = "the output tensor's dtype"  # the default of a parameter that follows the packet's output dtype
ENGINE_CHOICE = "the engine's choice for this geometry"  # the default of the paged kernel's simdgroups
# the arithmetic hypotheses' parameter names (docs/emulations.md, The kernels, what each follows and what is hypothesis)
HYPOTHESES = ("exp", "fma", "simd")
FMA_VALUES = {"off": False, "on": True}

_DECIMAL = re.compile(r"^[0-9]{1,9}$")


class EmulationIdError(ValueError):
    """An emulation id names an unknown kernel, parameter or value (a usage error, never packet content)."""


@record
class Parameter(Record):
    """One parameter of a kernel: its name, default, what it accepts (said in errors) and how a value text is read."""

    name: str
    default: Any
    accepts: str
    read: Callable[[str], Any]


def _integer(low: int, high: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        if not _DECIMAL.match(text) or not low <= int(text) <= high:
            raise ValueError
        return int(text)

    return read


def _one_of(values: tuple[str, ...]) -> Callable[[str], str]:
    def read(text: str) -> str:
        if text not in values:
            raise ValueError
        return text

    return read


def _listed(values) -> str:
    return ", ".join(map(str, values))


BLOCKS = Parameter(
    "blocks",
    128,
    f"an integer from {MIN_BLOCKS} to {MAX_BLOCKS} (pass 2 merges the first multiple of 32 of them)",
    _integer(MIN_BLOCKS, MAX_BLOCKS),
)
SDPA_BLOCKS = Parameter(
    "blocks",
    LAUNCH_RULE,
    f"an integer from {MIN_BLOCKS} to {MAX_BLOCKS} (MLX_SDPA_BLOCKS as the build reads it)",
    _integer(MIN_BLOCKS, MAX_BLOCKS),
)
PARTITION_TOKENS = Parameter(
    "partitionTokens", 256, f"an integer from 1 to {MAX_PARTITION_TOKENS}", _integer(1, MAX_PARTITION_TOKENS)
)
MLX_PARTIAL = Parameter("partialDType", OUTPUT_DTYPE, f"one of {_listed(DTYPES)}", _one_of(DTYPES))
PAGED_PARTIAL = Parameter("partialDType", "float32", f"one of {_listed(DTYPES)}", _one_of(DTYPES))
SIMDGROUPS = Parameter(
    "simdgroups",
    ENGINE_CHOICE,
    f"one of {_listed(SIMDGROUP_CHOICES)}",
    lambda text: int(_one_of(tuple(map(str, SIMDGROUP_CHOICES)))(text)),
)
DEVICE = Parameter(
    "device", "s", f"one of {_listed(DEVICES)} (a GPU's architecture letter, or MLX's CPU backend)", _one_of(DEVICES)
)
BUILD = Parameter("build", DEFAULT_BUILD, f"one of {_listed(BUILDS)}", _one_of(BUILDS))
FLOAT32_PARTIAL_BUILDS = tuple(name for name, build in BUILD_TABLE.items() if build.float32_partials)
UNFUSED_DEVICE = Parameter("device", CPU, f"one of {_listed(UNFUSED_DEVICES)}", _one_of(UNFUSED_DEVICES))
RUN_DEVICE = Parameter("device", DEFAULT_DEVICE, f"one of {_listed(RUN_DEVICES)}", _one_of(RUN_DEVICES))
DISPATCHER = Parameter("dispatcher", CURRENT, f"one of {_listed(DISPATCHERS)}", _one_of(DISPATCHERS))
EXP = Parameter("exp", EXACT, f"one of {EXACT}, {EXP2_SCALED}", _one_of((EXACT, EXP2_SCALED)))
FMA = Parameter("fma", "off", f"one of {_listed(FMA_VALUES)}", _one_of(tuple(FMA_VALUES)))
SIMD = Parameter("simd", BUTTERFLY, f"one of {BUTTERFLY}, {SEQUENTIAL}", _one_of((BUTTERFLY, SEQUENTIAL)))


@record
class Kernel(Record):
    """One emulated kernel: its name, a one-line description and its parameters in their listed order."""

    name: str
    description: str
    parameters: tuple[Parameter, ...]

    def parameter(self, name: str) -> Parameter | None:
        return next((p for p in self.parameters if p.name == name), None)


KERNELS: Mapping[str, Kernel] = MappingProxyType(
    {
        MLX_TWO_PASS: Kernel(
            MLX_TWO_PASS,
            "MLX vector decode kernel with per-block partials and a merge (sdpa_vector_2pass)",
            (BLOCKS, MLX_PARTIAL, EXP, FMA, SIMD),
        ),
        MLX_SINGLE_PASS: Kernel(
            MLX_SINGLE_PASS, "MLX vector decode kernel without partials (sdpa_vector)", (EXP, FMA, SIMD)
        ),
        MLX_SDPA: Kernel(
            MLX_SDPA,
            "the MLX kernel and block count MLX launches for this packet",
            (DEVICE, BUILD, SDPA_BLOCKS, MLX_PARTIAL, EXP, FMA, SIMD),
        ),
        MLX_UNFUSED: Kernel(
            MLX_UNFUSED, "MLX unfused attention (scale, matmul, precise softmax, matmul)", (UNFUSED_DEVICE, SIMD)
        ),
        MLX_RUN: Kernel(
            MLX_RUN,
            "installed MLX library run on the packet's inputs (mx.fast.scaled_dot_product_attention)",
            (RUN_DEVICE,),
        ),
        PAGED_TWO_PASS: Kernel(
            PAGED_TWO_PASS,
            "paged decode kernel (exp2 domain, partitions merged)",
            (PARTITION_TOKENS, PAGED_PARTIAL, DISPATCHER, SIMDGROUPS, FMA, SIMD),
        ),
        SINGLE_PASS: Kernel(SINGLE_PASS, "single online softmax over all keys (no blocks)", ()),
    }
)

# `--emulate builds`: mlx_sdpa for every build x GPU class, the default build first (runs with the same launch
# collapse into the first, so a group is run under its shipped build's id), then the paged kernel under each
# dispatcher (what a paged packet's sentence names).
BUILDS_SET = (
    *(f"{MLX_SDPA}(device={device},build={build})" for build in SHIPPED_FIRST for device in GPU_CLASSES),
    *(f"{PAGED_TWO_PASS}(dispatcher={dispatcher})" for dispatcher in DISPATCHERS),
)
DEFAULT_SET = (MLX_TWO_PASS, f"{MLX_TWO_PASS}(partialDType=float32)", PAGED_TWO_PASS, SINGLE_PASS)
_F32 = "partialDType=float32"
SWEEP = (
    DEFAULT_SET_NAME,
    BUILDS_NAME,
    f"{MLX_SDPA}(device={CPU})",
    *(f"{MLX_UNFUSED}(device={device})" for device in UNFUSED_DEVICES),
    MLX_RUN,
    MLX_SINGLE_PASS,
    *(f"{MLX_TWO_PASS}(blocks={blocks}{suffix})" for blocks in (32, 64, 256) for suffix in ("", f",{_F32}")),
    *(f"{PAGED_TWO_PASS}(partitionTokens={tokens})" for tokens in (64, 128)),
    *(f"{PAGED_TWO_PASS}(simdgroups={simdgroups})" for simdgroups in (4, 8)),
    f"{PAGED_TWO_PASS}(dispatcher={EARLY})",
    *(
        f"{MLX_TWO_PASS}({prefix}{hypothesis})"
        for prefix in ("", f"{_F32},")
        for hypothesis in (f"exp={EXP2_SCALED}", "fma=on", f"simd={SEQUENTIAL}")
    ),
    *(f"{PAGED_TWO_PASS}({hypothesis})" for hypothesis in ("fma=on", f"simd={SEQUENTIAL}")),
)
