"""Resolved emulations: every parameter's value for a packet, the normalised id, what runs.

Resolved emulations: every parameter's value for a packet, the normalised id, what runs (the launch rules
applied), the label and the assumptions; no numerics, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from explorer.analysis.emulation import launch
from explorer.analysis.emulation.arithmetic import BUTTERFLY, EXACT, Hypotheses
from explorer.analysis.emulation.ids import RequestedId, expand
from explorer.analysis.emulation.kernels import (
    ENGINE_CHOICE,
    FMA_VALUES,
    HYPOTHESES,
    KERNELS,
    MLX_SDPA,
    MLX_SINGLE_PASS,
    MLX_TWO_PASS,
    OUTPUT_DTYPE,
    PAGED_TWO_PASS,
    SINGLE_PASS,
)
from explorer.analysis.emulation.launch import Geometry, NotEmulated
from explorer.packet.record import Record, record

SOURCE_SENTENCES = {
    MLX_TWO_PASS: "Emulated as MLX's sdpa_vector_2pass source computes it: blocks visit strided keys with an online "
                  "softmax; the second kernel merges them lane-strided (lane l takes blocks l, l + 32, ...), then "
                  "reduces across the 32 lanes.",
    MLX_SINGLE_PASS: "Emulated as MLX's sdpa_vector source computes it: 32 simdgroups visit strided keys with an "
                     "online softmax, then their results are scaled and reduced across the 32 simdgroups.",
    PAGED_TWO_PASS: "Emulated as the engine's pagedattention.metal computes it: exp2-domain online softmax per "
                    "simdgroup, simdgroups merged in order within each partition, partitions merged in order; queries "
                    "are rounded to the stored keys' dtype first when the dtypes differ (the dispatcher does that).",
    SINGLE_PASS: "No real kernel is claimed to run exactly this loop; it is the baseline of a kernel without blocks.",
}
HYPOTHESIS_SENTENCES = {
    "exp": {EXACT: "Hypothesis exp=exact: every exp is correctly rounded (float64, then rounded to float32); the GPU's "
                   "fast exp may differ in the last bits.",
            "exp2_scaled": "Hypothesis exp=exp2_scaled: every natural exp(x) is computed as "
                           "exp2(round32(x * log2 e))."},
    "fma": {False: "Hypothesis fma=off: every float32 operation rounds on its own; "
                   "the compiler may fuse multiply-adds.",
            True: "Hypothesis fma=on: every multiply-add of the dot products, the merges and the online step is one "
                  "fused operation (one rounding)."},
    "simd": {BUTTERFLY: "Hypothesis simd=butterfly: 32 lane values are reduced by a butterfly (xor shuffles "
                        "16, 8, 4, 2, 1); the GPU's simd_sum may reduce in another order.",
             "sequential": "Hypothesis simd=sequential: 32 lane values are summed in lane order 0..31 from +0."},
}


@record
class PacketShape(Record):
    """What resolving an id reads from a packet: the output dtype and the geometry (None when not admitted)."""

    output_dtype: str | None
    geometry: Geometry | None


@record
class Run(Record):
    """What an emulation computes: the arithmetic kernel, its launch values and its hypotheses."""

    kernel: str
    blocks: int | None = None
    partition_tokens: int | None = None
    simdgroups: int | None = None
    partial_dtype: str | None = None
    hypotheses: Hypotheses = Hypotheses()

    def parallel_blocks(self, geometry: Geometry) -> int:
        """Block states held at once: blocks, 32 simdgroups, partitions x simdgroups, or 1."""
        if self.kernel == MLX_TWO_PASS:
            return self.blocks
        if self.kernel == MLX_SINGLE_PASS:
            return 32
        if self.kernel == PAGED_TWO_PASS:
            size = min(self.partition_tokens, geometry.tokens)
            return -(-geometry.tokens // size) * min(self.simdgroups, size)
        return 1


@record
class EmulationSpec(Record):
    """A resolved emulation: kernel, every parameter's value (listed order), the normalised id and what runs.

    `run` is None with `not_emulated` when the launch rule or the memory bound leaves the
    entry without numbers, and None without a reason when the geometry is unknown.
    `resolved` names the kernel and blocks an mlx_sdpa entry ran.
    """

    kernel: str
    parameters: Mapping[str, Any]
    id: str
    non_default: tuple[str, ...]
    run: Run | None
    not_emulated: NotEmulated | None
    resolved: Mapping[str, Any] | None

    @property
    def label(self) -> str:
        settings = ", ".join(f"{name} {value}" for name, value in self.parameters.items())
        chosen = ""
        if self.resolved is not None:
            chosen = f"; MLX's launch rule chose {self.resolved['kernel']}" + (
                f" with {self.resolved['blocks']} blocks" if self.resolved["blocks"] else "")
        return (f"{self.id}: output elements bit-equal to an emulation of the {KERNELS[self.kernel].description}"
                + (f" ({settings})" if settings else "") + chosen
                + "; a counterfactual under stated hypotheses, not the reference")

    def assumptions(self) -> tuple[str, ...]:
        executed = self.run.kernel if self.run is not None else (
            MLX_TWO_PASS if self.kernel == MLX_SDPA else self.kernel)
        sentences = [SOURCE_SENTENCES[executed]]
        for name in HYPOTHESES:
            if name in self.parameters:
                value = FMA_VALUES[self.parameters[name]] if name == "fma" else self.parameters[name]
                sentences.append(HYPOTHESIS_SENTENCES[name][value])
        if self.kernel == SINGLE_PASS:
            sentences.append("Every float32 operation rounds on its own (a compiler may fuse multiply-adds), every exp "
                             "is correctly rounded, and the dot products use the 32-lane split and butterfly.")
        sentences.append(self._launch_sentence())
        return tuple(sentences)

    def _launch_sentence(self) -> str:
        if self.kernel == MLX_SDPA:
            return ("The kernel and block count follow MLX's launch rule for device class "
                    f"{self.parameters['device']!r} "
                    "(scaled_dot_product_attention.cpp); the real device class is an assumption.")
        launch_names = [p.name for p in KERNELS[self.kernel].parameters if p.name not in HYPOTHESES]
        if not launch_names:
            return "The kernel has no launch parameters to assume."
        values = ", ".join(f"{name} = {self.parameters[name]}"
                           + (" (set by the user)" if name in self.non_default else " (default)")
                           for name in launch_names)
        return f"The launch parameters are assumed to be {values}; the real launch may differ."


def _default(default: Any, shape: PacketShape) -> Any:
    """A parameter's default for this packet (None when it depends on what is not known)."""
    if default == OUTPUT_DTYPE:
        return shape.output_dtype
    if default == ENGINE_CHOICE:
        return None if shape.geometry is None else launch.paged_simdgroups(shape.geometry)
    return default


def _run(kernel: str, values: Mapping[str, Any], geometry: Geometry | None
         ) -> tuple[Run | None, NotEmulated | None, Mapping[str, Any] | None]:
    """(what runs, why nothing runs, what mlx_sdpa resolved to) for resolved `values`."""
    if geometry is None:
        return None, None, None
    hypotheses = Hypotheses(values.get("exp", EXACT), FMA_VALUES[values.get("fma", "off")],
                            values.get("simd", BUTTERFLY))
    resolved = None
    if kernel == MLX_SDPA:
        chosen = launch.mlx_launch(values["device"], geometry)
        if isinstance(chosen, NotEmulated):
            return None, chosen, None
        kernel, blocks = chosen
        resolved = MappingProxyType({"kernel": kernel, "blocks": blocks})
        run = Run(kernel, blocks=blocks, partial_dtype=values["partialDType"], hypotheses=hypotheses)
    elif kernel == MLX_TWO_PASS:
        run = Run(kernel, blocks=values["blocks"], partial_dtype=values["partialDType"], hypotheses=hypotheses)
    elif kernel == PAGED_TWO_PASS:
        if launch.paged_simdgroups(geometry) is None:
            return None, launch.paged_refusal(geometry), None
        run = Run(kernel, partition_tokens=values["partitionTokens"], simdgroups=values["simdgroups"],
                  partial_dtype=values["partialDType"], hypotheses=hypotheses)
    else:
        run = Run(kernel, hypotheses=hypotheses)
    refusal = launch.memory_refusal(geometry, run.parallel_blocks(geometry))
    return (None, refusal, resolved) if refusal is not None else (run, None, resolved)


def resolve(requested: RequestedId, shape: PacketShape) -> EmulationSpec:
    """Every parameter's value, the normalised id (only non-default parameters, in the kernel's order) and what runs.

    A default that follows the packet (the output dtype, the engine's simdgroups) is
    unknown when the packet's tensors were not admitted; a value given for it is then
    kept in the id.
    """
    kernel = KERNELS[requested.kernel]
    given = dict(requested.given)
    values, shown, names = {}, [], []
    for parameter in kernel.parameters:
        default = _default(parameter.default, shape)
        value = given.get(parameter.name, default)
        values[parameter.name] = value
        if parameter.name in given and value != default:
            shown.append(f"{parameter.name}={value}")
            names.append(parameter.name)
    normalised = kernel.name + (f"({','.join(shown)})" if shown else "")
    run, not_emulated, resolved = _run(kernel.name, values, shape.geometry)
    return EmulationSpec(kernel.name, MappingProxyType(values), normalised, tuple(names), run, not_emulated, resolved)


def resolve_all(request: str | Iterable[str], shape: PacketShape) -> tuple[EmulationSpec, ...]:
    """The distinct resolved emulations of a request, each at the position of its first occurrence."""
    specs: dict[str, EmulationSpec] = {}
    for requested in expand(request):
        spec = resolve(requested, shape)
        specs.setdefault(spec.id, spec)
    return tuple(specs.values())


def normalised_ids(request: str | Iterable[str], shape: PacketShape) -> tuple[str, ...]:
    """The normalised ids of a request in the order they run (emulationsRequested)."""
    return tuple(spec.id for spec in resolve_all(request, shape))
