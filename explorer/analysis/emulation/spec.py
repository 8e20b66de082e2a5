"""Resolved emulations: each parameter's value for a packet, the normalised id, what runs, the label."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from explorer.analysis.emulation import launch
from explorer.analysis.emulation.arithmetic import BUTTERFLY, EXACT, Hypotheses
from explorer.analysis.emulation.builds import BUILD_TABLE
from explorer.analysis.emulation.ids import RequestedId, expand
from explorer.analysis.emulation.kernels import (
    CPU,
    CURRENT,
    DISPATCHER_SOURCES,
    ENGINE_CHOICE,
    FLOAT32_PARTIAL_BUILDS,
    FMA_VALUES,
    HYPOTHESES,
    KERNELS,
    LAUNCH_RULE,
    MLX_RUN,
    MLX_SDPA,
    MLX_SINGLE_PASS,
    MLX_TWO_PASS,
    MLX_UNFUSED,
    OUTPUT_DTYPE,
    PAGED_TWO_PASS,
    SINGLE_PASS,
)
from explorer.analysis.emulation.launch import Geometry, NotEmulated
from explorer.foundations.record import Record, record

SOURCE_SENTENCES = {
    MLX_TWO_PASS: "Emulated as MLX's sdpa_vector_2pass source computes it: blocks visit strided keys with an online "
    "softmax; the second kernel merges them lane-strided (lane l takes blocks l, l + 32, ...), then "
    "reduces across the 32 lanes.",
    MLX_SINGLE_PASS: "Emulated as MLX's sdpa_vector source computes it: 32 simdgroups visit strided keys with an "
    "online softmax, then their results are scaled and reduced across the 32 simdgroups.",
    PAGED_TWO_PASS: "Emulated as the engine's pagedattention.metal computes it: exp2-domain online softmax per "
    "simdgroup, simdgroups merged in order within each partition, partitions merged in order; queries "
    "are rounded to the stored keys' dtype first when the dtypes differ (the dispatcher does that); "
    "token T-1 is read from the incoming K/V row (the fused write), tokens 0..T-2 from the stored rows; "
    "the output is written in the stored keys' dtype.",
    SINGLE_PASS: "No real kernel is claimed to run exactly this loop; it is the baseline of a kernel without blocks.",
    MLX_RUN: "Not an emulation: the installed MLX library's mx.fast.scaled_dot_product_attention run on this "
    "machine on the packet's exact inputs (stored keys and values with the incoming row at T-1, as the cache holds "
    "them after the write; scale from scaleBits); its numbers are whatever that library computes here, not the "
    "engine's GPU.",
}
GQA_SENTENCE = (
    "Emulated as upstream MLX's sdpa_vector_2pass_1_gqa computes pass 1: each block takes a contiguous chunk "
    "of ceil(T / blocks) keys, split into HPT sub-chunks with an online softmax each, merged per head in "
    "sub-chunk order (normalised partials weighted by their sums); pass 2 as for mlx_two_pass."
)
UNFUSED_SENTENCES = {
    CPU: "Emulated as MLX's unfused composition (mlx/fast.cpp) computes it on its CPU backend: q rounded to the "
    "promoted dtype P after multiplying by the scale in P; scores, softmax weights and output each rounded to P; "
    "both matmuls sum their products sequentially in token / channel order in float32 (the reference BLAS for "
    "float32, MLX's simd_gemm with SIMD width 1 on x86-64 for float16 / bfloat16); the precise softmax in float32 "
    "with MLX's own polynomial exp (simd/math.h), a sequential sum and one reciprocal.",
    "gpu": "Emulated as MLX's unfused composition would run on its Metal backend: the one-row matmuls as gemv (each "
    "simdgroup lane sums its strided products, then the lanes are reduced as the simd hypothesis says), the "
    "softmax kernel's exp correctly rounded; the reduction order of the GPU's simd_sum and its fast exp are "
    "properties of the hardware the source does not fix (assumptions, not read from the source).",
}
PAGED_HARDWARE_SENTENCE = (
    "What the source does not fix is assumed: division and the reciprocal 1 / L correctly rounded, exp2 correctly "
    "rounded (the kernel asks for precise exp2), no denormal flushing, and float32 to bfloat16 / float16 "
    "conversion by round-to-nearest-even."
)
HYPOTHESIS_SENTENCES = {
    "exp": {
        EXACT: "Hypothesis exp=exact: every exp is correctly rounded (float64, then rounded to float32); the GPU's "
        "fast exp may differ in the last bits.",
        "exp2_scaled": "Hypothesis exp=exp2_scaled: every natural exp(x) is computed as exp2(round32(x * log2 e)).",
    },
    "fma": {
        False: "Hypothesis fma=off: every float32 operation rounds on its own; the compiler may fuse multiply-adds.",
        True: "Hypothesis fma=on: every multiply-add of the dot products, the merges and the online step is one "
        "fused operation (one rounding).",
    },
    "simd": {
        BUTTERFLY: "Hypothesis simd=butterfly: 32 lane values are reduced by a butterfly (xor shuffles "
        "16, 8, 4, 2, 1); the GPU's simd_sum may reduce in another order.",
        "sequential": "Hypothesis simd=sequential: 32 lane values are summed in lane order 0..31 from +0.",
    },
}


@record
class PacketShape(Record):
    """What resolving an id reads from a packet: the output dtype and the geometry (None when not admitted)."""

    output_dtype: str | None
    geometry: Geometry | None
    kv_dtype: str | None = None


@record
class Run(Record):
    """What an emulation computes: the arithmetic kernel, its launch values and its hypotheses."""

    kernel: str
    blocks: int | None = None
    partition_tokens: int | None = None
    simdgroups: int | None = None
    partial_dtype: str | None = None
    hypotheses: Hypotheses = Hypotheses()
    device: str | None = None  # mlx_unfused's backend, mlx_run's device
    gqa_heads_per_simdgroup: int | None = None  # mlx_two_pass as upstream's `_gqa` variant

    def parallel_blocks(self, geometry: Geometry) -> int:
        """Block states held at once: blocks (x HPT sub-chunks), 32 simdgroups, partitions x simdgroups, or 1."""
        if self.kernel == MLX_TWO_PASS:
            return self.blocks * (self.gqa_heads_per_simdgroup or 1)
        if self.kernel == MLX_SINGLE_PASS:
            return 32
        if self.kernel == PAGED_TWO_PASS:
            size = min(self.partition_tokens, geometry.tokens)
            return -(-geometry.tokens // size) * min(self.simdgroups, size)
        return 1


@record
class EmulationSpec(Record):
    """A resolved emulation: kernel, every parameter's value (listed order), the normalised id and what runs (None
    with `not_emulated`, or without a reason when the geometry is unknown); `resolved`: what mlx_sdpa launched."""

    kernel: str
    parameters: Mapping[str, Any]
    id: str
    non_default: tuple[str, ...]
    run: Run | None
    not_emulated: NotEmulated | None
    resolved: Mapping[str, Any] | None

    @property
    def label(self) -> str:
        listed = ", ".join(f"{name} {value}" for name, value in self.parameters.items())
        settings = f" ({listed})" if listed else ""
        chosen = ""
        if self.resolved is not None:
            chosen = (
                f"; the {self.resolved['build']} build's launch rule chose {self.resolved['kernel']}"
                + (" (_gqa variant)" if self.resolved.get("gqaHeadsPerSimdgroup") else "")
                + (f" with {self.resolved['blocks']} blocks" if self.resolved["blocks"] else "")
                + (f" on the {self.resolved['device']}" if self.resolved.get("device") else "")
            )
        if self.kernel == MLX_RUN:
            return (
                f"{self.id}: output elements bit-equal to the installed MLX library run on this machine{settings}; "
                "the real library, not the engine's GPU"
            )
        return (
            f"{self.id}: output elements bit-equal to an emulation of the {KERNELS[self.kernel].description}{settings}"
            f"{chosen}; a counterfactual under stated hypotheses, not the reference"
        )

    def assumptions(self) -> tuple[str, ...]:
        executed = (
            self.run.kernel if self.run is not None else (MLX_TWO_PASS if self.kernel == MLX_SDPA else self.kernel)
        )
        if executed == MLX_UNFUSED:
            device = self.run.device if self.run is not None else self.parameters["device"]
            sentences = [UNFUSED_SENTENCES[device]]
        elif self.run is not None and self.run.gqa_heads_per_simdgroup:
            sentences = [GQA_SENTENCE]
        else:
            sentences = [SOURCE_SENTENCES[executed]]
        if self.kernel == MLX_RUN:
            return tuple(sentences)
        for name in HYPOTHESES:
            if name in self.parameters:
                value = FMA_VALUES[self.parameters[name]] if name == "fma" else self.parameters[name]
                sentences.append(HYPOTHESIS_SENTENCES[name][value])
        if self.kernel == SINGLE_PASS:
            sentences.append(
                "Every float32 operation rounds on its own (a compiler may fuse multiply-adds), every exp "
                "is correctly rounded, and the dot products use the 32-lane split and butterfly."
            )
        if self.kernel == PAGED_TWO_PASS:
            sentences.append(PAGED_HARDWARE_SENTENCE)
        sentences.append(self._launch_sentence())
        return tuple(sentences)

    def _launch_sentence(self) -> str:
        if self.kernel == MLX_SDPA:
            return (
                f"The kernel and block count follow the {self.parameters['build']} build's launch rule "
                f"(scaled_dot_product_attention.cpp, {BUILD_TABLE[self.parameters['build']].source}) for device "
                f"{self.parameters['device']!r}"
                + (
                    ""
                    if self.parameters["blocks"] == LAUNCH_RULE
                    else f" with MLX_SDPA_BLOCKS={self.parameters['blocks']}"
                )
                + "; the real device and build are assumptions (docs/emulations.md names each build's source)."
            )
        if self.kernel == MLX_UNFUSED:
            return "MLX runs this composition when no fused kernel applies (always on its CPU backend)."
        launch_names = [p.name for p in KERNELS[self.kernel].parameters if p.name not in HYPOTHESES]
        if not launch_names:
            return "The kernel has no launch parameters to assume."
        values = ", ".join(
            f"{name} = {self.parameters[name]}" + (" (set by the user)" if name in self.non_default else " (default)")
            for name in launch_names
        )
        if self.kernel == PAGED_TWO_PASS and "partitionTokens" not in self.non_default:
            return (
                f"The launch parameters are {values}; partitionTokens = 256 is the newest dispatcher's "
                f"(Layr-Labs/mlx-swift-lm {DISPATCHER_SOURCES[CURRENT]}: its 64 / 128 / 256 ladder is off unless "
                "DARKBLOOM_CBV2_PAGED_PTOK_TARGET is set)."
            )
        return f"The launch parameters are assumed to be {values}; the real launch may differ."


def _default(default: Any, shape: PacketShape, values: Mapping[str, Any]) -> Any:
    """A parameter's default for this packet given the values resolved before it (None when not known)."""
    if default == OUTPUT_DTYPE:
        return "float32" if values.get("build") in FLOAT32_PARTIAL_BUILDS else shape.output_dtype
    if default == ENGINE_CHOICE:
        dispatcher = values.get("dispatcher", "current")
        return None if shape.geometry is None else launch.paged_simdgroups(shape.geometry, dispatcher)
    return default


def launch_resolved(device: str, geometry: Geometry, build: str, blocks: int | None = None) -> Mapping[str, Any]:
    """The `resolved` of what `build`'s launch rule runs on `device` (a GPU class or "cpu")."""
    chosen = launch.mlx_launch(device, geometry, build, blocks)
    return MappingProxyType(
        {
            "kernel": chosen.kernel,
            "blocks": chosen.blocks,
            "build": build,
            "device": chosen.device,
            "gqaHeadsPerSimdgroup": chosen.gqa_heads_per_simdgroup,
        }
    )


def _sdpa_run(values: Mapping[str, Any], geometry: Geometry, hypotheses: Hypotheses) -> tuple[Run, Mapping[str, Any]]:
    """What mlx_sdpa runs (the build's launch rule) and its `resolved`."""
    blocks_env = None if values["blocks"] == LAUNCH_RULE else values["blocks"]
    chosen = launch.mlx_launch(values["device"], geometry, values["build"], blocks_env)
    resolved = launch_resolved(values["device"], geometry, values["build"], blocks_env)
    if chosen.kernel == MLX_UNFUSED:
        return Run(MLX_UNFUSED, device=chosen.device, hypotheses=hypotheses), resolved
    return Run(
        chosen.kernel,
        blocks=chosen.blocks,
        partial_dtype=values["partialDType"] if chosen.blocks else None,  # a single pass stores no partials
        hypotheses=hypotheses,
        gqa_heads_per_simdgroup=chosen.gqa_heads_per_simdgroup,
    ), resolved


def _paged_refusal(values: Mapping[str, Any], shape: PacketShape) -> NotEmulated | None:
    """Why the engine's paged kernel cannot have written this output, else None."""
    geometry = shape.geometry
    return (
        launch.paged_head_dim_refusal(geometry)
        or (None if shape.kv_dtype is None else launch.paged_output_refusal(shape.kv_dtype, shape.output_dtype))
        or (launch.paged_refusal(geometry) if launch.paged_simdgroups(geometry, values["dispatcher"]) is None else None)
    )


def _run(
    kernel: str, values: Mapping[str, Any], shape: PacketShape
) -> tuple[Run | None, NotEmulated | None, Mapping[str, Any] | None]:
    """(what runs, why nothing runs, what mlx_sdpa resolved to) for resolved `values`."""
    geometry = shape.geometry
    if geometry is None:
        return None, None, None
    hypotheses = Hypotheses(
        values.get("exp", EXACT), FMA_VALUES[values.get("fma", "off")], values.get("simd", BUTTERFLY)
    )
    resolved = None
    if kernel == MLX_SDPA:
        run, resolved = _sdpa_run(values, geometry, hypotheses)
    elif kernel == MLX_TWO_PASS:
        run = Run(kernel, blocks=values["blocks"], partial_dtype=values["partialDType"], hypotheses=hypotheses)
    elif kernel == PAGED_TWO_PASS:
        refusal = _paged_refusal(values, shape)
        if refusal is not None:
            return None, refusal, None
        run = Run(
            kernel,
            partition_tokens=values["partitionTokens"],
            simdgroups=values["simdgroups"],
            partial_dtype=values["partialDType"],
            hypotheses=hypotheses,
        )
    elif kernel in (MLX_UNFUSED, MLX_RUN):
        run = Run(kernel, device=values["device"], hypotheses=hypotheses)
    else:
        run = Run(kernel, hypotheses=hypotheses)
    needed = None  # what needs how many bytes, where it is not the block states
    if run.kernel == MLX_RUN:
        needed = ("the library's run", launch.library_estimate(geometry))
    elif run.kernel == MLX_UNFUSED:  # also mlx_sdpa where MLX runs its unfused composition
        needed = ("the unfused composition's chunks", launch.unfused_estimate(geometry))
    refusal = launch.memory_refusal(geometry, run.parallel_blocks(geometry), needed)
    return (None, refusal, resolved) if refusal is not None else (run, None, resolved)


def resolve(requested: RequestedId, shape: PacketShape) -> EmulationSpec:
    """Every parameter's value, the normalised id (only non-default parameters, in the kernel's order) and what runs;
    a value given for a default that follows an unknown packet is kept in the id."""
    kernel = KERNELS[requested.kernel]
    given = dict(requested.given)
    values, shown, names = {}, [], []
    for parameter in kernel.parameters:
        default = _default(parameter.default, shape, values)
        value = given.get(parameter.name, default)
        values[parameter.name] = value
        if parameter.name in given and value != default:
            shown.append(f"{parameter.name}={value}")
            names.append(parameter.name)
    normalised = kernel.name + (f"({','.join(shown)})" if shown else "")
    run, not_emulated, resolved = _run(kernel.name, values, shape)
    return EmulationSpec(kernel.name, MappingProxyType(values), normalised, tuple(names), run, not_emulated, resolved)


def launch_key(spec: EmulationSpec) -> tuple:
    """What an entry runs: entries with equal keys compute the same bits; an entry without a run keys on its id."""
    return (spec.run,) if spec.run is not None else (spec.id,)


def resolve_all(request: str | Iterable[str], shape: PacketShape) -> tuple[EmulationSpec, ...]:
    """The distinct resolved emulations of a request; a `builds` id launching as an earlier one runs under it."""
    specs: dict[str, EmulationSpec] = {}
    launches: set[tuple] = set()  # the launches of the builds set's entries kept so far
    for requested in expand(request):
        spec = resolve(requested, shape)
        collapsible = requested.collapsible and spec.kernel == MLX_SDPA
        if spec.id in specs or (collapsible and launch_key(spec) in launches):
            continue
        specs[spec.id] = spec
        if collapsible:
            launches.add(launch_key(spec))
    return tuple(specs.values())


def normalised_ids(request: str | Iterable[str], shape: PacketShape) -> tuple[str, ...]:
    """The normalised ids of a request in the order they run (emulationsRequested)."""
    return tuple(spec.id for spec in resolve_all(request, shape))
