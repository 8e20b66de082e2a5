"""A packet's six verified tensors as numpy arrays in their native dtype, for MLX, JAX or PyTorch.

`native_arrays(admission)` views each tensor's verified bytes (NativeTensor.bits) as its own format: float32
as numpy.float32, float16 as numpy.float16 and bfloat16 as ml_dtypes.bfloat16. Nothing is converted through a
float, so every bit pattern comes back as captured, NaN payloads and signaling NaNs included. ml_dtypes is
imported only here, when a caller asks (`Analysis.arrays()`); the analysis never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.packet.model import TENSOR_NAMES

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np

    from explorer.packet.model import Admission

REFUSED_PACKET = "the packet was refused ({codes}): nothing in its tensor files is given out"
UNVERIFIED_TENSORS = "the packet's tensor files did not all verify: there are no arrays to give out"


def native_dtypes() -> Mapping[str, np.dtype]:
    """The numpy dtype of each packet format; imports ml_dtypes (its bfloat16)."""
    import ml_dtypes  # imported only when a caller asks for native arrays: the analysis path never loads it
    import numpy as np

    return {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def native_arrays(admission: Admission) -> dict[str, np.ndarray]:
    """The six tensors by name in packet order, each a read-only view of its verified bits in its native dtype.

    Raises ValueError naming the refusal codes for a refused packet, and for one whose tensors did not verify.
    """
    if admission.refused:
        codes = ", ".join(dict.fromkeys(problem.code for problem in admission.refusals))
        raise ValueError(REFUSED_PACKET.format(codes=codes))
    if admission.tensors is None:
        raise ValueError(UNVERIFIED_TENSORS)
    dtypes = native_dtypes()
    arrays = {}
    for name in TENSOR_NAMES:
        tensor = admission.tensors[name]
        arrays[name] = tensor.bits.view(dtypes[tensor.dtype])  # the verified bytes themselves: no float involved
        arrays[name].flags.writeable = False
    return arrays
