"""Kernel arithmetic emulations and real library runs (docs/emulations.md).

Which kernel's arithmetic reproduces an output, element by element, and what the counts tell apart; no I/O, no
UI.

The next callers use: `resolve_all(request, shape)` (ids -> specs, EmulationIdError for
unknown kernels, parameters or values), `emulate(inputs, specs, eligible)` (run once),
`emulations_for(...)` (scored against one output, with the decisive and baseline counts),
`ranked(...)` (the table order) and `native_output_bits(id, tensors, scale, output_dtype)`; which build wrote
a packet (`--emulate builds`) is in `attribution` (`packet_attribution`, `report_sentence`).
"""

from explorer.analysis.emulation.counts import (
    decisive,
    equal_on,
    head_counts,
    rank_key,
    ranked,
    with_counts,
)
from explorer.analysis.emulation.ids import expand, parse_id
from explorer.analysis.emulation.kernels import (
    DEFAULT_SET,
    DEFAULT_SET_NAME,
    KERNELS,
    MLX_RUN,
    MLX_SDPA,
    MLX_SINGLE_PASS,
    MLX_TWO_PASS,
    MLX_UNFUSED,
    PAGED_TWO_PASS,
    SINGLE_PASS,
    SWEEP,
    SWEEP_NAME,
    EmulationIdError,
)
from explorer.analysis.emulation.run import (
    EmulatedOutput,
    EmulationInputs,
    bit_equal,
    emulate,
    emulations_for,
    inputs_from_tensors,
    native_output_bits,
    reused,
    score,
    shape_of,
)
from explorer.analysis.emulation.spec import (
    EmulationSpec,
    PacketShape,
    normalised_ids,
    resolve,
    resolve_all,
)

__all__ = [
    "DEFAULT_SET",
    "DEFAULT_SET_NAME",
    "KERNELS",
    "MLX_RUN",
    "MLX_SDPA",
    "MLX_SINGLE_PASS",
    "MLX_TWO_PASS",
    "MLX_UNFUSED",
    "PAGED_TWO_PASS",
    "SINGLE_PASS",
    "SWEEP",
    "SWEEP_NAME",
    "EmulatedOutput",
    "EmulationIdError",
    "EmulationInputs",
    "EmulationSpec",
    "PacketShape",
    "bit_equal",
    "decisive",
    "emulate",
    "emulations_for",
    "equal_on",
    "expand",
    "head_counts",
    "inputs_from_tensors",
    "native_output_bits",
    "normalised_ids",
    "parse_id",
    "rank_key",
    "ranked",
    "resolve",
    "resolve_all",
    "reused",
    "score",
    "shape_of",
    "with_counts",
]
