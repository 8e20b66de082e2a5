"""The repository's own docs/ explain every code and list every report key and triage field.

The repository's own docs/: every admission and after-numerics code explained, the report's and the comparison
report's keys listed, triage's fields, and README/docs pointing only inside the repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import explorer
from explorer.analysis import memory, numerics, reference
from explorer.catalog import summary
from explorer.catalog.discovery import discover
from explorer.catalog.triage import json_line, triage
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED
from explorer.pair import compare as compare_module
from explorer.pair import emulation as compare_emulation
from explorer.pair import model as pair_model

from admission_cases import SPEC_REASON_CODES, SPEC_REFUSAL_CODES

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
AFTER_NUMERICS_CODES = {numerics.LAST_ROW_MISMATCH, numerics.NONFINITE_INPUTS_REASON, numerics.NONFINITE_COMPARISON}
UNDEFINED_CODES = {
    reference.QUERIES_NOT_FLOAT32,
    reference.STORAGE_NOT_NARROW,
    reference.NONFINITE_LOGITS,
    "nonfinite_values",
    "zero_reference_norm",
}
TABLE_CODE = re.compile(r"^\| `([a-z0-9_]+)` \|", re.MULTILINE)
LINK = re.compile(r"\]\(([^)#]+)")


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | set().union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value)) if value else set()
    return set()


def test_the_packet_doc_explains_every_refusal_and_inconclusive_code_once():
    text = (DOCS / "packet-format.md").read_text()
    tabled = [code for code in TABLE_CODE.findall(text) if code not in (ANALYZED, INCONCLUSIVE, REFUSED)]
    assert sorted(tabled) == sorted(
        SPEC_REFUSAL_CODES | SPEC_REASON_CODES | AFTER_NUMERICS_CODES | {memory.MEMORY_BOUND_EXCEEDED}
    )


def test_the_report_doc_names_every_key_and_undefined_reason_the_report_carries():
    text = (DOCS / "report.md").read_text()
    keys = set()
    for name in ("injected-error-head5", "nan-stored-values", "fp16-kv", "refused-hash-mismatch"):
        keys |= _keys(explorer.analyze(REPO / "sample_packets" / name).report())
    missing = {key for key in keys | UNDEFINED_CODES if f"`{key}`" not in text and key not in text}
    assert missing == set()


def _missing(text: str, keys: set[str]) -> set[str]:
    return {key for key in keys if f"`{key}`" not in text}


PAIRS = (
    ("qwen36-pair-paged", "qwen36-pair-contiguous"),
    ("qwen36-pair-paged", "qwen36-pair-contiguous-input-differs"),
    ("qwen36-pair-paged", "qwen36-pair-contiguous-other-layer"),
    ("refused-hash-mismatch", "fp16-kv"),
)
PAIR_CODES = {
    pair_model.SIDE_INCONCLUSIVE,
    pair_model.SELECTION_DIFFERS,
    pair_model.SHAPE_DIFFERS,
    pair_model.INPUTS_DIFFER,
    pair_model.SCALE_DIFFERS,
    pair_model.NO_REFERENCE,
    compare_emulation.SIDE_REFUSED,
    compare_emulation.OUTPUT_DTYPES_DIFFER,
    compare_emulation.SHARED_INPUTS,
    compare_emulation.EACH_SIDE_INPUTS,
    compare_module.COMPARED,
}


def test_the_pairs_doc_names_every_key_and_code_of_the_comparison_report():
    text = "".join((DOCS / name).read_text() for name in ("pairs.md", "report.md"))  # shared blocks: report.md
    keys = set()
    for a, b in PAIRS:
        keys |= _keys(
            compare_module.compare(REPO / "sample_packets" / a, REPO / "sample_packets" / b, emulate="default").report()
        )
    assert {"emulationMatrix", "emulatedOn", "bitEqual"} <= keys  # the emulation keys were produced
    assert _missing(text, keys | PAIR_CODES) == set()


def test_the_triage_doc_names_every_field_of_a_json_line_and_the_error_codes():
    text = (DOCS / "triage-and-app.md").read_text()
    entries = discover(REPO / "sample_packets")[:2]
    fields = set()
    for item in triage(entries, jobs=1):
        fields |= set(json.loads(json_line(item)))
    assert "noiseFloorRatio" in fields
    assert _missing(text, fields | {summary.ERROR, summary.WORKER_CRASHED, summary.INTERNAL_ERROR}) == set()


def test_readme_and_docs_link_only_inside_the_repository():
    for path in (REPO / "README.md", *DOCS.glob("*.md")):
        text = path.read_text()
        assert "shared/spec" not in text and "-v1.md" not in text, path
        for target in LINK.findall(text):
            assert not target.startswith(("http:", "https:")) and (path.parent / target).exists(), (path, target)
    readme = (REPO / "README.md").read_text()
    assert "docs/packet-format.md" in readme and "docs/report.md" in readme
    assert "pip install -e '.[notebook]' && jupyter lab notebooks/" in readme
