"""A campaign's findings: the origin sentence, then the first cells with their numbers and emulations.

Read from one entry of the report's `campaigns` so every number is the JSON's; no I/O, no UI. Names and model
ids are the packets' declarations, given as they are: a renderer shows them as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from explorer.analysis.findings import Finding, finding
from explorer.foundations.formatting import short_number

Block = Mapping[str, Any]


def cell_text(block: Block) -> str:
    """'step S, layer L (backend: packet, ...; ...)': where a cell is and the packets it holds."""
    packets = "; ".join(f"{backend}: {', '.join(names) or '-'}" for backend, names in block["packets"].items())
    return f"step {block['outputIndex']}, layer {block['modelLayerIndex']} ({packets})"


def _nearer(first: Block) -> str:
    nearer = first["nearerPrimaryReference"]
    if nearer is None:
        return f"nearer the shared primary reference: not defined ({first['nearerReason']})"
    return "nearer the shared primary reference: " + ", ".join(
        f"{side} {short_number(n)}" for side, n in nearer.items()
    )


def _reproduced(first: Block) -> str | None:
    if first["reproducedBy"] is None:
        return None
    by = (f"on {side} by {', '.join(ids) or 'no emulation'}" for side, ids in first["reproducedBy"].items())
    return "reproduced bit for bit " + "; ".join(by)


def first_outputs_finding(first: Block) -> Finding:
    """The first cell with byte-identical inputs and differing outputs: its counts, nearer side and emulations."""
    parts = [
        f"{short_number(first['elementsDiffering'])} of {short_number(first['compared'])} output elements differ, "
        f"max ULP distance {short_number(first['maxUlp'])}",
        _nearer(first),
        _reproduced(first),
    ]
    return finding(
        "firstOutputsDiffer",
        f"First outputs-differ cell (inputs byte-identical): {cell_text(first)}: "
        + "; ".join(part for part in parts if part)
        + ".",
        outputIndex=first["outputIndex"],
        modelLayerIndex=first["modelLayerIndex"],
        elementsDiffering=first["elementsDiffering"],
        compared=first["compared"],
        maxUlp=first["maxUlp"],
        reproducedBy=first["reproducedBy"],
    )


def first_inputs_finding(inputs: Block) -> Finding:
    """The first cell whose inputs differ: the differing input elements per tensor, inherited or unexplained."""
    tensors = ", ".join(f"{name} {short_number(count)}" for name, count in (inputs["tensors"] or {}).items())
    return finding(
        "firstInputsDiffer",
        f"First inputs-differ cell: {cell_text(inputs)}: differing input elements {tensors or '-'}; "
        f"{inputs['explanation']}.",
        outputIndex=inputs["outputIndex"],
        modelLayerIndex=inputs["modelLayerIndex"],
        tensors=inputs["tensors"],
        explained=inputs["explained"],
    )


def first_tokens_finding(tokens: Block) -> Finding:
    """The first step whose seed tokens differ, with each backend's token."""
    seeds = ", ".join(f"{backend} {short_number(token)}" for backend, token in tokens["seedTokens"].items())
    return finding(
        "firstTokensDiffer",
        f"First token divergence at step {tokens['outputIndex']}: seed tokens {seeds}.",
        outputIndex=tokens["outputIndex"],
        seedTokens=dict(tokens["seedTokens"]),
    )


def campaign_findings(campaign: Block) -> tuple[Finding, ...]:
    """The campaign's findings in reading order: the origin sentence, then the first cells that differ."""
    found = [finding("origin", campaign["originSentence"])]
    if campaign["firstOutputsDiffer"] is not None:
        found.append(first_outputs_finding(campaign["firstOutputsDiffer"]))
    if campaign["firstInputsDiffer"] is not None:
        found.append(first_inputs_finding(campaign["firstInputsDiffer"]))
    if campaign["firstTokensDiffer"] is not None:
        found.append(first_tokens_finding(campaign["firstTokensDiffer"]))
    return tuple(found)


def key_lines(campaign: Block) -> list[str]:
    """What makes the packets one campaign: model, artifact, input, request, and the backends compared."""
    key = campaign["key"]
    return [
        f"model: {key['modelID']}",
        f"artifact: {key['artifactSHA256']}",
        f"input: {key['inputSHA256']}",
        f"request: {key['requestID']}",
        f"backends: {' vs '.join(campaign['backends']) or '-'}",
    ]


def coverage_lines(campaign: Block) -> list[str]:
    """Steps, layers, cells per backend, the missing cells and those before the origin, then the notes."""
    coverage = campaign["coverage"]
    per_backend = ", ".join(f"{b} {n}" for b, n in coverage["cellsPerBackend"].items())
    return [
        f"steps: {', '.join(map(str, coverage['steps'])) or '-'}",
        f"layers: {', '.join(map(str, coverage['layers'])) or '-'}",
        f"cells per backend: {per_backend or '-'}",
        f"missing cells: {len(coverage['missing'])}; before the origin: {len(coverage['gapsBeforeOrigin'])}",
        *(f"note: {note}" for note in campaign["notes"]),
    ]
