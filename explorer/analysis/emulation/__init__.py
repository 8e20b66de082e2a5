"""Kernel arithmetic emulations (emulation-v1): which kernel's arithmetic reproduces an output, element by element; no I/O, no UI.

The next callers use: `resolve_all(request, output_dtype)` (ids -> specs, EmulationIdError
for unknown kernels, parameters or values), `emulate(inputs, specs, eligible)` (run once),
`score(...)` / `bit_equal(...)` (against one output; a pair scores both sides), and
`native_output_bits(id, tensors, scale, output_dtype)` (a sample's output bits).
"""

from explorer.analysis.emulation.kernels import (
    DEFAULT_SET,
    DEFAULT_SET_NAME,
    KERNELS,
    MLX_TWO_PASS,
    PAGED_TWO_PASS,
    SINGLE_PASS,
    EmulationIdError,
    EmulationSpec,
    expand,
    normalised_ids,
    parse_id,
    resolve,
    resolve_all,
)
from explorer.analysis.emulation.run import (
    EmulatedOutput,
    EmulationInputs,
    bit_equal,
    emulate,
    emulations_for,
    inputs_from_tensors,
    native_output_bits,
    score,
)

__all__ = [
    "DEFAULT_SET", "DEFAULT_SET_NAME", "KERNELS", "MLX_TWO_PASS", "PAGED_TWO_PASS", "SINGLE_PASS", "EmulationIdError", "EmulationSpec", "expand", "normalised_ids", "parse_id",
    "resolve", "resolve_all", "EmulatedOutput", "EmulationInputs", "bit_equal", "emulate", "emulations_for",
    "inputs_from_tensors", "native_output_bits", "score",
]
