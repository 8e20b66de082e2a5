"""The analysis result end to end: immutability, the report's shape, JSON safety, the cache.

The analysis result end to end: immutability, the report's exact shape, JSON safety, wording and the cache.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from report_words import VERDICT_WORDS, strings_and_keys

from explorer.analysis.analyze import analyze, clear_cache
from explorer.analysis.blocks import installed_version
from explorer.analysis.facts import tensor_facts
from explorer.analysis.numerics import after_numerics_reasons, compute_numerics
from explorer.analysis.report import LIMITATIONS, build_report
from explorer.analysis.result import Analysis
from explorer.samples.packets import CURATED, synthetic_spec, tensor_bytes, values_to_bits, with_tensor, write_packet

from analysis_support import make_admission

TOP_KEYS = {
    "schema",
    "status",
    "packet",
    "refusals",
    "inconclusiveReasons",
    "score",
    "identity",
    "selection",
    "sample",
    "geometry",
    "tensors",
    "lastRow",
    "reference",
    "attention",
    "emulations",
    "emulationsRequested",
    "emulationDecisive",
    "emulationBaseline",
    "builds",
    "buildsReason",
    "runtime",
    "limitations",
}
NULL_WHEN_REFUSED = {
    "score",
    "identity",
    "selection",
    "sample",
    "geometry",
    "tensors",
    "lastRow",
    "reference",
    "attention",
    "emulations",
    "emulationsRequested",
    "emulationDecisive",
    "emulationBaseline",
    "builds",
    "buildsReason",
}
M_KEYS = {"linf", "rmse", "relativeL2", "undefinedReason", "nonfinite"}
COUNT_KEYS = {"nan", "positiveInfinity", "negativeInfinity"}
ULP_KEYS = {"max", "maxAt", "p99", "nonfinitePairs", "histogram"}
ROUNDED_KEYS = {"label", "dtype", "identity", "global", "perHead", "ulp"}
ATTENTION_KEYS = {
    "queryHead",
    "kvHead",
    "maxLogit",
    "logSumExp",
    "entropy",
    "lastTokenWeight",
    "topTokens",
    "undefinedReason",
}
NONFINITE_KEYS = {"nan", "signalingNan", "positiveInfinity", "negativeInfinity", "firstLocations"}
LAST_ROW_KEYS = {"compared", "mismatched", "perKvHead", "positions", "bitFlips"}


@pytest.fixture(scope="module")
def curated(tmp_path_factory) -> dict[str, Analysis]:
    root = tmp_path_factory.mktemp("curated")
    clear_cache()
    return {name: analyze(build(root / name)) for name, (_, build) in CURATED.items()}


def walk(value: Any, path: str = "analysis"):
    """Yield (path, value) for every dataclass, array, mapping value and tuple item inside `value`."""
    yield path, value
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from walk(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from walk(item, f"{path}[{key!r}]")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}[{i}]")


# ---------------------------------------------------------------- immutability


def test_every_array_is_read_only_and_every_record_frozen(curated):
    for name, analysis in curated.items():
        arrays = 0
        for path, value in walk(analysis):
            if isinstance(value, np.ndarray):
                arrays += 1
                assert not value.flags.writeable, f"{name}: {path}"
                with pytest.raises(ValueError, match="read-only"):
                    value.reshape(-1)[:1] = 0
            elif dataclasses.is_dataclass(value):
                field = dataclasses.fields(value)[0].name
                with pytest.raises(dataclasses.FrozenInstanceError):
                    setattr(value, field, None)
        assert arrays > 0 or analysis.status == "refused"


def test_metric_count_mappings_are_read_only(curated):
    numerics = curated["clean-fp32q-bf16kv"].numerics
    with pytest.raises(TypeError):
        numerics.primary.global_metrics.nonfinite_actual["nan"] = 1
    with pytest.raises(ValueError, match="read-only"):
        numerics.primary.reference[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        numerics.weights[0, 0] = 1.0


# ---------------------------------------------------------------- the report


def test_curated_statuses(curated):
    assert {name: (a.status, [r.code for r in a.reasons]) for name, a in curated.items()} == {
        "clean-fp32q-bf16kv": ("analyzed", []),
        "qwen36-bf16-t64": ("analyzed", []),
        "fp16-kv": ("analyzed", []),
        "injected-error-head5": ("analyzed", []),
        "last-row-mismatch": ("inconclusive", ["last_row_mismatch"]),
        "nan-stored-values": ("inconclusive", ["nonfinite_inputs", "nonfinite_comparison"]),
        "discarded-sample": ("inconclusive", ["sample_not_confirmed"]),
        "refused-hash-mismatch": ("refused", []),
        "qwen36-pair-paged": ("analyzed", []),
        "qwen36-pair-contiguous": ("analyzed", []),
        "qwen36-pair-contiguous-other-layer": ("analyzed", []),
        "qwen36-pair-contiguous-input-differs": ("analyzed", []),
    }


def test_reports_round_trip_through_strict_json(curated):
    for name, analysis in curated.items():
        report = analysis.report()
        assert report == build_report(analysis)
        text = json.dumps(report, allow_nan=False)
        assert json.loads(text) == report, name


def test_no_verdict_wording_anywhere(curated):
    for name, analysis in curated.items():
        for text in strings_and_keys(analysis.report()):
            assert not VERDICT_WORDS.search(text), f"{name}: {text!r}"


def check_metrics(m: dict) -> None:
    assert set(m) == M_KEYS
    assert set(m["nonfinite"]) == {"actual", "reference"}
    assert set(m["nonfinite"]["actual"]) == COUNT_KEYS == set(m["nonfinite"]["reference"])
    if m["undefinedReason"] is None:
        assert None not in (m["linf"], m["rmse"], m["relativeL2"])


def check_located(m: dict, head: int | None = None) -> None:
    """A metrics block with `linfAt`: null exactly when linf is null or 0, else an element (of `head` for a head's
    block)."""
    at = m["linfAt"]
    assert (at is None) == (not m["linf"])
    if at is not None:
        assert set(at) == {"queryHead", "channel"} and at["queryHead"] == (at["queryHead"] if head is None else head)
    check_metrics({k: v for k, v in m.items() if k != "linfAt"})


def check_comparison(c: dict, query_heads: int, group: int, extra: set[str] = frozenset()) -> None:
    assert set(c) == {"global", "perHead"} | extra
    check_located(c["global"])
    assert [(e["queryHead"], e["kvHead"]) for e in c["perHead"]] == [(h, h // group) for h in range(query_heads)]
    for entry in c["perHead"]:
        check_located({k: v for k, v in entry.items() if k not in ("queryHead", "kvHead")}, entry["queryHead"])


def test_analyzed_report_shape(curated):
    report = curated["clean-fp32q-bf16kv"].report()
    assert set(report) == TOP_KEYS
    assert report["schema"] == "attention-explorer.report.v1"
    geometry = report["geometry"]
    qh, group = geometry["queryHeads"], geometry["groupSize"]
    reference = report["reference"]
    assert set(reference) == {
        "primary",
        "roundedToOutputDType",
        "roundedToKernelOutputDType",
        "narrowedQuery",
        "narrowedQueryReason",
        "fp64",
    }
    check_comparison(reference["primary"], qh, group, {"label", "eligibleGlobal"})
    assert reference["primary"]["eligibleGlobal"] is None
    rounded = reference["roundedToOutputDType"]
    assert set(rounded) == ROUNDED_KEYS and set(rounded["ulp"]) == ULP_KEYS
    assert rounded["identity"] is True and rounded["dtype"] == "float32"
    check_comparison({k: rounded[k] for k in ("global", "perHead")}, qh, group)
    assert reference["roundedToKernelOutputDType"] is None
    narrowed = reference["narrowedQuery"]
    assert set(narrowed) == {"label", "dtype", "comparison", "differenceFromPrimary", "queryRoundingDifference"}
    assert narrowed["label"] == "narrowed-Q counterfactual (float32 -> bfloat16 -> float32)"
    for key in ("comparison", "differenceFromPrimary", "queryRoundingDifference"):
        check_comparison(narrowed[key], qh, group)
    assert reference["narrowedQueryReason"] is None
    assert set(reference["fp64"]) == {"label", "referenceError", "outputError"}
    check_comparison(reference["fp64"]["referenceError"], qh, group)
    check_comparison(reference["fp64"]["outputError"], qh, group)
    heads = report["attention"]["perHead"]
    assert len(heads) == qh and all(set(h) == ATTENTION_KEYS for h in heads)
    assert all(len(h["topTokens"]) == 5 for h in heads)
    for tensor in report["tensors"].values():
        assert set(tensor) == {"dtype", "shape", "byteCount", "sha256", "nonfinite"}
        assert set(tensor["nonfinite"]) == NONFINITE_KEYS
    assert set(report["lastRow"]) == {"keys", "values"}
    assert all(set(row) == LAST_ROW_KEYS for row in report["lastRow"].values())
    assert set(report["runtime"]) == {"explorer", "python", "numpy", "mlDtypes"}
    assert report["limitations"] == list(LIMITATIONS)


@pytest.mark.parametrize(
    "distribution",
    ["ml_dtypes", "ml-dtypes", "numpy", "attention-packet-explorer", "Pillow", "pytest-xdist", "no-such-distribution"],
)
def test_installed_versions_are_what_importlib_metadata_reads(distribution):
    from importlib import metadata

    try:
        expected = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        expected = None
    installed_version.cache_clear()
    assert installed_version(distribution) == expected


def test_kernel_dtype_block_for_the_bfloat16_qwen_sample(curated):
    reference = curated["qwen36-bf16-t64"].report()["reference"]
    assert reference["narrowedQuery"] is None and reference["narrowedQueryReason"] == "queries_not_float32"
    assert reference["roundedToOutputDType"]["identity"] is False


def test_refused_and_inconclusive_reports(curated):
    refused = curated["refused-hash-mismatch"].report()
    assert set(refused) == TOP_KEYS
    assert all(refused[key] is None for key in NULL_WHEN_REFUSED)
    assert [r["code"] for r in refused["refusals"]] == ["sha256_mismatch"]
    assert refused["inconclusiveReasons"] == [] and refused["limitations"]
    discarded = curated["discarded-sample"].report()
    assert discarded["reference"] is None and discarded["attention"] is None
    assert discarded["tensors"] is not None and discarded["lastRow"] is not None
    nan = curated["nan-stored-values"].report()
    primary = nan["reference"]["primary"]
    assert primary["global"]["undefinedReason"] == "nonfinite_inputs"
    assert primary["eligibleGlobal"] is not None
    assert {h["undefinedReason"] for h in nan["attention"]["perHead"] if h["kvHead"] == 1} == {"nonfinite_inputs"}


def test_missing_packet_is_a_refused_result(tmp_path):
    analysis = analyze(tmp_path / "nothing-here")
    assert analysis.status == "refused" and analysis.numerics is None
    json.dumps(analysis.report(), allow_nan=False)


# ---------------------------------------------------------------- the cache


def test_cache_reuses_same_content_at_another_path_and_recomputes_changed_content(tmp_path):
    clear_cache()
    spec = synthetic_spec(qh=4, kvh=2, tokens=6, head_dim=8, seed=11)
    first, second = write_packet(tmp_path / "a", spec), write_packet(tmp_path / "b", spec)
    timings: dict[str, float] = {}
    original = analyze(first, timings=timings)
    assert timings["cached"] == 0.0 and original.status == "analyzed"
    copy = analyze(second / "packet.json", timings=timings)
    assert timings["cached"] == 1.0
    assert copy.numerics is original.numerics and copy.facts is original.facts
    assert copy.admission.path != original.admission.path
    assert copy.report()["packet"]["path"] == str(second / "packet.json")

    # One output element changes by one bit, with consistent hashes: a new key, recomputed.
    _output_dtype, output_bits = spec.tensors["output"]
    changed_bits = output_bits.copy()
    changed_bits[0, 0, 0, 0] ^= 1
    shutil.rmtree(second)  # write_packet never overwrites
    write_packet(second, with_tensor(spec, "output", changed_bits))
    changed = analyze(second, timings=timings)
    assert timings["cached"] == 0.0 and changed.numerics is not original.numerics
    assert changed.numerics.primary.actual[0, 0] != original.numerics.primary.actual[0, 0]

    # A byte changed behind the descriptor's hash is refused, never served from the cache.
    output_file = first / spec.tensor_files["output"]
    raw = bytearray(output_file.read_bytes())
    raw[0] ^= 1
    output_file.write_bytes(bytes(raw))
    tampered = analyze(first)
    assert tampered.status == "refused" and tampered.numerics is None


def test_cache_key_ignores_modification_time_and_size_but_not_bytes(tmp_path):
    """Same path, same size, same mtime, different bytes: the content key differs."""
    clear_cache()
    spec = synthetic_spec(qh=2, kvh=1, tokens=4, head_dim=4, seed=12)
    directory = write_packet(tmp_path / "p", spec)
    before = analyze(directory)
    output_file = directory / spec.tensor_files["output"]
    stat = output_file.stat()
    output_dtype, output_bits = spec.tensors["output"]
    values = np.asarray(output_bits).view(np.float32).astype(np.float64) * 2
    shutil.rmtree(directory)  # write_packet never overwrites
    write_packet(directory, with_tensor(spec, "output", values_to_bits(values, output_dtype)))
    os.utime(output_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert output_file.stat().st_size == stat.st_size and len(tensor_bytes(spec, "output")) == stat.st_size
    after = analyze(directory)
    assert after.numerics is not before.numerics
    assert np.array_equal(after.numerics.primary.actual, before.numerics.primary.actual * 2)


def in_memory_analysis(q, k, v, output, **kwargs) -> Analysis:
    admission = make_admission(q, k, v, output, **kwargs)
    facts = tensor_facts(admission.tensors)
    numerics = compute_numerics(admission, facts)
    reasons = after_numerics_reasons(facts, numerics)
    return Analysis(admission, "inconclusive" if reasons else "analyzed", reasons, facts, numerics)


def test_reports_with_nonfinite_values_are_strict_json():
    rng = np.random.default_rng(13)
    q, k, v = rng.normal(size=(4, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    nan_query = q.copy()
    nan_query[1, 0] = np.nan
    infinite_output = np.zeros((4, 4))
    infinite_output[2] = [np.inf, -np.inf, np.nan, 0]
    overflow_query = q.copy()
    overflow_query[0] = 1e20
    cases = {
        "nan query": in_memory_analysis(nan_query, k, v, np.zeros((4, 4))),
        "infinite output": in_memory_analysis(q, k, v, infinite_output, dtypes=("float32", "bfloat16", "float16")),
        "overflowing logits": in_memory_analysis(overflow_query, k * 1e20, v, np.zeros((4, 4))),
        "float16 overflow": in_memory_analysis(
            q, k, v * 1e6, np.zeros((4, 4)), dtypes=("float32", "float32", "float16"), kernel_output_dtype="bfloat16"
        ),
    }
    for name, analysis in cases.items():
        report = analysis.report()
        assert json.loads(json.dumps(report, allow_nan=False)) == report, name
        assert analysis.status == "inconclusive", name
        assert report["reference"]["roundedToOutputDType"]["global"]["linf"] is None, name
