"""The pure functions a campaign runs in worker processes: a packet's placement, a cell's counts.

`member_of` analyzes a packet as triage does and keeps its place and tensor digests; `cell_counts` reads a
cell's two packets again and counts what a pair counts (docs/pairs.md); `cell_pair` is the whole pair, for each
campaign's first outputs-differ cell. Both give `packet_changed` when a packet's digests changed since the
first pass. All return small picklable records and never raise for packet content.
"""

from __future__ import annotations

import numpy as np

from explorer.analysis.analyze import analyze
from explorer.analysis.metrics import ulp_distance
from explorer.campaigns.model import KEY_FIELDS, PACKET_CHANGED, CellPair, Member
from explorer.catalog.summary import summary_of
from explorer.packet.admission import admit
from explorer.packet.model import REFUSED, Admission
from explorer.pair.compare import COMPARED, PAIR_INCONCLUSIVE, compare
from explorer.pair.model import INPUT_NAMES, SHAPE_DIFFERS

Digests = tuple[str, ...]  # the sha256 of a packet's five inputs (the pair's order) and of its output
# path of side a, path of side b, and the digests the first pass read of each side (None: not checked)
CountTask = tuple[str, str, tuple[Digests, Digests] | None]
CellTask = tuple[str, str, tuple[Digests, Digests] | None, tuple[str, ...] | None]  # ..., emulation ids or None
CHANGED = CellPair(PACKET_CHANGED, (PACKET_CHANGED,), {}, None, None, None, None, None, None)


def digests_of(member: Member) -> Digests | None:
    """The digests the first pass read of a placed packet (None without verified tensors)."""
    return None if member.input_digests is None else (*member.input_digests, member.output_digest)


def _changed(admissions: tuple[Admission, Admission], expected: tuple[Digests, Digests] | None) -> bool:
    """A side read again holds other tensors than the first pass read (or none now)."""
    if expected is None:
        return False
    return any(
        admission.tensors is None
        or tuple(admission.tensors[name].sha256 for name in (*INPUT_NAMES, "output")) != digests
        for admission, digests in zip(admissions, expected, strict=True)
    )


def member_of(path: str) -> Member:
    """Analyze the packet at `path` and place it (name filled in by the caller)."""
    analysis = analyze(path)
    summary = summary_of(analysis)
    admission = analysis.admission
    identity, selection, sample = admission.identity, admission.selection, admission.sample
    placed = None not in (identity, selection, sample)
    key = tuple({**identity, **selection}[field] for field in KEY_FIELDS) if placed else None
    tensors = admission.tensors
    return Member(
        name="",
        path=summary.path,
        status=summary.status,
        codes=summary.codes,
        backend=None if identity is None else identity["backend"],
        key=key,
        output_index=selection["outputIndex"] if placed else None,
        layer=selection["modelLayerIndex"] if placed else None,
        seed_token=sample["seedToken"] if placed else None,
        input_digests=None if tensors is None else tuple(tensors[name].sha256 for name in INPUT_NAMES),
        output_digest=None if tensors is None else tensors["output"].sha256,
    )


def cell_counts(task: CountTask) -> CellPair:
    """The differing elements per input tensor and of the output, and the largest ULP distance, of a cell."""
    path_a, path_b, expected = task
    a, b = admit(path_a), admit(path_b)
    if _changed((a, b), expected):
        return CHANGED
    if a.refused or b.refused or a.tensors is None or b.tensors is None:
        codes = tuple(dict.fromkeys(problem.code for side in (a, b) for problem in side.refusals))
        return CellPair(REFUSED, codes, {}, None, None, None, None, None, None)
    first, second = a.tensors, b.tensors
    if (
        any((first[name].shape, first[name].dtype) != (second[name].shape, second[name].dtype) for name in INPUT_NAMES)
        or first["output"].shape != second["output"].shape
    ):
        return CellPair(PAIR_INCONCLUSIVE, (SHAPE_DIFFERS,), {}, None, None, None, None, None, None)
    differing = {
        name: int(np.count_nonzero(first[name].bits != second[name].bits))
        for name in INPUT_NAMES
        if first[name].sha256 != second[name].sha256
    }
    output_a, output_b = first["output"], second["output"]
    bits_a, bits_b = output_a.bits[0, :, 0, :], output_b.bits[0, :, 0, :]
    if output_a.dtype != output_b.dtype:  # compared by value only in a pair: no bit or ULP counts
        return CellPair(COMPARED, (), differing, None, int(bits_a.size), None, None, None, None)
    ulp = ulp_distance(bits_a, bits_b, output_a.dtype, np.ones(bits_a.shape[0], dtype=bool))
    return CellPair(
        COMPARED, (), differing, int(np.count_nonzero(bits_a != bits_b)), int(bits_a.size), ulp.max, None, None, None
    )


def cell_pair(task: CellTask) -> CellPair:
    """The pair (docs/pairs.md) of a cell's two packets, reduced to the counts and findings the origin shows."""
    path_a, path_b, expected, emulate = task
    pair = compare(path_a, path_b, emulate=emulate)
    if _changed((pair.a.admission, pair.b.admission), expected):
        return CHANGED
    codes = tuple(
        dict.fromkeys([refusal.problem.code for refusal in pair.refusals] + [reason.code for reason in pair.reasons])
    )
    inputs = pair.inputs
    differing = (
        {}
        if inputs is None
        else {name: tensor.mismatched for name, tensor in inputs.tensors.items() if not tensor.identical}
    )
    output = pair.output
    bits = None if output is None else output.bits
    nearer = (
        None
        if pair.nearer is None
        else {name: getattr(pair.nearer.global_counts, name) for name in ("a", "b", "tie", "undefined")}
    )
    rows = None if pair.emulation is None else pair.emulation.rows
    return CellPair(
        status=pair.status,
        codes=codes,
        inputs_differing=differing,
        outputs_differing=None if bits is None else bits.mismatched,
        compared=None if output is None else output.compared,
        max_ulp=None if output is None or output.ulp is None else output.ulp.max,
        nearer=nearer,
        nearer_reason=pair.nearer_reason,
        emulations=None
        if rows is None
        else tuple((row.a.id, row.a.bit_equal, row.b.bit_equal, row.a.compared, row.b.compared) for row in rows),
    )
