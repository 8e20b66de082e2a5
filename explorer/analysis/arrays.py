"""A packet's six verified tensors as numpy arrays in their native dtype, for MLX, JAX or PyTorch.

Each array views the verified bytes in its own format (bfloat16 as ml_dtypes.bfloat16, imported only here and
only when asked): nothing goes through a float, so every bit pattern comes back as captured, NaN payloads included.
"""

from __future__ import annotations

import numpy as np

from explorer.packet.model import TENSOR_NAMES, Admission

REFUSED_PACKET = "the packet was refused ({codes}): nothing in its tensor files is given out"
UNVERIFIED_TENSORS = "the packet's tensor files did not all verify: there are no arrays to give out"


def native_arrays(admission: Admission) -> dict[str, np.ndarray]:
    """The six tensors by name in packet order, each a read-only view of its verified bits in its native dtype;
    ValueError for a refused packet (naming its codes) or one whose tensors did not verify."""
    if admission.refused:
        codes = ", ".join(dict.fromkeys(problem.code for problem in admission.refusals))
        raise ValueError(REFUSED_PACKET.format(codes=codes))
    if admission.tensors is None:
        raise ValueError(UNVERIFIED_TENSORS)
    import ml_dtypes  # imported only when a caller asks for native arrays: the analysis path never loads it

    dtypes = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
    arrays = {}
    for name in TENSOR_NAMES:
        tensor = admission.tensors[name]
        arrays[name] = tensor.bits.view(dtypes[tensor.dtype])  # the verified bytes themselves: no float involved
        arrays[name].flags.writeable = False
    return arrays
