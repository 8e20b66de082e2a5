"""Runs resolved emulations on promoted inputs and scores them against an output; no I/O, no UI.

Steps are shared between emulations where they coincide, each dropped after its last use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from types import MappingProxyType
from typing import Any

import numpy as np

from explorer.analysis.emulation import arithmetic, library, unfused
from explorer.analysis.emulation.builds import UPSTREAM
from explorer.analysis.emulation.counts import bit_equal, with_counts
from explorer.analysis.emulation.kernels import (
    MLX_RUN,
    MLX_SINGLE_PASS,
    MLX_TWO_PASS,
    MLX_UNFUSED,
    PAGED_TWO_PASS,
    SINGLE_PASS,
)
from explorer.analysis.emulation.launch import Geometry, NotEmulated, unfused_rows
from explorer.analysis.emulation.spec import EmulationSpec, PacketShape, Run, launch_resolved, resolve_all
from explorer.analysis.metrics import compare, readonly, ulp_distance
from explorer.analysis.result import Emulation, EmulationCounts
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import narrow, promote, round_bits

VS_OUTPUT_LABEL = "output vs emulation {id} (a counterfactual, not the reference)"
VS_REFERENCE_LABEL = "emulation {id} vs primary reference"
ROW_SENTENCES = {
    True: "Row read at token T-1: the incoming K/V row, which differs bitwise from the stored row T-1 on this packet.",
    False: "Row read at token T-1: the incoming K/V row, bitwise equal to the stored row T-1 on this packet.",
}


@record
class EmulationInputs(Record):
    """What every kernel reads: promoted q [QH, D], K / V [KVH, T, D] (float32), the float32 scale, the dtypes and
    the row the paged kernel and a real run read at token T-1 (`incoming_*` [KVH, D]; None: the stored row)."""

    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    scale: np.float32
    query_dtype: str
    kv_dtype: str
    output_dtype: str
    incoming_keys: np.ndarray | None = None
    incoming_values: np.ndarray | None = None

    @property
    def shape(self) -> PacketShape:
        kv_heads, tokens, head_dim = self.keys.shape
        return PacketShape(self.output_dtype, Geometry(len(self.queries), kv_heads, head_dim, tokens), self.kv_dtype)

    @property
    def promoted_dtype(self) -> str:
        """MLX's result_type of q, k and v: their dtype when they agree, else float32."""
        return self.query_dtype if self.query_dtype == self.kv_dtype else "float32"

    def incoming_row(self, stored: np.ndarray, incoming: np.ndarray | None) -> np.ndarray | None:
        """The incoming row when it differs bitwise from the stored row T-1, else None."""
        if incoming is None or np.array_equal(incoming.view(np.uint32), stored[:, -1].view(np.uint32)):
            return None
        return incoming

    @property
    def incoming_differs(self) -> bool:
        return (
            self.incoming_row(self.keys, self.incoming_keys) is not None
            or self.incoming_row(self.values, self.incoming_values) is not None
        )

    def withincoming_row(self, stored: np.ndarray, incoming: np.ndarray | None) -> np.ndarray:
        """`stored` [KVH, T, D] with row T-1 replaced by the incoming row (a copy only when they differ)."""
        different = self.incoming_row(stored, incoming)
        if different is None:
            return stored
        written = stored.copy()
        written[:, -1] = different
        return written


@record
class EmulatedOutput(Record):
    """One emulation's output: values float32 [QH, D] and native bits (NaN rows: heads not emulated; None: none)."""

    spec: EmulationSpec
    output_dtype: str
    values: np.ndarray | None
    bits: np.ndarray | None
    library: Mapping[str, Any] | None = None  # mlx_run: {name, version, device}
    failure: Any = None  # mlx_run: the NotEmulated of a library that is missing or raised
    incoming_read: bool | None = None  # paged_two_pass and mlx_run: the incoming row differed and was read at T-1
    resolved: Mapping[str, Any] | None = None  # mlx_run: what MLX's launch rule runs on the device that ran


def _pass_key(run: Run) -> tuple:
    """The key of a run's first pass (the block states): runs with equal keys share it."""
    h = run.hypotheses
    if run.kernel == PAGED_TWO_PASS:
        return ("paged", run.partition_tokens, run.simdgroups, h.fma, h.simd)
    if run.kernel == SINGLE_PASS:
        return ("single",)
    if run.kernel in (MLX_UNFUSED, MLX_RUN):
        return (run.kernel, run.device, h.exp, h.simd)
    blocks = arithmetic.LANES if run.kernel == MLX_SINGLE_PASS else run.blocks
    return ("mlx", blocks, run.gqa_heads_per_simdgroup, h.exp, h.fma, h.simd)


class _Steps:
    """The steps shared between emulations (scores, block states), each forgotten after its last use."""

    def __init__(self, inputs: EmulationInputs, runs: Sequence[Run]) -> None:
        self.inputs = inputs
        kv_heads = inputs.keys.shape[0]
        self.group = inputs.queries.shape[0] // kv_heads
        ones = np.ones((*inputs.values.shape[:2], 1), dtype=np.float32)
        self.rows = np.ascontiguousarray(np.concatenate([inputs.values, ones], axis=2).transpose(1, 0, 2))
        self._paged_rows: np.ndarray | None = None
        self._memo: dict[tuple, Any] = {}
        self._uses = Counter(key for run in runs for key in (_pass_key(run), self._scores_key(run)))

    def _scores_key(self, run: Run) -> tuple:
        if run.kernel in (MLX_UNFUSED, MLX_RUN):
            return ("own scores",)  # computes its own scores
        h = run.hypotheses
        paged = run.kernel == PAGED_TWO_PASS
        narrowed = paged and self.inputs.query_dtype != self.inputs.kv_dtype
        return ("scores", narrowed, paged and self.inputs.incoming_differs, h.fma, h.simd)

    def paged_rows(self) -> np.ndarray:
        """The value rows the paged kernel reads: row T-1 from the incoming values."""
        inputs = self.inputs
        if inputs.incoming_row(inputs.values, inputs.incoming_values) is None:
            return self.rows
        if self._paged_rows is None:
            self._paged_rows = self.rows.copy()
            self._paged_rows[-1, :, :-1] = inputs.incoming_values
        return self._paged_rows

    def _memoised(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def _used(self, key: tuple) -> None:
        self._uses[key] -= 1
        if self._uses[key] <= 0:
            self._memo.pop(key, None)

    def order(self, specs: Sequence[EmulationSpec]) -> list[int]:
        """The indices of `specs` in run order: those sharing scores, then a first pass, together."""

        def first_seen(keys: list) -> list[int]:
            seen: dict[tuple, int] = {}
            return [seen.setdefault(key, len(seen)) for key in keys]

        runs = [spec.run for spec in specs]
        scores = first_seen([() if run is None else self._scores_key(run) for run in runs])
        passes = first_seen([() if run is None else _pass_key(run) for run in runs])
        return sorted(range(len(specs)), key=lambda index: (scores[index], passes[index], index))

    def _scores(self, run: Run) -> np.ndarray:
        """dot(s * q, K), or dot(q' * s, K) with q' the queries rounded to the keys' dtype (paged, dtypes differ)."""
        key = self._scores_key(run)
        inputs = self.inputs

        def make():
            queries = narrow(inputs.queries, inputs.kv_dtype) if key[1] else inputs.queries
            grouped = (inputs.scale * queries).reshape(inputs.keys.shape[0], self.group, -1)
            scores = arithmetic.dot(grouped, inputs.keys, run.hypotheses)
            if key[2]:  # the paged kernel reads token T-1 from the incoming keys
                incoming = inputs.withincoming_row(inputs.keys, inputs.incoming_keys)[:, -1:]
                scores[:, :, -1:] = arithmetic.dot(grouped, incoming, run.hypotheses)
            return scores

        return self._memoised(key, make)

    def _states(self, run: Run) -> tuple[np.ndarray, np.ndarray]:
        """(m, state) of every block of the run's first pass."""
        tokens = self.inputs.keys.shape[1]
        h = run.hypotheses

        def make():
            scores, exp = self._scores(run), arithmetic.natural_exp(h)
            if run.kernel == PAGED_TWO_PASS:
                layout = arithmetic.paged_layout(tokens, run.partition_tokens, run.simdgroups)
                rows = self.paged_rows()
                return arithmetic.online_softmax(scores, rows, layout, arithmetic.exp2_32, h.fma, arithmetic.LOG2E)
            blocks = _pass_key(run)[1] if run.kernel != SINGLE_PASS else 1
            if run.gqa_heads_per_simdgroup:
                layout = arithmetic.gqa_layout(tokens, blocks, run.gqa_heads_per_simdgroup)
                m, state = arithmetic.online_softmax(scores, self.rows, layout, exp, h.fma)
                return arithmetic.gqa_block_merge(m, state, h)
            return arithmetic.online_softmax(scores, self.rows, arithmetic.block_layout(tokens, blocks), exp, h.fma)

        return self._memoised(_pass_key(run), make)

    def _unfused(self, run: Run) -> np.ndarray:
        """mlx_unfused's output [KVH, g, D] rounded to the promoted dtype, `unfused_rows` rows of one KV head at a
        time (every step works within a row, so the chunks give the bits of the whole)."""
        inputs, h = self.inputs, run.hypotheses
        promoted = inputs.promoted_dtype  # at least as wide as every input dtype: casting the inputs to it is exact
        grouped = inputs.queries.reshape(inputs.keys.shape[0], self.group, -1)
        out = np.empty(grouped.shape, dtype=np.float32)
        rows = unfused_rows(inputs.shape.geometry)
        for head in range(grouped.shape[0]):
            keys, values = inputs.keys[head : head + 1], inputs.values[head : head + 1]
            for lo in range(0, self.group, rows):
                part = (slice(head, head + 1), slice(lo, lo + rows))
                out[part] = unfused.unfused(grouped[part], keys, values, inputs.scale, promoted, run.device, h)
        return arithmetic.stored(out, promoted)

    def output(self, run: Run) -> np.ndarray:
        """The emulated output before the final rounding, float32 [QH, D]."""
        if run.kernel == MLX_UNFUSED:
            out = self._memoised(_pass_key(run), lambda: self._unfused(run))
            self._used(_pass_key(run))
            return out.reshape(self.inputs.queries.shape)
        m, state = self._states(run)
        h = run.hypotheses
        if run.kernel == MLX_TWO_PASS:
            merged = arithmetic.mlx_merge(m, state, run.partial_dtype, h)
        elif run.kernel == MLX_SINGLE_PASS:
            merged = arithmetic.mlx_single_merge(m, state, h)
        elif run.kernel == PAGED_TWO_PASS:
            merged = arithmetic.paged_merge(m, state, run.partial_dtype, h.fma)
        else:
            merged = arithmetic.single_finish(state)
        self._used(_pass_key(run))
        self._used(self._scores_key(run))
        return merged.reshape(self.inputs.queries.shape)


def _rounded_output(
    spec: EmulationSpec, inputs: EmulationInputs, raw: np.ndarray, eligible: np.ndarray, **known: Any
) -> EmulatedOutput:
    """The output of `raw` float32 [QH, D] on the eligible heads, rounded to the output dtype."""
    values = np.where(eligible[:, None], raw, np.float32(np.nan)).astype(np.float32)
    bits = round_bits(values, inputs.output_dtype).copy()
    output = readonly(promote(bits, inputs.output_dtype).copy())
    return EmulatedOutput(spec, inputs.output_dtype, output, readonly(bits), **known)


def _library_output(inputs: EmulationInputs, spec: EmulationSpec, eligible: np.ndarray) -> EmulatedOutput:
    """mlx_run: the installed library on the packet's inputs, row T-1 from the incoming K/V as the cache holds it."""
    found = library.run(
        inputs.queries,
        inputs.withincoming_row(inputs.keys, inputs.incoming_keys),
        inputs.withincoming_row(inputs.values, inputs.incoming_values),
        inputs.scale,
        (inputs.query_dtype, inputs.kv_dtype),
        spec.run.device,
    )
    if found.values is None:
        return EmulatedOutput(spec, inputs.output_dtype, None, None, failure=found.not_emulated)
    return _rounded_output(
        spec,
        inputs,
        found.values,
        eligible,
        library=found.library,
        incoming_read=inputs.incoming_differs,
        resolved=launch_resolved(found.launch_device, inputs.shape.geometry, UPSTREAM),
    )


def emulate(
    inputs: EmulationInputs,
    specs: Sequence[EmulationSpec],
    eligible: np.ndarray,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[EmulatedOutput, ...]:
    """Every emulation of `specs` on `inputs`, heads not `eligible` NaN; `progress(done, total)` after each."""
    steps = _Steps(inputs, [spec.run for spec in specs if spec.run is not None and spec.kernel != MLX_RUN])
    found: dict[int, EmulatedOutput] = {}
    with np.errstate(all="ignore"):
        for done, index in enumerate(steps.order(specs), start=1):
            spec = specs[index]
            if spec.run is None:
                found[index] = EmulatedOutput(spec, inputs.output_dtype, None, None)
            elif spec.kernel == MLX_RUN:
                found[index] = _library_output(inputs, spec, eligible)
            else:
                read = inputs.incoming_differs if spec.kernel == PAGED_TWO_PASS else None
                found[index] = _rounded_output(spec, inputs, steps.output(spec.run), eligible, incoming_read=read)
            if progress is not None:
                progress(done, len(specs))
    return tuple(found[index] for index in range(len(specs)))


def reused(spec: EmulationSpec, scored: Emulation) -> EmulatedOutput:
    """The emulated output a scored entry holds (to score another output on identical inputs without running again)."""
    failure = None
    if spec.not_emulated is None and scored.not_emulated is not None:
        failure = NotEmulated(scored.not_emulated_code, scored.not_emulated)
    read = next((flag for flag, sentence in ROW_SENTENCES.items() if sentence in scored.assumptions), None)
    resolved = scored.resolved if scored.library is not None else None
    return EmulatedOutput(
        spec, scored.output_dtype, scored.values, scored.bits, scored.library, failure, read, resolved
    )


def score(
    emulated: EmulatedOutput,
    output_values: np.ndarray,
    output_bits: np.ndarray,
    reference: np.ndarray,
    eligible: np.ndarray,
) -> Emulation:
    """The report fields of one emulation against one output [QH, D] (values float32, native bits)."""
    spec = emulated.spec
    refusal = spec.not_emulated or emulated.failure
    assumptions = spec.assumptions()
    if emulated.incoming_read is not None:
        assumptions += (ROW_SENTENCES[emulated.incoming_read],)
    common = {
        "id": spec.id,
        "kernel": spec.kernel,
        "label": spec.label,
        "parameters": MappingProxyType(dict(spec.parameters)),
        "assumptions": assumptions,
        "output_dtype": emulated.output_dtype,
        "compared": int(np.count_nonzero(eligible)) * output_bits.shape[1],
        "resolved": spec.resolved if emulated.resolved is None else emulated.resolved,
        "not_emulated": None if refusal is None else refusal.message,
        "not_emulated_code": None if refusal is None else refusal.code,
        "library": emulated.library,
    }
    if emulated.bits is None:
        return Emulation(**{**dict.fromkeys(item.name for item in fields(Emulation)), **common})
    global_count, per_head = bit_equal(emulated.bits, output_bits, eligible)
    return Emulation(
        **common,
        bit_equal=global_count,
        bit_equal_per_head=per_head,
        ulp=ulp_distance(output_bits, emulated.bits, emulated.output_dtype, eligible),
        vs_output=compare(VS_OUTPUT_LABEL.format(id=spec.id), output_values, emulated.values, eligible),
        vs_primary_reference=compare(
            VS_REFERENCE_LABEL.format(id=spec.id), emulated.values, reference, eligible, actual_computed=True
        ),
        values=emulated.values,
        bits=emulated.bits,
    )


def inputs_from_tensors(tensors: Mapping[str, Any], scale: float) -> EmulationInputs:
    """EmulationInputs of an admitted packet's tensors (NativeTensor records)."""
    queries, keys, values = (tensors[name] for name in ("queries", "storedKeys", "storedValues"))
    incoming = (tensors[name].values[0, :, 0, :] for name in ("incomingKeys", "incomingValues"))
    dtypes = (queries.dtype, keys.dtype, tensors["output"].dtype)
    return EmulationInputs(
        queries.values[0, :, 0, :], keys.values[0], values.values[0], np.float32(scale), *dtypes, *incoming
    )


def shape_of(tensors: Mapping[str, Any] | None) -> PacketShape:
    """The PacketShape of admitted tensors (NativeTensor records), or an unknown one (None: not admitted)."""
    if tensors is None:
        return PacketShape(None, None)
    _, kv_heads, tokens, head_dim = tensors["storedKeys"].shape
    return PacketShape(
        tensors["output"].dtype,
        Geometry(tensors["queries"].shape[1], kv_heads, head_dim, tokens),
        tensors["storedKeys"].dtype,
    )


def native_output_bits(
    emulation_id: str, tensors: Mapping[str, tuple[str, np.ndarray]], scale: float, output_dtype: str
) -> np.ndarray:
    """The emulated output's native bits [1, QH, 1, D] of every head for native inputs ({name: (dtype, bits)} in
    the packet's shapes, the incoming rows optional), e.g. to write a packet's output; ValueError without numbers."""
    (query_dtype, q), (kv_dtype, k), (_, v) = (tensors[name] for name in ("queries", "storedKeys", "storedValues"))
    incoming = [
        promote(np.asarray(tensors[name][1]), kv_dtype)[0, :, 0, :] if name in tensors else None
        for name in ("incomingKeys", "incomingValues")
    ]
    with np.errstate(invalid="ignore"):
        queries = promote(np.asarray(q), query_dtype)[0, :, 0, :]
        keys, values = (promote(np.asarray(bits), kv_dtype)[0] for bits in (k, v))
        inputs = EmulationInputs(
            queries, keys, values, np.float32(scale), query_dtype, kv_dtype, output_dtype, *incoming
        )
    (spec,) = resolve_all(emulation_id, inputs.shape)
    if spec.run is None:
        raise ValueError(f"{spec.id} is not emulated on this geometry: {spec.not_emulated.message}")
    (emulated,) = emulate(inputs, [spec], np.ones(inputs.queries.shape[0], dtype=bool))
    if emulated.bits is None:
        raise ValueError(f"{spec.id} gave no numbers: {emulated.failure.message}")
    return emulated.bits.reshape(1, *emulated.bits.shape[:1], 1, -1).copy()


def emulations_for(
    tensors: Mapping[str, Any],
    scale: float,
    eligible: np.ndarray,
    reference: np.ndarray,
    rounded_bits: np.ndarray,
    request: str | Iterable[str],
    emulated: Sequence[EmulatedOutput] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[tuple[Emulation, ...], EmulationCounts]:
    """The scored emulations of `request` on one admitted packet, in request order, and their counts against the
    baseline `rounded_bits`; `emulated`: outputs already run on identical inputs, scored, not run again."""
    output = tensors["output"]
    if emulated is None:
        emulated = emulate(
            inputs_from_tensors(tensors, scale), resolve_all(request, shape_of(tensors)), eligible, progress
        )
    output_bits = output.bits[0, :, 0, :]
    scored = tuple(score(e, output.values[0, :, 0, :], output_bits, reference, eligible) for e in emulated)
    return with_counts(scored, output_bits, rounded_bits, eligible)
