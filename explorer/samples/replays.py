"""The files of synthetic operator replay runs made from a sample packet's files; returns bytes.

The arms are the explorer's own kernel emulations (docs/replay.md, Samples): nativeSDPA `mlx_two_pass`, both
paged arms `paged_two_pass`, their readback the packet's K/V bytes. `result.json` is written as Apple's JSON
writer writes it, `analysis.json` as the tool's collector does, against the tool's FP32 reference (float64,
rounded once: not the explorer's float32 reference bit for bit).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping

import numpy as np

from explorer.analysis.blocks import comparison_block
from explorer.analysis.emulation import native_output_bits
from explorer.analysis.metrics import compare
from explorer.analysis.reference import attend
from explorer.foundations.record import Record, record
from explorer.packet.dtypes import BITS_DTYPE, ITEM_SIZE, narrow, promote, round_bits
from explorer.packet.files import PACKET_JSON
from explorer.packet.model import TENSOR_NAMES
from explorer.replay.checks import ANALYSIS_SCHEMA, INPUT_SCHEMA, REPLAY_SELECTION, RESULT_SCHEMA
from explorer.replay.model import ARMS, EXPECTED_DISPATCH, NATIVE, PAGE_SIZE, SEGMENTED, SEGMENTED_TWO_FROM_TOKENS
from explorer.samples.writer import tensor_entry

ARM_EMULATIONS = {NATIVE: "mlx_two_pass", "pagedFixed": "paged_two_pass", SEGMENTED: "paged_two_pass"}
PARTITION_TOKENS = 256  # paged_two_pass's default partition
FIRST_PAGE_ID = {"pagedFixed": 1, SEGMENTED: 4097}  # the arms' physical pages, counted up from these
ARM_SECONDS = {NATIVE: 0.412, "pagedFixed": 0.538, SEGMENTED: 0.561}
FAILED_EXIT_CODE = 1
FAILURE_TEXT = "pagedSegmented exited with status 1 (synthetic failure)"
TOOL_BINARY = b"synthetic operator replay tool"
MIB = 1 << 20
POOL_MINIMUM_BYTES = 8 * MIB
SPARE_PAGES = 64
ALLOCATION_MARGIN_BYTES = 16 * MIB
SEGMENT_TARGET_PAGES = 257
SAME_INPUT_PAIRS = (("pagedFixed", NATIVE), (SEGMENTED, NATIVE), (SEGMENTED, "pagedFixed"))
TOOL_LIMITATION = "Synthetic run made by the explorer: no GPU ran."


@record
class RunVariant(Record):
    """What differs between the sample runs: a failed arm or a readback fault."""

    failed_arm: str | None = None
    readback_fault_arm: str | None = None  # its storedKeys read back with the last row's first element flipped


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pretty(value: object) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode()


def _apple(value: object) -> bytes:
    """JSON as Apple's JSONSerialization writes it pretty-printed with sorted keys."""
    text = json.dumps(value, indent=2, sort_keys=True, separators=(",", " : "))
    return (text.replace("/", "\\/") + "\n").encode()


def _geometry(descriptor: Mapping, tensors: Mapping[str, bytes]) -> dict[str, int]:
    """input.json's geometry as the replay tool plans it."""
    _, query_heads, _, head_dim = descriptor["tensors"]["queries"]["shape"]
    _, kv_heads, length, _ = descriptor["tensors"]["storedKeys"]["shape"]
    input_bytes = sum(len(tensors[name]) for name in TENSOR_NAMES[:-1])
    page_bytes = 2 * kv_heads * PAGE_SIZE * head_dim * ITEM_SIZE[descriptor["tensors"]["storedKeys"]["dtype"]]
    pool = max(POOL_MINIMUM_BYTES, (math.ceil(length / PAGE_SIZE) + SPARE_PAGES) * page_bytes * 2)
    return {
        "queryHeads": query_heads,
        "kvHeads": kv_heads,
        "length": length,
        "headDim": head_dim,
        "inputBytes": input_bytes,
        "pageSize": PAGE_SIZE,
        "poolBudgetBytes": pool,
        "segmentTargetBytes": page_bytes * SEGMENT_TARGET_PAGES,
        "allocationBoundBytes": input_bytes * 6 + pool * 2 + ALLOCATION_MARGIN_BYTES,
    }


def _input(packet_files: Mapping[str, bytes]) -> tuple[dict, dict[str, bytes]]:
    """input.json's value and the staged tensor files, from the packet's files."""
    descriptor = json.loads(packet_files[PACKET_JSON])
    snapshot = json.loads(packet_files[descriptor["metadata"]["file"]])
    record = snapshot["records"][0]
    staged = {name: packet_files[descriptor["tensors"][name]["file"]] for name in TENSOR_NAMES}
    value = {
        "schema": INPUT_SCHEMA,
        "packetSHA256": _sha256(packet_files[PACKET_JSON]),
        "metadataSHA256": descriptor["metadata"]["sha256"],
        "identity": descriptor["identity"],
        "selection": {key: record[key] for key in REPLAY_SELECTION},
        "sampleOutcome": snapshot["sampleOutcome"],
        "scaleBits": record["scaleBits"],
        "geometry": _geometry(descriptor, staged),
        "tensors": {name: {**descriptor["tensors"][name], "file": f"{name}.bin"} for name in TENSOR_NAMES},
    }
    return value, staged


def _arm_files(
    arm: str,
    value: dict,
    input_sha256: str,
    tensors: Mapping[str, tuple[str, np.ndarray]],
    outputs: Mapping[str, np.ndarray],
    readback_fault: bool,
) -> dict[str, bytes]:
    """ARM/result.json and the tensor files it names."""
    length, paged = value["geometry"]["length"], arm != NATIVE
    written = {"output": (tensors["queries"][0], outputs[ARM_EMULATIONS[arm]])}
    if paged:
        for name in ("storedKeys", "storedValues"):
            dtype, bits = tensors[name]
            written[name] = (dtype, bits.copy())
        if readback_fault:
            written["storedKeys"][1][0, -1, -1, 0] ^= 1  # last row (KV head KVH-1, token T-1), channel 0
    data = {
        name: np.ascontiguousarray(bits, dtype=BITS_DTYPE[dtype]).tobytes() for name, (dtype, bits) in written.items()
    }
    first_page = FIRST_PAGE_ID.get(arm, 0)
    result = {
        "schema": RESULT_SCHEMA,
        "inputSHA256": input_sha256,
        "arm": arm,
        "dispatch": EXPECTED_DISPATCH[arm],
        "kernelOutputDType": tensors["storedKeys" if paged else "queries"][0],
        "offset": length,
        "segmentCount": (2 if length > SEGMENTED_TWO_FROM_TOKENS else 1) if arm == SEGMENTED else 0,
        "pageTable": list(range(first_page, first_page + math.ceil(length / PAGE_SIZE))) if paged else [],
        "partitionTokens": PARTITION_TOKENS if paged else None,
        "partitionGeometrySource": "pinned/partition-rung" if paged else "mlx/fused-sdpa",
        "geometry": value["geometry"],
        "tensors": {
            name: tensor_entry(f"{name}.bin", dtype, list(bits.shape), data[name])
            for name, (dtype, bits) in written.items()
        },
    }
    files = {f"{arm}/result.json": _apple(result)}
    files.update((f"{arm}/{name}.bin", payload) for name, payload in data.items())
    return files


def tool_reference(
    tensors: Mapping[str, tuple[str, np.ndarray]], scale: float, queries: np.ndarray | None = None
) -> np.ndarray:
    """The tool's FP32 reference [QH, D]: the attention in float64 (of `queries` when given), rounded once."""
    promoted = {name: promote(bits, dtype) for name, (dtype, bits) in tensors.items()}
    query = promoted["queries"][0, :, 0, :] if queries is None else queries
    keys, values, eligible = promoted["storedKeys"][0], promoted["storedValues"][0], np.ones(query.shape[0], dtype=bool)
    return attend(query, keys, values, scale, eligible, np.float64).reference.astype(np.float32)


def analysis_document(
    value: dict,
    input_sha256: str,
    tensors: Mapping[str, tuple[str, np.ndarray]],
    scale: float,
    arm_outputs: Mapping[str, np.ndarray],
    reference: np.ndarray,
) -> dict:
    """The tool's analysis.json as its collector writes it (without the receipts), against its FP32 `reference`:
    each arm's output (native bits in `arm_outputs`) against it, then the arms against each other."""
    dtype, queries = tensors["queries"]
    kv_dtype = tensors["storedKeys"][0]
    group = queries.shape[1] // tensors["storedKeys"][1].shape[1]
    eligible = np.ones(reference.shape[0], dtype=bool)
    near = promote(round_bits(reference, dtype), dtype)
    narrowed = None
    if dtype == "float32" and kv_dtype != "float32":
        narrowed = tool_reference(tensors, scale, narrow(promote(queries, dtype)[0, :, 0, :], kv_dtype))
    values = {arm: promote(bits, dtype)[0, :, 0, :] for arm, bits in arm_outputs.items()}

    def block(actual: np.ndarray, against: np.ndarray) -> dict:
        return comparison_block(compare("tool", actual, against, eligible), group)

    arms = {}
    for arm, actual in values.items():
        entry = {
            "originalQueryReference": block(actual, reference),
            "referenceRoundedToOutputDType": block(actual, near),
            "capturedOutputByteIdentity": bool(np.array_equal(arm_outputs[arm], tensors["output"][1])),
        }
        if narrowed is not None:
            entry["narrowedQueryCounterfactual"] = {
                "comparison": block(actual, narrowed),
                "differenceFromOriginalReference": block(narrowed, reference),
            }
        arms[arm] = entry
    pairs = [(a, b) for a, b in SAME_INPUT_PAIRS if a in values and b in values]
    return {
        "schema": ANALYSIS_SCHEMA,
        "status": "analyzed",
        "inconclusiveReasons": [],
        "packetSHA256": value["packetSHA256"],
        "inputSHA256": input_sha256,
        "identity": value["identity"],
        "selection": value["selection"],
        "arms": arms,
        "sameInputOperatorComparisons": {f"{a}_versus_{b}": block(values[a], values[b]) for a, b in pairs},
        "limitations": [TOOL_LIMITATION],
    }


def run_files(
    packet_files: Mapping[str, bytes], tensors: Mapping[str, tuple[str, np.ndarray]], scale: float, variant: RunVariant
) -> dict[str, bytes]:
    """Every file of a replay run of the packet with these files (relative name -> bytes), tensors and scale."""
    value, staged = _input(packet_files)
    input_bytes = _pretty(value)
    input_sha256 = _sha256(input_bytes)
    dtype = tensors["queries"][0]
    outputs = {
        emulation: native_output_bits(emulation, tensors, scale, dtype) for emulation in set(ARM_EMULATIONS.values())
    }
    files = {"input.json": input_bytes, **{f"{name}.bin": data for name, data in staged.items()}}
    execution = []
    for arm in ARMS:
        failed = arm == variant.failed_arm
        log = f"{arm}: {'failed' if failed else 'wrote its outputs'} (synthetic run)\n".encode()
        files[f"{arm}.log"] = log
        if not failed:
            files.update(_arm_files(arm, value, input_sha256, tensors, outputs, arm == variant.readback_fault_arm))
        execution.append(
            {
                "arm": arm,
                "argv": ["attention-replay", "--arm", arm, "--input", "input.json"],
                "seconds": ARM_SECONDS[arm],
                "exitCode": FAILED_EXIT_CODE if failed else 0,
                "failure": FAILURE_TEXT if failed else None,
                "binarySHA256": _sha256(TOOL_BINARY),
                "logSHA256": _sha256(log),
                "logHashError": None,
            }
        )
    files["execution.json"] = _pretty(execution)
    if variant.failed_arm is None:
        arm_outputs, reference = {arm: outputs[ARM_EMULATIONS[arm]] for arm in ARMS}, tool_reference(tensors, scale)
        files["analysis.json"] = _pretty(analysis_document(value, input_sha256, tensors, scale, arm_outputs, reference))
    return files
