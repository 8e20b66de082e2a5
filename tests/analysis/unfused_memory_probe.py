"""Run in a subprocess: the resident growth of one mlx_unfused emulation on the issue's packet.

QH 256 / KVH 1 / D 1 / T 173,800, bfloat16 (under 1 MB on disk); argv[1] names the emulation. Prints JSON
with the growth beside unfused_estimate.
"""

import json
import sys

import numpy as np

from explorer.analysis.emulation import EmulationInputs, emulate, resolve_all
from explorer.analysis.emulation.launch import unfused_estimate
from explorer.packet.dtypes import promote
from explorer.samples.packets import synthetic_spec

ISSUE_PACKET = {"qh": 256, "kvh": 1, "tokens": 173_800, "head_dim": 1}
DTYPE = "bfloat16"


def resident(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field + ":"))


def main() -> None:
    spec = synthetic_spec(**ISSUE_PACKET, query_dtype=DTYPE, kv_dtype=DTYPE, output_dtype=DTYPE)
    promoted = {name: promote(bits, dtype) for name, (dtype, bits) in spec.tensors.items()}
    inputs = EmulationInputs(
        promoted["queries"][0, :, 0, :],
        promoted["storedKeys"][0],
        promoted["storedValues"][0],
        np.float32(0.125),
        DTYPE,
        DTYPE,
        DTYPE,
    )
    (emulation,) = resolve_all(sys.argv[1], inputs.shape)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # restart the peak (VmHWM) from the resident size now
    before = resident("VmRSS")
    (emulated,) = emulate(inputs, [emulation], np.ones(ISSUE_PACKET["qh"], dtype=bool))
    grown = resident("VmHWM") - before
    print(
        json.dumps(
            {"grown": grown, "estimate": unfused_estimate(inputs.shape.geometry), "computed": emulated.bits is not None}
        )
    )


if __name__ == "__main__":
    main()
