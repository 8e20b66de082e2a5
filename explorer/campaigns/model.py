"""The campaign's frozen records: a packet's placement, a cell's pair numbers, the cell states; no I/O."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from explorer.foundations.record import Record, record

SCHEMA = "attention-explorer.campaign.v1"

DUPLICATE = "duplicate"
MISSING = "missing"
REFUSED_STATE = "refused"
TOKENS_DIFFER = "tokens_differ"
INPUTS_DIFFER = "inputs_differ"
OUTPUTS_DIFFER = "outputs_differ"
IDENTICAL = "identical"
# The precedence of the states, highest first (docs/campaigns.md, "Cell states").
STATES = (DUPLICATE, MISSING, REFUSED_STATE, TOKENS_DIFFER, INPUTS_DIFFER, OUTPUTS_DIFFER, IDENTICAL)
# One character per state in the command line's grid.
STATE_CODES = {
    DUPLICATE: "D",
    MISSING: ".",
    REFUSED_STATE: "R",
    TOKENS_DIFFER: "T",
    INPUTS_DIFFER: "i",
    OUTPUTS_DIFFER: "O",
    IDENTICAL: "=",
}

KEY_FIELDS = ("modelID", "artifactSHA256", "inputSHA256", "requestID")
CampaignKey = tuple[Any, Any, Any, Any]  # the values of KEY_FIELDS
ID_DIGITS = 12  # hex digits of a campaign's id
# A cell's code when one of its packets was rewritten between the campaign's two passes (its digests changed).
PACKET_CHANGED = "packet_changed"


def campaign_id(key: CampaignKey, capture_set: str | None = None) -> str:
    """A short stable name for URLs: 'c' and hex digits of the sha256 of its key (and capture set, when split)."""
    parts = [str(part) for part in key] + ([] if capture_set is None else [capture_set])
    return "c" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:ID_DIGITS]


@record
class Member(Record):
    """One packet as a campaign sees it: where it sits (None where not established: then in no campaign) and the
    digests of its tensors' native bytes (None without verified tensors; inputs in the pair's order)."""

    name: str
    path: str
    status: str
    codes: tuple[str, ...]
    backend: str | None
    key: CampaignKey | None
    output_index: Any
    layer: Any
    seed_token: Any
    input_digests: tuple[str, ...] | None
    output_digest: str | None


@record
class CellPair(Record):
    """The numbers of one cell's pair (docs/pairs.md; side a the first backend); `emulations` holds (id, bitEqual
    a, bitEqual b, compared a, compared b) rows when asked for."""

    status: str
    codes: tuple[str, ...]
    inputs_differing: Mapping[str, int | None]
    outputs_differing: int | None
    compared: int | None
    max_ulp: int | None
    nearer: Mapping[str, int] | None
    nearer_reason: str | None
    emulations: tuple[tuple[str, int | None, int | None, int, int], ...] | None
