"""Tests of the synthetic packet generator and the committed sample_packets/ directory."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from explorer.analysis.analyze import analyze
from explorer.packet.model import TENSOR_NAMES
from explorer.samples import packets as samples
from explorer.samples import write_all, writer

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "sample_packets"

# name -> (status, refusal codes, inconclusive reason codes)
EXPECTED = {
    "clean-fp32q-bf16kv": ("analyzed", [], []),
    "qwen36-bf16-t64": ("analyzed", [], []),
    "fp16-kv": ("analyzed", [], []),
    "injected-error-head5": ("analyzed", [], []),
    "last-row-mismatch": ("inconclusive", [], ["last_row_mismatch"]),
    "nan-stored-values": ("inconclusive", [], ["nonfinite_inputs", "nonfinite_comparison"]),
    "discarded-sample": ("inconclusive", [], ["sample_not_confirmed"]),
    "refused-hash-mismatch": ("refused", ["sha256_mismatch"], []),
    "qwen36-pair-paged": ("analyzed", [], []),
    "qwen36-pair-contiguous": ("analyzed", [], []),
    "qwen36-pair-contiguous-other-layer": ("analyzed", [], []),
    "qwen36-pair-contiguous-input-differs": ("analyzed", [], []),
}

FLOAT = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def promoted(spec: samples.PacketSpec, name: str) -> np.ndarray:
    dtype, bits = spec.tensors[name]
    with np.errstate(invalid="ignore"):
        return bits.view(FLOAT[dtype]).astype(np.float64)


def oracle_output(spec: samples.PacketSpec) -> np.ndarray:
    """Float64 GQA attention written head by head, independent of samples.attention_output."""
    q, k, v = promoted(spec, "queries"), promoted(spec, "storedKeys"), promoted(spec, "storedValues")
    scale = float(np.array([spec.snapshot["records"][0]["scaleBits"]], dtype=np.uint32).view(np.float32)[0])
    qh, kvh = q.shape[1], k.shape[1]
    out = np.zeros((qh, q.shape[3]))
    for h in range(qh):
        kv = h // (qh // kvh)
        logits = np.array([float(np.dot(k[0, kv, t], q[0, h, 0])) * scale for t in range(k.shape[2])])
        w = np.exp(logits - logits.max())
        out[h] = (w / w.sum()) @ v[0, kv]
    return out


def test_curated_names_match_expectations():
    assert list(samples.CURATED) == list(EXPECTED)
    for description, build in samples.CURATED.values():
        assert description and "\n" not in description and callable(build)


def test_generation_is_deterministic(tmp_path):
    samples.write_samples(tmp_path / "a")
    samples.write_samples(tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")


def test_committed_sample_packets_match_generator(tmp_path):
    write_all(tmp_path)  # `explorer samples`: the curated packets and the curated campaign
    committed = {
        name: data for name, data in tree(COMMITTED).items() if not name.startswith(samples.FULL_SAMPLE_NAME + "/")
    }
    assert committed == tree(tmp_path)


def test_committed_readme_lists_every_sample():
    readme = (COMMITTED / samples.SAMPLES_README).read_text()
    for name, (description, _) in samples.CURATED.items():
        assert f"- `{name}`: {description}" in readme


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {
            "qh": 6,
            "kvh": 3,
            "tokens": 1,
            "head_dim": 5,
            "query_dtype": "bfloat16",
            "output_dtype": "float16",
            "backend": "contiguous",
            "kernel_output_dtype": "float32",
            "scale": 0.3,
            "seed": 9,
        },
        {"qh": 2, "kvh": 2, "tokens": 7, "head_dim": 3, "kv_dtype": "float32", "query_dtype": "float16"},
    ],
)
def test_synthetic_spec_is_consistent(kw):
    spec = samples.synthetic_spec(**kw)
    qh, kvh, t, d = kw.get("qh", 4), kw.get("kvh", 2), kw.get("tokens", 3), kw.get("head_dim", 4)
    shapes = {
        "queries": (1, qh, 1, d),
        "storedKeys": (1, kvh, t, d),
        "storedValues": (1, kvh, t, d),
        "incomingKeys": (1, kvh, 1, d),
        "incomingValues": (1, kvh, 1, d),
        "output": (1, qh, 1, d),
    }
    for name in TENSOR_NAMES:
        dtype, bits = spec.tensors[name]
        assert bits.shape == shapes[name]
        assert bits.dtype == (np.uint32 if dtype == "float32" else np.uint16)
    for stored, incoming in (("storedKeys", "incomingKeys"), ("storedValues", "incomingValues")):
        assert np.array_equal(spec.tensors[stored][1][:, :, -1:, :], spec.tensors[incoming][1])

    record = spec.snapshot["records"][0]
    config = spec.snapshot["configuration"]
    assert (record["requestID"], record["outputIndex"]) == (config["requestID"], config["outputIndex"])
    assert record["offsetAfter"] == t == spec.geometry["visibleEnd"] and record["offsetBefore"] == t - 1
    assert record["dispatch"] == samples.DISPATCH[spec.identity["backend"]]
    expected_scale = kw.get("scale", 1 / np.sqrt(d))
    assert record["scaleBits"] == int(np.array([expected_scale], np.float32).view(np.uint32)[0])
    assert record["kernelOutputDType"] == kw.get("kernel_output_dtype") or spec.tensors["output"][0]
    for name in ("queries", "incomingKeys", "incomingValues", "output"):
        assert record[name]["dtype"] == spec.tensors[name][0]
        assert tuple(record[name]["shape"]) == shapes[name]
        assert len(record[name]["graphConstructionStrides"]) == 4
    assert {entry["dtype"] for entry in record["storage"].values()} == {spec.tensors["storedKeys"][0]}
    assert spec.snapshot["sampleOutcome"] == "confirmed" and spec.snapshot["refusals"] == {}
    assert spec.snapshot["forwardSucceeded"] is True
    assert spec.snapshot["selectedForwards"] == 1 and spec.snapshot["expectedOwnerCount"] == 1

    out_dtype = spec.tensors["output"][0]
    expected = oracle_output(spec).astype(np.float32).astype(FLOAT[out_dtype])
    assert np.array_equal(spec.tensors["output"][1].view(FLOAT[out_dtype]).ravel(), expected.ravel())


def test_descriptor_describes_written_bytes(tmp_path):
    spec = samples.synthetic_spec(qh=8, kvh=2, tokens=5, head_dim=6)
    directory = samples.write_packet(tmp_path / "p", spec)
    descriptor = json.loads((directory / "packet.json").read_text())
    assert descriptor == samples.packet_descriptor(spec)
    assert descriptor["schema"] == "darkbloom.attention-packet.v1"
    total = 0
    for name in TENSOR_NAMES:
        entry = descriptor["tensors"][name]
        data = (directory / entry["file"]).read_bytes()
        assert data == samples.tensor_bytes(spec, name)
        item_size = 4 if entry["dtype"] == "float32" else 2
        assert entry["byteCount"] == len(data) == int(np.prod(entry["shape"])) * item_size
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        h, t, d = entry["shape"][1:]
        assert entry["packedStrides"] == [h * t * d, t * d, d, 1]
        total += len(data)
    assert descriptor["capture"]["tensorPayloadBytes"] == total
    metadata = (directory / descriptor["metadata"]["file"]).read_bytes()
    assert metadata == writer.metadata_bytes(spec)
    assert descriptor["metadata"]["byteCount"] == len(metadata)
    assert descriptor["metadata"]["sha256"] == hashlib.sha256(metadata).hexdigest()
    assert json.loads(metadata) == spec.snapshot
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["packet.json", writer.DEFAULT_METADATA_FILE, *writer.DEFAULT_TENSOR_FILES.values()]
    )


def test_write_packet_overrides(tmp_path):
    spec = samples.synthetic_spec()
    descriptor = samples.packet_descriptor(spec)
    descriptor["schema"] = "something-else"
    directory = samples.write_packet(tmp_path / "d", spec, descriptor=descriptor, metadata=b"{not json")
    assert json.loads((directory / "packet.json").read_text())["schema"] == "something-else"
    assert (directory / writer.DEFAULT_METADATA_FILE).read_bytes() == b"{not json"
    # Without a descriptor override the metadata override is what the descriptor hashes.
    directory = samples.write_packet(tmp_path / "m", spec, metadata=b"[]")
    written = json.loads((directory / "packet.json").read_text())["metadata"]
    assert written["byteCount"] == 2 and written["sha256"] == hashlib.sha256(b"[]").hexdigest()


def test_full_qwen_geometry_size():
    spec = samples.qwen_full_spec()
    descriptor = samples.packet_descriptor(spec)
    assert descriptor["tensors"]["storedKeys"]["shape"] == [1, 2, 5585, 256]
    assert descriptor["tensors"]["queries"]["shape"] == [1, 16, 1, 256]
    assert {t["dtype"] for t in descriptor["tensors"].values()} == {"bfloat16"}
    assert 11_400_000 < descriptor["capture"]["tensorPayloadBytes"] < 11_500_000


def test_samples_show_their_defects():
    clean, injected = samples.clean_spec(), samples.injected_error_spec()
    changed = np.argwhere(clean.tensors["output"][1] != injected.tensors["output"][1])
    assert {tuple(x) for x in changed[:, [1, 3]]} == {(samples.INJECTED_HEAD, c) for c in range(8, 12)}

    mismatch = samples.last_row_mismatch_spec()
    for stored, incoming, flips in (
        ("storedKeys", "incomingKeys", samples.KEY_BIT_FLIPS),
        ("storedValues", "incomingValues", samples.VALUE_BIT_FLIPS),
    ):
        xor = mismatch.tensors[stored][1][0, :, -1, :] ^ mismatch.tensors[incoming][1][0, :, 0, :]
        assert sorted(zip(*np.nonzero(xor), strict=True)) == sorted((h, c) for h, c, _ in flips)

    nan = samples.nan_stored_values_spec()
    values = nan.tensors["storedValues"][1]
    for head, token, channel, pattern in samples.STORED_VALUE_NANS:
        assert values[0, head, token, channel] == pattern
    output = promoted(nan, "output")[0, :, 0, :]
    group = output.shape[0] // values.shape[1]
    nan_heads = {h * group + g for h, _, _, _ in samples.STORED_VALUE_NANS for g in range(group)}
    nan_channels = {c for _, _, c, _ in samples.STORED_VALUE_NANS}
    assert {tuple(x) for x in np.argwhere(np.isnan(output))} == {(h, c) for h in nan_heads for c in nan_channels}


# ---------------------------------------------------------------- through the analysis


@pytest.mark.parametrize("name", list(EXPECTED))
def test_committed_sample_status_and_codes(name):
    status, refusals, reasons = EXPECTED[name]
    report = analyze(COMMITTED / name).report()
    assert report["status"] == status
    assert [p["code"] for p in report["refusals"]] == refusals
    assert [r["code"] for r in report["inconclusiveReasons"]] == reasons
    json.dumps(report, allow_nan=False)


def test_samples_carry_their_facts_through_the_analysis():
    refused = analyze(COMMITTED / "refused-hash-mismatch").report()
    assert [p["field"] for p in refused["refusals"]] == ["/tensors/storedValues/sha256"]

    last_row = analyze(COMMITTED / "last-row-mismatch").report()["lastRow"]
    assert last_row["keys"]["mismatched"] == len(samples.KEY_BIT_FLIPS)
    assert last_row["keys"]["bitFlips"] == {"sign": 1, "exponent": 1, "mantissa": 1}
    assert last_row["values"]["bitFlips"] == {"sign": 0, "exponent": 0, "mantissa": 1}

    nan = analyze(COMMITTED / "nan-stored-values").report()["tensors"]["storedValues"]["nonfinite"]
    assert (nan["nan"], nan["signalingNan"]) == (2, 1)
    assert nan["firstLocations"] == [[h, t, c] for h, t, c, _ in samples.STORED_VALUE_NANS]

    per_head = analyze(COMMITTED / "injected-error-head5").report()["reference"]["primary"]["perHead"]
    linf = [head["linf"] for head in per_head]
    assert max(range(len(linf)), key=linf.__getitem__) == samples.INJECTED_HEAD
    assert linf[samples.INJECTED_HEAD] > 1000 * max(v for i, v in enumerate(linf) if i != samples.INJECTED_HEAD)


def test_pair_outputs_come_from_the_emulated_kernels():
    from explorer.analysis.emulation import native_output_bits

    sides = {backend: samples.pair_spec(backend) for backend in samples.PAIR_EMULATIONS}
    inputs = ("queries", "storedKeys", "storedValues", "incomingKeys", "incomingValues")
    for name in inputs:
        assert np.array_equal(sides["paged"].tensors[name][1], sides["contiguous"].tensors[name][1])
    scale = writer.float32_bits(samples.PAIR_SCALE)
    assert {s.snapshot["records"][0]["scaleBits"] for s in sides.values()} == {scale}
    for backend, spec in sides.items():
        emulated = native_output_bits(samples.PAIR_EMULATIONS[backend], spec.tensors, samples.PAIR_SCALE, "bfloat16")
        assert np.array_equal(spec.tensors["output"][1], emulated)
        committed = (COMMITTED / samples.PAIR_NAMES[backend] / writer.DEFAULT_TENSOR_FILES["output"]).read_bytes()
        assert committed == samples.tensor_bytes(spec, "output")
    assert sides["paged"].snapshot["targetToken"] != sides["contiguous"].snapshot["targetToken"]
    assert "own kernel emulations" in (COMMITTED / samples.SAMPLES_README).read_text()
