"""Kernel arithmetic emulations and real library runs (docs/emulations.md); no I/O, no UI.

Which kernel's arithmetic reproduces an output, element by element, and what the counts tell apart:
`resolve_all` (ids -> specs), `emulate` (run once), `emulations_for` (scored, with the decisive and baseline
counts), `ranked` (the table order), `native_output_bits`; which build wrote a packet is in `attribution`.
"""

from explorer.analysis.emulation.counts import bit_equal, decisive, equal_on, head_counts, rank_key, ranked, with_counts
from explorer.analysis.emulation.ids import expand, parse_id
from explorer.analysis.emulation.kernels import (
    DEFAULT_SET,
    DEFAULT_SET_NAME,
    KERNELS,
    MLX_TWO_PASS,
    PAGED_TWO_PASS,
    SWEEP,
    SWEEP_NAME,
    EmulationIdError,
)
from explorer.analysis.emulation.run import (
    EmulatedOutput,
    EmulationInputs,
    emulate,
    emulations_for,
    inputs_from_tensors,
    native_output_bits,
    reused,
    score,
    shape_of,
)
from explorer.analysis.emulation.spec import PacketShape, normalised_ids, resolve_all

__all__ = [
    "DEFAULT_SET",
    "DEFAULT_SET_NAME",
    "KERNELS",
    "MLX_TWO_PASS",
    "PAGED_TWO_PASS",
    "SWEEP",
    "SWEEP_NAME",
    "EmulatedOutput",
    "EmulationIdError",
    "EmulationInputs",
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
    "resolve_all",
    "reused",
    "score",
    "shape_of",
    "with_counts",
]
