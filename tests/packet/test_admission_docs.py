"""The repository's own docs/: every admission and after-numerics code explained, the report's keys listed, and README/docs pointing only inside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import explorer
from admission_cases import SPEC_REASON_CODES, SPEC_REFUSAL_CODES
from explorer.analysis import numerics, reference
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
AFTER_NUMERICS_CODES = {numerics.LAST_ROW_MISMATCH, numerics.NONFINITE_INPUTS_REASON, numerics.NONFINITE_COMPARISON}
UNDEFINED_CODES = {reference.QUERIES_NOT_FLOAT32, reference.STORAGE_NOT_NARROW, reference.NONFINITE_LOGITS,
                   "nonfinite_values", "zero_reference_norm"}
TABLE_CODE = re.compile(r"^\| `([a-z0-9_]+)` \|", re.M)
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
    assert sorted(tabled) == sorted(SPEC_REFUSAL_CODES | SPEC_REASON_CODES | AFTER_NUMERICS_CODES)


def test_the_report_doc_names_every_key_and_undefined_reason_the_report_carries():
    text = (DOCS / "report.md").read_text()
    keys = set()
    for name in ("injected-error-head5", "nan-stored-values", "fp16-kv", "refused-hash-mismatch"):
        keys |= _keys(explorer.analyze(REPO / "sample_packets" / name).report())
    missing = {key for key in keys | UNDEFINED_CODES if f"`{key}`" not in text and key not in text}
    assert missing == set()


def test_readme_and_docs_link_only_inside_the_repository():
    for path in (REPO / "README.md", *DOCS.glob("*.md")):
        text = path.read_text()
        assert "shared/spec" not in text and "-v1.md" not in text, path
        for target in LINK.findall(text):
            assert not target.startswith(("http:", "https:")) and (path.parent / target).exists(), (path, target)
    readme = (REPO / "README.md").read_text()
    assert "docs/packet-format.md" in readme and "docs/report.md" in readme
    assert "pip install -e '.[notebook]' && jupyter lab notebooks/" in readme
