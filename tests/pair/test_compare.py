"""compare(a, b) on real packets on disk.

Every status and code of docs/pairs.md, swap symmetry, NaN on one side, the ladder read from each side's own
analysis.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import explorer
from explorer.analysis.analyze import analyze
from explorer.analysis.ranking import SELECTION_FIELDS
from explorer.pair.model import SamePacketError
from explorer.samples import packets as samples
from explorer.samples import writer

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "sample_packets"
PAGED = COMMITTED / samples.PAIR_NAMES["paged"]
CONTIGUOUS = COMMITTED / samples.PAIR_NAMES["contiguous"]
INPUT_DIFFERS = COMMITTED / samples.PAIR_NAMES["input-differs"]
OTHER_LAYER = COMMITTED / samples.PAIR_NAMES["other-layer"]
SIDES = ("a", "b")
QUIET_NAN_BF16 = 0x7FC0
NAN_AT = (3, 17)  # [query head, channel] of the NaN planted in one output


def _identity(spec, **changes):
    return dataclasses.replace(spec, identity={**spec.identity, **changes})


def _with_nan_output(spec):
    bits = spec.tensors["output"][1].copy()
    bits[0, NAN_AT[0], 0, NAN_AT[1]] = QUIET_NAN_BF16
    return samples.with_tensor(spec, "output", bits)


def _request(spec, value):
    spec = samples.with_record(spec, requestID=value)
    return samples.with_snapshot(spec, configuration={**spec.snapshot["configuration"], "requestID": value})


def _other_scale(spec):
    return samples.with_record(spec, scaleBits=writer.float32_bits(samples.PAIR_SCALE * 2))


# name -> (builder of a contiguous-side variant, the selection fields it changes)
SELECTION_VARIANTS = {
    "model": (lambda s: _identity(s, modelID="another model"), ["modelID"]),
    "artifact": (lambda s: _identity(s, artifactSHA256="a" * 64), ["artifactSHA256"]),
    "input": (lambda s: _identity(s, inputSHA256="b" * 64), ["inputSHA256"]),
    "request": (lambda s: _request(s, 7), ["requestID"]),
    "phase": (lambda s: samples.with_record(s, phase="chained_decode"), ["phase"]),
    "scale": (_other_scale, ["scaleBits"]),
    "seed": (lambda s: samples.with_snapshot(s, seedToken=5), ["seedToken"]),
}


@pytest.fixture(scope="module")
def packets(tmp_path_factory) -> dict[str, Path]:
    """Every packet of these tests, written by explorer.samples (the committed pair included, copied)."""
    root = tmp_path_factory.mktemp("pairs")
    contiguous = samples.pair_spec("contiguous")
    written = {
        "paged": PAGED,
        "contiguous": CONTIGUOUS,
        "input-differs": INPUT_DIFFERS,
        "other-layer": OTHER_LAYER,
        "refused": COMMITTED / "refused-hash-mismatch",
    }
    shutil.copytree(PAGED, root / "paged-copy")
    written["paged-copy"] = root / "paged-copy"
    specs = {
        "discarded": samples.with_snapshot(contiguous, sampleOutcome="discarded"),
        "nan-output": _with_nan_output(contiguous),
        "longer": samples.pair_spec("contiguous", tokens=samples.PAIR_TOKENS + 16),
        **{f"selection-{name}": build(contiguous) for name, (build, _) in SELECTION_VARIANTS.items()},
    }
    specs["float32-output"] = _float32_output(contiguous)
    specs["float32-queries"] = _float32_queries(contiguous)
    for name, spec in specs.items():
        written[name] = samples.write_packet(root / name, spec)
    return written


def _float32_output(spec):
    values = samples.bits_to_values(spec.tensors["output"][1], "bfloat16")
    spec = dataclasses.replace(
        spec, tensors={**spec.tensors, "output": ("float32", samples.values_to_bits(values, "float32"))}
    )
    record = spec.snapshot["records"][0]
    return samples.with_record(spec, output={**record["output"], "dtype": "float32"})


def _float32_queries(spec):
    values = samples.bits_to_values(spec.tensors["queries"][1], "bfloat16")
    spec = dataclasses.replace(
        spec, tensors={**spec.tensors, "queries": ("float32", samples.values_to_bits(values, "float32"))}
    )
    record = spec.snapshot["records"][0]
    return samples.with_record(spec, queries={**record["queries"], "dtype": "float32"})


def _swapped(report: dict) -> dict:
    """`report` with sides a and b exchanged: what compare(B, A) must give."""
    other = {"a": "b", "b": "a"}
    text = json.dumps(report)
    result = json.loads(text)
    result["a"], result["b"] = report["b"], report["a"]
    result["refusals"] = sorted(({**r, "side": other[r["side"]]} for r in report["refusals"]), key=lambda r: r["side"])
    reasons = []
    for reason in report["inconclusiveReasons"]:
        message = reason["message"]
        if reason["code"] == "side_inconclusive":
            message = message.replace(f"side {message[5]} ", f"side {other[message[5]]} ", 1)
        if reason["code"] == "shape_differs":
            head, tail = message.split("(", 1)
            first, second = tail.rstrip(")").split("; ")
            message = f"{head}(a: {second[3:]}; b: {first[3:]})"
        reasons.append({**reason, "message": message})
    side_reasons = sorted((r for r in reasons if r["code"] == "side_inconclusive"), key=lambda r: r["message"])
    result["inconclusiveReasons"] = side_reasons + [r for r in reasons if r["code"] != "side_inconclusive"]
    result["selectionDifferences"] = [{**d, "a": d["b"], "b": d["a"]} for d in report["selectionDifferences"]]
    if report["output"] is not None:
        output = result["output"]
        output["dtypes"] = {"a": report["output"]["dtypes"]["b"], "b": report["output"]["dtypes"]["a"]}
        for block in _difference_blocks(output):
            block["nonfinite"] = {"actual": block["nonfinite"]["reference"], "reference": block["nonfinite"]["actual"]}
    if report["ladder"] is not None:
        result["ladder"] = {"a": report["ladder"]["b"], "b": report["ladder"]["a"]}
    if report["nearerPrimaryReference"] is not None:
        nearer = result["nearerPrimaryReference"]
        for counts in (nearer["global"], *nearer["perHead"]):
            counts["a"], counts["b"] = counts["b"], counts["a"]
    if report["tokens"] is not None:
        target = report["tokens"]["targetToken"]
        result["tokens"]["targetToken"] = {"a": target["b"], "b": target["a"]}
    return result


def _difference_blocks(output: dict) -> list[dict]:
    return [output["difference"]["global"], *output["difference"]["perHead"]]


def _without_relative_l2(report: dict) -> dict:
    """`report` without the difference's relativeL2 (b's norm is its denominator, so it is not symmetric)."""
    report = json.loads(json.dumps(report))
    if report["output"] is not None:
        for block in _difference_blocks(report["output"]):
            del block["relativeL2"], block["undefinedReason"]
    return report


def _output_bits(path: Path) -> tuple[str, np.ndarray]:
    """The output's dtype and native patterns [QH, D], read from the files without the explorer."""
    descriptor = json.loads((path / "packet.json").read_text())["tensors"]["output"]
    kind = np.uint32 if descriptor["dtype"] == "float32" else np.uint16
    raw = np.frombuffer((path / descriptor["file"]).read_bytes(), dtype=np.dtype(kind).newbyteorder("<"))
    return descriptor["dtype"], raw.reshape(descriptor["shape"][1], descriptor["shape"][3])


# ---------------------------------------------------------------- compared


def test_the_sample_pair_is_compared_and_counts_match_the_files(packets):
    pair = explorer.compare(packets["paged"], packets["contiguous"])
    report = pair.report()
    json.dumps(report, allow_nan=False)
    assert report["schema"] == "attention-explorer.comparison.v1"
    assert (pair.status, report["status"]) == ("compared", "compared")
    assert report["inconclusiveReasons"] == [] and report["refusals"] == [] and report["selectionDifferences"] == []
    assert list(report["selection"]) == list(SELECTION_FIELDS)
    assert report["inputs"]["identical"] is True
    assert all(t["identical"] and t["mismatched"] == 0 for t in report["inputs"]["tensors"].values())

    _, bits_a = _output_bits(packets["paged"])
    _, bits_b = _output_bits(packets["contiguous"])
    differs = bits_a != bits_b
    output = report["output"]
    assert output["compared"] == bits_a.size
    assert output["mismatched"] == int(differs.sum()) > 0
    assert output["perHead"] == differs.sum(axis=1).tolist()
    assert output["positions"] == np.argwhere(differs).tolist()
    xor = (bits_a ^ bits_b)[differs]
    assert output["bitFlips"]["mantissa"] == sum((int(x) & 0x7F).bit_count() for x in xor)
    assert output["bitFlips"]["sign"] == sum(int(x) >> 15 for x in xor)
    assert output["outputDTypesDiffer"] is False and output["dtypes"] == {"a": "bfloat16", "b": "bfloat16"}
    # ULP: bfloat16 patterns of finite values of one sign are ordered like the integers.
    values_a = bits_a.view(ml_dtypes.bfloat16).astype(np.float64)
    values_b = bits_b.view(ml_dtypes.bfloat16).astype(np.float64)
    same_sign = np.sign(values_a) == np.sign(values_b)
    ulps = np.abs(bits_a.astype(np.int64) - bits_b.astype(np.int64))[same_sign]
    assert output["ulp"]["max"] >= ulps.max() and output["ulp"]["histogram"][0] == [0, 0, int((~differs).sum())]
    assert output["difference"]["global"]["linf"] == np.abs(values_a - values_b).max()

    tokens = report["tokens"]
    assert tokens == {
        "seedToken": writer.SEED_TOKEN,
        "targetToken": {"a": 1928, "b": 6829},
        "targetTokensDiffer": True,
    }
    assert report["a"]["backend"] == "paged" and report["b"]["dispatch"] == "contiguous_sdpa"
    assert report["nearerReason"] is None
    nearer = report["nearerPrimaryReference"]
    assert sum(nearer["global"].values()) == bits_a.size
    assert [sum(h[k] for k in ("a", "b", "tie", "undefined")) for h in nearer["perHead"]] == [bits_a.shape[1]] * 16
    assert report["notes"] == []
    assert "A pair shows that two kernels' outputs differ and where, not why." in report["limitations"]


def test_the_sample_pair_differs_by_one_or_two_ulp_mostly(packets):
    output = explorer.compare(packets["paged"], packets["contiguous"]).report()["output"]
    share = output["mismatched"] / output["compared"]
    by_bucket = {(low, high): count for low, high, count in output["ulp"]["histogram"]}
    assert 0.1 < share < 0.3
    assert by_bucket[(1, 1)] + by_bucket[(2, 3)] > 0.85 * output["mismatched"]


def test_ladder_is_each_sides_own_analysis(packets):
    pair = explorer.compare(packets["paged"], packets["contiguous"])
    ladder = pair.report()["ladder"]
    for side, path in zip(SIDES, (packets["paged"], packets["contiguous"]), strict=True):
        own = analyze(path).report()["reference"]
        row = ladder[side]
        assert row["primary"] == own["primary"]["global"]
        assert row["roundedToOutputDType"] == own["roundedToOutputDType"]["global"]
        assert row["fp64OutputError"] == own["fp64"]["outputError"]["global"]
        numerics = pair.side(side).numerics
        reference = numerics.primary.reference.astype(ml_dtypes.bfloat16).view(np.uint16)  # RNE by ml_dtypes
        _, bits = _output_bits(path)
        assert row["equalToRoundedReference"] == int((bits == reference).sum())
        assert row["compared"] == bits.size
    assert ladder["a"]["equalToRoundedReference"] > ladder["b"]["equalToRoundedReference"]


def test_pair_reuses_the_cached_analyses_and_holds_them(packets):
    first = analyze(packets["paged"])
    pair = explorer.compare(first, packets["contiguous"])
    assert pair.a is first
    assert pair.b.numerics is analyze(packets["contiguous"]).numerics  # the cache's computed object, not a recompute
    assert explorer.compare(packets["paged"], packets["contiguous"]).a.numerics is first.numerics


def test_pair_is_immutable(packets):
    pair = explorer.compare(packets["paged"], packets["contiguous"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.status = "x"  # type: ignore[misc]
    for array in (pair.output.differs, pair.output.ulp.distance, pair.output.difference.abs_error, pair.nearer.map):
        assert not array.flags.writeable
    with pytest.raises(TypeError):
        pair.ladder["a"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        pair.inputs.tensors["queries"] = None  # type: ignore[index]


def test_byte_identical_copy_is_compared(packets):
    report = explorer.compare(packets["paged"], packets["paged-copy"]).report()
    assert report["status"] == "compared"
    assert report["output"]["mismatched"] == 0 and report["inputs"]["identical"]
    assert report["nearerPrimaryReference"]["global"]["tie"] == report["output"]["compared"]
    assert report["notes"] == ["same backend: both packets declare backend paged"]
    assert report["tokens"]["targetTokensDiffer"] is False


# ---------------------------------------------------------------- usage errors


def test_same_packet_twice_is_a_usage_error(packets, tmp_path):
    paged = packets["paged"]
    (tmp_path / "alias").symlink_to(paged, target_is_directory=True)
    for other in (paged, paged / "packet.json", tmp_path / "alias", str(paged) + "/"):
        with pytest.raises(SamePacketError):
            explorer.compare(paged, other)
    result = analyze(paged)
    with pytest.raises(SamePacketError):
        explorer.compare(result, result)
    with pytest.raises(SamePacketError):
        explorer.compare(result, paged)


# ---------------------------------------------------------------- refused, inconclusive


def test_refused_side_is_named(packets):
    for order, side in (((packets["paged"], packets["refused"]), "b"), ((packets["refused"], packets["paged"]), "a")):
        report = explorer.compare(*order).report()
        assert report["status"] == "refused"
        assert [(r["side"], r["code"], r["field"]) for r in report["refusals"]] == [
            (side, "sha256_mismatch", "/tensors/storedValues/sha256")
        ]
        assert all(
            report[key] is None
            for key in ("selection", "inputs", "output", "ladder", "nearerPrimaryReference", "tokens")
        )
        assert report["inconclusiveReasons"] == []
        assert report[side]["status"] == "refused" and report[side]["backend"] is None
        json.dumps(report, allow_nan=False)


def test_missing_side_is_refused_not_an_error(packets, tmp_path):
    report = explorer.compare(packets["paged"], tmp_path / "nowhere").report()
    assert report["status"] == "refused"
    assert [(r["side"], r["code"]) for r in report["refusals"]] == [("b", "path_missing")]


def test_side_inconclusive_still_compares_what_both_allow(packets):
    report = explorer.compare(packets["paged"], packets["discarded"]).report()
    assert report["status"] == "inconclusive"
    assert report["inconclusiveReasons"] == [
        {"code": "side_inconclusive", "message": "side b is inconclusive: sample_not_confirmed"}
    ]
    assert report["inputs"]["identical"] is True
    assert report["output"]["mismatched"] > 0
    assert report["ladder"]["b"] is None and report["ladder"]["a"] is not None
    assert report["nearerPrimaryReference"] is None and report["nearerReason"] == "no_reference"


def test_nan_on_one_side(packets):
    pair = explorer.compare(packets["paged"], packets["nan-output"])
    report = pair.report()
    json.dumps(report, allow_nan=False)
    assert report["status"] == "inconclusive"
    assert report["inconclusiveReasons"][0]["message"] == "side b is inconclusive: nonfinite_comparison"
    output = report["output"]
    assert output["ulp"]["nonfinitePairs"] == 1
    assert list(NAN_AT) in output["positions"]
    assert output["difference"]["global"]["linf"] is None
    assert output["difference"]["global"]["undefinedReason"] == "nonfinite_values"
    assert output["difference"]["global"]["nonfinite"]["reference"]["nan"] == 1
    head = output["difference"]["perHead"][NAN_AT[0]]
    assert head["undefinedReason"] == "nonfinite_values" and output["difference"]["perHead"][0]["linf"] is not None
    assert report["nearerPrimaryReference"]["global"]["undefined"] == 1
    assert report["nearerPrimaryReference"]["perHead"][NAN_AT[0]]["undefined"] == 1
    assert report["ladder"]["b"]["primary"]["undefinedReason"] == "nonfinite_values"
    assert pair.output.ulp.distance[NAN_AT] == -1


@pytest.mark.parametrize("variant", list(SELECTION_VARIANTS))
def test_selection_differs_for_each_field(packets, variant):
    _, fields = SELECTION_VARIANTS[variant]
    report = explorer.compare(packets["contiguous"], packets[f"selection-{variant}"]).report()
    assert report["status"] == "inconclusive"
    assert [r["code"] for r in report["inconclusiveReasons"]] == ["selection_differs"]
    assert [d["field"] for d in report["selectionDifferences"]] == fields
    assert list(report["selection"]) == [f for f in SELECTION_FIELDS if f not in fields]
    assert report["inputs"] is not None and report["output"] is not None  # byte facts are still computed
    expected_reason = "scale_differs" if variant == "scale" else None
    assert report["nearerReason"] == expected_reason
    assert report["notes"] == ["same backend: both packets declare backend contiguous"]


def test_selection_differs_on_the_committed_other_layer_partner(packets):
    report = explorer.compare(packets["paged"], packets["other-layer"]).report()
    assert report["status"] == "inconclusive"
    assert report["selectionDifferences"] == [
        {"field": "storageLayerIndex", "a": samples.LAYER_INDEX, "b": samples.PAIR_OTHER_LAYER},
        {"field": "modelLayerIndex", "a": samples.LAYER_INDEX, "b": samples.PAIR_OTHER_LAYER},
    ]
    assert report["inputs"]["identical"] is True


def test_shape_differs_reports_only_own_facts(packets):
    for other, fields in (("longer", ["offsetBefore", "offsetAfter"]), ("float32-queries", [])):
        report = explorer.compare(packets["contiguous"], packets[other]).report()
        assert report["status"] == "inconclusive"
        assert "shape_differs" in [r["code"] for r in report["inconclusiveReasons"]]
        assert [d["field"] for d in report["selectionDifferences"]] == fields
        assert report["inputs"] is None and report["output"] is None and report["nearerPrimaryReference"] is None
        assert report["nearerReason"] == "shape_differs"
        own = explorer.compare(packets["contiguous"], packets["paged"]).report()["ladder"]["a"]
        assert report["ladder"]["a"] == own


def test_output_dtypes_differ(packets):
    report = explorer.compare(packets["contiguous"], packets["float32-output"]).report()
    assert report["status"] == "compared"
    output = report["output"]
    assert output["outputDTypesDiffer"] is True and output["dtypes"] == {"a": "bfloat16", "b": "float32"}
    assert all(output[key] is None for key in ("mismatched", "perHead", "positions", "bitFlips", "ulp"))
    assert output["compared"] == 16 * samples.PAIR_HEAD_DIM
    assert output["difference"]["global"]["linf"] == 0.0  # the same values, widened exactly
    assert any("output dtypes differ" in note for note in report["notes"])


def test_inputs_differing_by_one_element(packets):
    report = explorer.compare(packets["paged"], packets["input-differs"]).report()
    assert report["status"] == "compared"
    inputs = report["inputs"]
    assert inputs["identical"] is False
    keys = inputs["tensors"]["storedKeys"]
    assert (keys["identical"], keys["mismatched"]) == (False, 1)
    assert keys["firstPositions"] == [list(samples.PAIR_CHANGED_KEY)]
    assert keys["perHead"] == [0, 1] and keys["bitFlips"] == {"sign": 1, "exponent": 0, "mantissa": 0}
    assert [name for name, t in inputs["tensors"].items() if not t["identical"]] == ["storedKeys"]
    assert report["nearerPrimaryReference"] is None and report["nearerReason"] == "inputs_differ"
    assert any("mix input and arithmetic differences" in note for note in report["notes"])


# ---------------------------------------------------------------- symmetry


@pytest.mark.parametrize(
    "first, second",
    [
        ("paged", "contiguous"),
        ("paged", "input-differs"),
        ("paged", "refused"),
        ("paged", "discarded"),
        ("paged", "nan-output"),
        ("contiguous", "selection-seed"),
        ("contiguous", "longer"),
        ("contiguous", "float32-output"),
        ("discarded", "nan-output"),
    ],
)
def test_swapping_sides_swaps_a_and_b_and_nothing_else(packets, first, second):
    forward = explorer.compare(packets[first], packets[second]).report()
    backward = explorer.compare(packets[second], packets[first]).report()
    assert _without_relative_l2(backward) == _without_relative_l2(_swapped(forward))


def test_difference_takes_b_as_the_reference(packets):
    for first, second in (("paged", "contiguous"), ("contiguous", "paged")):
        difference = explorer.compare(packets[first], packets[second]).report()["output"]["difference"]["global"]
        _, bits_a = _output_bits(packets[first])
        _, bits_b = _output_bits(packets[second])
        a, b = (bits.view(ml_dtypes.bfloat16).astype(np.float64) for bits in (bits_a, bits_b))
        assert difference["relativeL2"] == pytest.approx(
            np.sqrt(((a - b) ** 2).sum()) / np.sqrt((b**2).sum()), rel=1e-12
        )


def test_importing_explorer_loads_no_pair_module():
    code = (
        "import sys, explorer; assert callable(explorer.compare); "
        "print(sorted(m for m in sys.modules if m.startswith(('explorer.', 'numpy', 'panel')) "
        "and m != 'explorer.version'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
