"""The two pure functions a campaign runs in worker processes: one packet's placement, one cell's pair numbers; no UI.

`member_of(path)` analyzes the packet exactly as triage's summary does and keeps
where it sits (the campaign key, the cell, the seed token, the backend) and the
sha256 of every tensor's native bytes, which admission verified. `cell_pair(task)`
compares a cell's two packets as `explorer compare` does and keeps its counts.
Both return small picklable records and never raise for packet content.
"""

from __future__ import annotations

from explorer.analysis.analyze import analyze
from explorer.catalog.summary import summary_of
from explorer.campaigns.model import KEY_FIELDS, CellPair, Member
from explorer.pair.compare import compare
from explorer.pair.model import INPUT_NAMES

CellTask = tuple[str, str, tuple[str, ...] | None]  # path of side a, path of side b, emulation ids or None


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
        name="", path=summary.path, status=summary.status, codes=summary.codes,
        backend=None if identity is None else identity["backend"], key=key,
        output_index=selection["outputIndex"] if placed else None,
        layer=selection["modelLayerIndex"] if placed else None,
        seed_token=sample["seedToken"] if placed else None,
        input_digests=None if tensors is None else tuple(tensors[name].sha256 for name in INPUT_NAMES),
        output_digest=None if tensors is None else tensors["output"].sha256)


def cell_pair(task: CellTask) -> CellPair:
    """The compare-v1 pair of a cell's two packets, reduced to the counts the grid and the origin show."""
    path_a, path_b, emulate = task
    pair = compare(path_a, path_b, emulate=emulate)
    codes = tuple(dict.fromkeys([refusal.problem.code for refusal in pair.refusals] +
                                [reason.code for reason in pair.reasons]))
    inputs = pair.inputs
    differing = {} if inputs is None else {name: tensor.mismatched for name, tensor in inputs.tensors.items()
                                           if not tensor.identical}
    output = pair.output
    bits = None if output is None else output.bits
    nearer = None if pair.nearer is None else {name: getattr(pair.nearer.global_counts, name)
                                               for name in ("a", "b", "tie", "undefined")}
    rows = None if pair.emulation is None or pair.emulation.rows is None else pair.emulation.rows
    return CellPair(
        status=pair.status, codes=codes, inputs_differing=differing,
        outputs_differing=None if bits is None else bits.mismatched,
        compared=None if output is None else output.compared,
        max_ulp=None if output is None or output.ulp is None else output.ulp.max,
        nearer=nearer, nearer_reason=pair.nearer_reason,
        emulations=None if rows is None else tuple((row.a.id, row.a.bit_equal, row.b.bit_equal, row.a.compared,
                                                    row.b.compared) for row in rows))
