"""Every refusal and inconclusive code on a real packet on disk, with its exact (code, field) list.

Every refusal and inconclusive code of docs/packet-format.md on a real packet on disk, with its exact (code,
field) list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.packet.admission import admit

from admission_cases import (
    ANALYZABLE_CASES,
    CASCADE_CASES,
    INCONCLUSIVE_CASES,
    REFUSED_CASES,
    SPEC_REASON_CODES,
    SPEC_REFUSAL_CODES,
    ids,
    write_case,
)
from packet_support import ordered, problems, reason_codes

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "packet-v1.md"


@pytest.mark.parametrize("case", REFUSED_CASES + CASCADE_CASES, ids=ids(REFUSED_CASES + CASCADE_CASES))
def test_refusal_codes(tmp_path, case):
    admission = admit(write_case(case, tmp_path / "packet"))
    assert problems(admission) == ordered(case.expected)
    assert admission.reasons == ()
    assert admission.refused


@pytest.mark.parametrize("case", INCONCLUSIVE_CASES, ids=ids(INCONCLUSIVE_CASES))
def test_inconclusive_codes(tmp_path, case):
    admission = admit(write_case(case, tmp_path / "packet"))
    assert problems(admission) == []
    assert reason_codes(admission) == case.expected
    assert admission.tensors is not None  # files verified and geometry holds: tensor facts are reported
    assert not admission.numerics_allowed


@pytest.mark.parametrize("case", ANALYZABLE_CASES, ids=ids(ANALYZABLE_CASES))
def test_supported_variants_admit_cleanly(tmp_path, case):
    admission = admit(write_case(case, tmp_path / "packet"))
    assert problems(admission) == [] and reason_codes(admission) == []
    assert admission.numerics_allowed


def test_every_code_of_the_spec_is_covered():
    refusal_codes = {code for case in REFUSED_CASES for code, _ in case.expected}
    reason_codes_covered = {code for case in INCONCLUSIVE_CASES for code in case.expected}
    expected_refusals, expected_reasons = SPEC_REFUSAL_CODES, SPEC_REASON_CODES
    assert refusal_codes == expected_refusals
    assert reason_codes_covered == expected_reasons
    if SPEC.exists():  # the spec lives beside the repository on the development machine
        text = SPEC.read_text()
        assert all(f"`{code}`" in text for code in expected_refusals | expected_reasons)
