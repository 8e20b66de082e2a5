"""Kernel arithmetic emulations and real library runs (docs/emulations.md); no I/O, no UI.

Which kernel's arithmetic reproduces an output, element by element, and what the counts tell apart:
`resolve_all` (ids -> specs), `emulate` (run once), `emulations_for` (scored, with the decisive and baseline
counts), `ranked` (the table order), `native_output_bits`; which build wrote a packet is in `attribution`.
"""

from explorer.analysis.emulation.counts import bit_equal as bit_equal
from explorer.analysis.emulation.counts import decisive as decisive
from explorer.analysis.emulation.counts import equal_on as equal_on
from explorer.analysis.emulation.counts import head_counts as head_counts
from explorer.analysis.emulation.counts import rank_key as rank_key
from explorer.analysis.emulation.counts import ranked as ranked
from explorer.analysis.emulation.counts import with_counts as with_counts
from explorer.analysis.emulation.ids import expand as expand
from explorer.analysis.emulation.ids import parse_id as parse_id
from explorer.analysis.emulation.kernels import DEFAULT_SET as DEFAULT_SET
from explorer.analysis.emulation.kernels import DEFAULT_SET_NAME as DEFAULT_SET_NAME
from explorer.analysis.emulation.kernels import KERNELS as KERNELS
from explorer.analysis.emulation.kernels import MLX_TWO_PASS as MLX_TWO_PASS
from explorer.analysis.emulation.kernels import PAGED_TWO_PASS as PAGED_TWO_PASS
from explorer.analysis.emulation.kernels import SWEEP as SWEEP
from explorer.analysis.emulation.kernels import SWEEP_NAME as SWEEP_NAME
from explorer.analysis.emulation.kernels import EmulationIdError as EmulationIdError
from explorer.analysis.emulation.run import EmulatedOutput as EmulatedOutput
from explorer.analysis.emulation.run import EmulationInputs as EmulationInputs
from explorer.analysis.emulation.run import emulate as emulate
from explorer.analysis.emulation.run import emulations_for as emulations_for
from explorer.analysis.emulation.run import inputs_from_tensors as inputs_from_tensors
from explorer.analysis.emulation.run import native_output_bits as native_output_bits
from explorer.analysis.emulation.run import reused as reused
from explorer.analysis.emulation.run import score as score
from explorer.analysis.emulation.run import shape_of as shape_of
from explorer.analysis.emulation.spec import PacketShape as PacketShape
from explorer.analysis.emulation.spec import normalised_ids as normalised_ids
from explorer.analysis.emulation.spec import resolve_all as resolve_all
