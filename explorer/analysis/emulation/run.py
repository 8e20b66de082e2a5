"""Runs resolved emulations on promoted inputs (each kernel's steps shared where they coincide) and scores them against an output; no I/O, no UI."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from explorer.analysis.emulation import arithmetic
from explorer.analysis.emulation.kernels import (
    MLX_TWO_PASS,
    PAGED_TWO_PASS,
    SINGLE_PASS,
    EmulationSpec,
    resolve_all,
)
from explorer.analysis.metrics import compare, readonly, ulp_distance
from explorer.analysis.result import Emulation
from explorer.packet.dtypes import narrow, promote, round_bits

VS_OUTPUT_LABEL = "output vs emulation {id} (a counterfactual, not the reference)"
VS_REFERENCE_LABEL = "emulation {id} vs primary reference"


@dataclass(frozen=True)
class EmulationInputs:
    """What every kernel reads: promoted q [QH, D], K / V [KVH, T, D] (float32), the float32 scale and the dtypes."""

    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    scale: np.float32
    query_dtype: str
    kv_dtype: str
    output_dtype: str


@dataclass(frozen=True)
class EmulatedOutput:
    """One emulation's output: values float32 [QH, D] and native output-dtype bits (NaN rows: heads not emulated)."""

    spec: EmulationSpec
    output_dtype: str
    values: np.ndarray
    bits: np.ndarray


class _Steps:
    """The steps one run shares between emulations: scores per query rounding and block states per layout."""

    def __init__(self, inputs: EmulationInputs) -> None:
        self.inputs = inputs
        kv_heads = inputs.keys.shape[0]
        self.group = inputs.queries.shape[0] // kv_heads
        ones = np.ones((*inputs.values.shape[:2], 1), dtype=np.float32)
        self.rows = np.ascontiguousarray(np.concatenate([inputs.values, ones], axis=2).transpose(1, 0, 2))
        self._memo: dict[tuple, Any] = {}

    def _memoised(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def _grouped(self, queries: np.ndarray) -> np.ndarray:
        return queries.reshape(self.inputs.keys.shape[0], self.group, -1)

    def natural_scores(self) -> np.ndarray:
        """dot(s * q, K) (mlx_two_pass, single_pass)."""
        def make():
            return arithmetic.dot(self._grouped(self.inputs.scale * self.inputs.queries), self.inputs.keys)
        return self._memoised(("natural",), make)

    def exp2_scores(self) -> np.ndarray:
        """dot(q' * s, K) * float32(log2 e), q' = q rounded to the keys' dtype when the dtypes differ (paged)."""
        inputs = self.inputs
        narrowed = inputs.query_dtype != inputs.kv_dtype
        def make():
            if narrowed:
                queries = narrow(inputs.queries, inputs.kv_dtype) * inputs.scale
                scores = arithmetic.dot(self._grouped(queries), inputs.keys)
            else:
                scores = self.natural_scores()  # q * s and s * q are the same float32 product
            return scores * arithmetic.LOG2E
        return self._memoised(("exp2", narrowed), make)

    def blocks(self, kind: str, size: int) -> tuple[np.ndarray, np.ndarray]:
        """(m, state) of every block of layout `kind` ("mlx" blocks or "paged" partition tokens) of `size`."""
        tokens = self.inputs.keys.shape[1]
        def make():
            if kind == "paged":
                return arithmetic.online_softmax(self.exp2_scores(), self.rows,
                                                 arithmetic.paged_layout(tokens, size), arithmetic.exp2_32)
            return arithmetic.online_softmax(self.natural_scores(), self.rows,
                                             arithmetic.mlx_layout(tokens, size), arithmetic.exp32)
        return self._memoised((kind, size), make)

    def output(self, spec: EmulationSpec) -> np.ndarray:
        """The emulated output before the final rounding, float32 [QH, D]."""
        p = spec.parameters
        if spec.kernel == MLX_TWO_PASS:
            merged = arithmetic.mlx_merge(*self.blocks("mlx", p["blocks"]), p["partialDType"])
        elif spec.kernel == PAGED_TWO_PASS:
            merged = arithmetic.paged_merge(*self.blocks("paged", p["partitionTokens"]), p["partialDType"])
        elif spec.kernel == SINGLE_PASS:
            merged = arithmetic.single_finish(self.blocks("mlx", 1)[1])
        else:
            raise ValueError(f"no arithmetic for kernel {spec.kernel!r}")
        return merged.reshape(self.inputs.queries.shape)


def emulate(inputs: EmulationInputs, specs: Sequence[EmulationSpec], eligible: np.ndarray) -> tuple[EmulatedOutput, ...]:
    """Every emulation of `specs` on `inputs`; heads not `eligible` hold no result (NaN values and NaN bits).

    The array arithmetic runs over every head at once; what it gives for a head not
    eligible (nonfinite inputs) is discarded, never reported.
    """
    steps = _Steps(inputs)
    found = []
    with np.errstate(all="ignore"):
        for spec in specs:
            values = np.where(eligible[:, None], steps.output(spec), np.float32(np.nan)).astype(np.float32)
            bits = round_bits(values, inputs.output_dtype).copy()
            found.append(EmulatedOutput(spec, inputs.output_dtype, readonly(promote(bits, inputs.output_dtype).copy()),
                                        readonly(bits)))
    return tuple(found)


def bit_equal(emulated: EmulatedOutput, output_bits: np.ndarray, eligible: np.ndarray) -> tuple[int, tuple[int | None, ...]]:
    """(global, per head) counts of output elements whose bit pattern equals the emulation's, eligible heads only."""
    per_head = np.count_nonzero(output_bits == emulated.bits, axis=1)
    return (int(per_head[eligible].sum()),
            tuple(int(n) if ok else None for n, ok in zip(per_head, eligible, strict=True)))


def score(emulated: EmulatedOutput, output_values: np.ndarray, output_bits: np.ndarray,
          reference: np.ndarray, eligible: np.ndarray) -> Emulation:
    """The report fields of one emulation against one output [QH, D] (values float32, native bits)."""
    spec = emulated.spec
    global_count, per_head = bit_equal(emulated, output_bits, eligible)
    return Emulation(
        id=spec.id,
        kernel=spec.kernel,
        label=spec.label,
        parameters=MappingProxyType(dict(spec.parameters)),
        assumptions=spec.assumptions(),
        output_dtype=emulated.output_dtype,
        compared=int(np.count_nonzero(eligible)) * output_bits.shape[1],
        bit_equal=global_count,
        bit_equal_per_head=per_head,
        ulp=ulp_distance(output_bits, emulated.bits, emulated.output_dtype, eligible),
        vs_output=compare(VS_OUTPUT_LABEL.format(id=spec.id), output_values, emulated.values, eligible),
        vs_primary_reference=compare(VS_REFERENCE_LABEL.format(id=spec.id), emulated.values, reference, eligible,
                                     actual_computed=True),
        values=emulated.values,
        bits=emulated.bits,
    )


def inputs_from_tensors(tensors: Mapping[str, Any], scale: float) -> EmulationInputs:
    """EmulationInputs of an admitted packet's tensors (NativeTensor records)."""
    return EmulationInputs(
        queries=tensors["queries"].values[0, :, 0, :],
        keys=tensors["storedKeys"].values[0],
        values=tensors["storedValues"].values[0],
        scale=np.float32(scale),
        query_dtype=tensors["queries"].dtype,
        kv_dtype=tensors["storedKeys"].dtype,
        output_dtype=tensors["output"].dtype,
    )


def native_output_bits(emulation_id: str, tensors: Mapping[str, tuple[str, np.ndarray]], scale: float,
                       output_dtype: str) -> np.ndarray:
    """The emulated output's native bits [1, QH, 1, D] for native inputs, e.g. to write a packet's output.

    `tensors` maps "queries", "storedKeys", "storedValues" to (dtype, bits) in the
    packet's 4-D shapes (explorer.samples.PacketSpec.tensors); `scale` is the float32
    scale. Every head is emulated (nonfinite inputs give what the arithmetic gives).
    """
    (query_dtype, q), (kv_dtype, k), (_, v) = (tensors[name] for name in ("queries", "storedKeys", "storedValues"))
    with np.errstate(invalid="ignore"):
        inputs = EmulationInputs(promote(np.asarray(q), query_dtype)[0, :, 0, :], promote(np.asarray(k), kv_dtype)[0],
                                 promote(np.asarray(v), kv_dtype)[0], np.float32(scale), query_dtype, kv_dtype,
                                 output_dtype)
    (spec,) = resolve_all(emulation_id, output_dtype)
    (emulated,) = emulate(inputs, [spec], np.ones(inputs.queries.shape[0], dtype=bool))
    return emulated.bits.reshape(1, *emulated.bits.shape[:1], 1, -1).copy()


def emulations_for(tensors: Mapping[str, Any], scale: float, eligible: np.ndarray, reference: np.ndarray,
                   request: str | Iterable[str],
                   emulated: Sequence[EmulatedOutput] | None = None) -> tuple[Emulation, ...]:
    """The scored emulations of `request` on one admitted packet (tensors, scale, eligibility, primary reference).

    `emulated`, when given, holds the emulated outputs of `request` already run on inputs
    identical to these (a pair's other side): they are scored, not run again.
    """
    output = tensors["output"]
    if emulated is None:
        emulated = emulate(inputs_from_tensors(tensors, scale), resolve_all(request, output.dtype), eligible)
    return tuple(score(e, output.values[0, :, 0, :], output.bits[0, :, 0, :], reference, eligible) for e in emulated)
