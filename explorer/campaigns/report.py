"""The campaign report (JSON), its origin sentence and the command line's grid.

The campaign report (JSON, attention-explorer.campaign.v1), its origin sentence and the command line's grid; no UI.

Keys and meanings are docs/campaigns.md's. Counts are integers or null; nothing
here is a verdict: the origin says where bytes first differ, not which backend is
right.
"""

from __future__ import annotations

from typing import Any

from explorer.analysis.blocks import runtime
from explorer.campaigns.grid import Campaign, Cell, Origin, listed, origin_of
from explorer.campaigns.model import (
    DUPLICATE,
    IDENTICAL,
    KEY_FIELDS,
    MISSING,
    REFUSED_STATE,
    SCHEMA,
    STATE_CODES,
    STATES,
)
from explorer.campaigns.run import CampaignRun
from explorer.foundations.formatting import short_number

LIMITATIONS = (
    "a campaign shows where the two backends' bytes first differ among the captured cells, not why; a kernel "
    "difference in a layer or step that was not captured is invisible",
    "identity and selection fields are declarations: packets saying they captured one request are not proven to",
    "an outputs-differ cell is a kernel difference at that cell; whether it matters (a difference within "
    "rounding on both sides) is read from its pair, not decided here",
)


def _where(cell: Cell | None) -> dict[str, Any] | None:
    return (
        None
        if cell is None
        else {
            "outputIndex": cell.output_index,
            "modelLayerIndex": cell.layer,
            "packets": {backend: list(names) for backend, names in cell.packets.items()},
        }
    )


def cell_json(cell: Cell) -> dict[str, Any]:
    """One cell of `cells[]`: the pair's counts; an identical cell's are zero (its digests), a cell without a pair
    (duplicate, missing, refused) has none; a pair that failed leaves the differing tensors' counts null."""
    pair, compared = cell.pair, cell.state not in (DUPLICATE, MISSING, REFUSED_STATE)
    if cell.state == IDENTICAL:
        differing, outputs, ulp = {}, 0, 0
    elif pair is None:
        differing, outputs, ulp = dict.fromkeys(cell.inputs_differ) if compared else None, None, None
    else:
        differing, outputs, ulp = dict(pair.inputs_differing), pair.outputs_differing, pair.max_ulp
    return {
        "outputIndex": cell.output_index,
        "modelLayerIndex": cell.layer,
        "state": cell.state,
        "packets": {backend: list(names) for backend, names in cell.packets.items()},
        "inputsDiffering": differing,
        "outputsDiffering": outputs,
        "maxUlp": ulp,
        "codes": list(cell.codes),
    }


def _outputs_block(campaign: Campaign, cell: Cell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    pair, (a, b) = cell.pair, campaign.backends
    block = {
        **_where(cell),
        "elementsDiffering": None,
        "compared": None,
        "maxUlp": None,
        "nearerPrimaryReference": None,
        "nearerReason": None,
        "emulations": None,
        "reproducedBy": None,
    }
    if pair is None:
        return block
    block.update(
        elementsDiffering=pair.outputs_differing,
        compared=pair.compared,
        maxUlp=pair.max_ulp,
        nearerReason=pair.nearer_reason,
    )
    if pair.nearer is not None:
        block["nearerPrimaryReference"] = {
            a: pair.nearer["a"],
            b: pair.nearer["b"],
            "tie": pair.nearer["tie"],
            "undefined": pair.nearer["undefined"],
        }
    if pair.emulations is not None:
        block["emulations"] = [
            {"id": ident, "bitEqual": {a: equal_a, b: equal_b}, "compared": {a: compared_a, b: compared_b}}
            for ident, equal_a, equal_b, compared_a, compared_b in pair.emulations
        ]
        block["reproducedBy"] = {
            side: [
                row["id"]
                for row in block["emulations"]
                if row["bitEqual"][side] is not None and row["bitEqual"][side] == row["compared"][side]
            ]
            for side in (a, b)
        }
    return block


def _coverage(campaign: Campaign, origin: Origin) -> dict[str, Any]:
    cells = campaign.cells
    layers = sorted({cell.layer for cell in cells})
    return {
        "cellsPerBackend": {
            backend: sum(bool(cell.packets[backend]) for cell in cells) for backend in campaign.backends
        }
        if len(campaign.backends) == 2
        else {},
        "packetsPerBackend": dict(campaign.packets_per_backend),
        "steps": sorted({cell.output_index for cell in cells}),
        "layers": layers,
        "uncapturedLayers": [layer for layer in range(layers[-1]) if layer not in set(layers)] if layers else [],
        "missing": [
            {
                "outputIndex": cell.output_index,
                "modelLayerIndex": cell.layer,
                "absentOn": [backend for backend, names in cell.packets.items() if not names],
            }
            for cell in cells
            if cell.state == MISSING
        ],
        "gapsBeforeOrigin": [
            {"outputIndex": cell.output_index, "modelLayerIndex": cell.layer, "state": cell.state}
            for cell in origin.gaps_before
        ],
    }


def _at(cell: Cell) -> str:
    return f"step {cell.output_index}, layer {cell.layer}"


def origin_sentence(campaign: Campaign, origin: Origin, coverage: dict[str, Any]) -> str:
    """The one paragraph a reader needs first: where the difference starts, and what could hide it."""
    if len(campaign.backends) < 2:
        return f"One backend only ({', '.join(campaign.backends) or '-'}): nothing to compare."
    parts = []
    first, inputs, tokens = origin.first_outputs_differ, origin.first_inputs_differ, origin.first_tokens_differ
    if first is not None:
        pair = first.pair
        counts = (
            ""
            if pair is None or pair.outputs_differing is None
            else (
                f": {short_number(pair.outputs_differing)} of {short_number(pair.compared)} output elements differ, "
                f"max {short_number(pair.max_ulp)} ULP"
            )
        )
        parts.append(
            f"The first kernel-originated difference is at {_at(first)} (inputs byte-identical, outputs "
            f"differ{counts})."
        )
    else:
        parts.append("No captured cell has byte-identical inputs and differing outputs.")
    if inputs is not None:
        parts.append(
            f"Inputs first differ at {_at(inputs)} ({', '.join(inputs.inputs_differ) or 'inputs'}): "
            + (
                "inherited from the kernel difference before it."
                if origin.explained
                else "unexplained, no captured kernel difference precedes it, so the origin lies outside the "
                "captured cells."
            )
        )
    if tokens is not None:
        parts.append(f"The seed tokens first differ at step {tokens.output_index}.")
    bound = first or inputs or tokens
    if bound is None:
        identical = sum(cell.state == IDENTICAL for cell in campaign.cells)
        parts.append(
            f"All {identical} cells compared are byte-identical on both backends."
            if identical
            else "No cell holds one packet of each backend to compare."
        )
    if origin.gaps_before:
        where = "before it " if bound is not None else ""
        parts.append(
            f"{len(origin.gaps_before)} cells {where}are missing, duplicated or refused "
            f"({listed([_at(cell) for cell in origin.gaps_before], '; ')}): "
            f"{'the real' if bound is not None else 'an'} origin may be hidden there."
        )
    if coverage["uncapturedLayers"]:
        parts.append(f"Layers {listed([str(layer) for layer in coverage['uncapturedLayers']])} were not captured.")
    return " ".join(parts)


def campaign_json(campaign: Campaign) -> dict[str, Any]:
    """One entry of `campaigns[]`."""
    origin = origin_of(campaign)
    coverage = _coverage(campaign, origin)
    inputs = origin.first_inputs_differ
    return {
        "id": campaign.id,
        "key": dict(zip(KEY_FIELDS, campaign.key, strict=True)),
        "backends": list(campaign.backends),
        "cells": [cell_json(cell) for cell in campaign.cells],
        "originSentence": origin_sentence(campaign, origin, coverage),
        "firstOutputsDiffer": _outputs_block(campaign, origin.first_outputs_differ),
        "firstInputsDiffer": None
        if inputs is None
        else {
            **_where(inputs),
            "tensors": cell_json(inputs)["inputsDiffering"],
            "explained": origin.explained,
            "explanation": "inherited" if origin.explained else "unexplained",
        },
        "firstTokensDiffer": None
        if origin.first_tokens_differ is None
        else {
            "outputIndex": origin.first_tokens_differ.output_index,
            "seedTokens": dict(origin.first_tokens_differ.seed_tokens),
        },
        "coverage": coverage,
        "notes": list(campaign.notes),
    }


def build_campaign_report(run: CampaignRun) -> dict[str, Any]:
    """The JSON-ready report of every campaign under the root."""
    return {
        "schema": SCHEMA,
        "root": run.root,
        "packets": run.packets,
        "campaigns": [campaign_json(campaign) for campaign in run.campaigns],
        "notes": list(run.notes),
        "states": list(STATES),
        "runtime": runtime(),
        "limitations": list(LIMITATIONS),
    }


def grid_lines(campaign: dict[str, Any]) -> list[str]:
    """A campaign's grid as text: layers as rows, steps as columns, one character per state."""
    cells = {(cell["outputIndex"], cell["modelLayerIndex"]): cell["state"] for cell in campaign["cells"]}
    steps, layers = campaign["coverage"]["steps"], campaign["coverage"]["layers"]
    if not steps:
        return []
    width = max(len(str(step)) for step in steps)
    lines = ["layer\\step " + " ".join(str(step).rjust(width) for step in steps)]
    lines += [
        f"{layer:>10} " + " ".join(STATE_CODES.get(cells.get((step, layer)), " ").rjust(width) for step in steps)
        for layer in layers
    ]
    lines.append("  " + "  ".join(f"{code} {state}" for state, code in STATE_CODES.items()))
    return lines


def campaign_text(report: dict[str, Any]) -> list[str]:
    """The command line's text: per campaign its origin sentence first, then its grid and notes; the run's notes
    last."""
    lines = []
    for campaign in report["campaigns"]:
        key = campaign["key"]
        if len(campaign["backends"]) < 2:
            lines += [
                f"Campaign {campaign['id']}: model {key['modelID']}, request {key['requestID']}: one backend "
                f"only ({', '.join(campaign['backends']) or '-'}), no grid",
                "",
            ]
            continue
        lines += [
            campaign["originSentence"],
            f"Campaign {campaign['id']}: model {key['modelID']}, request {key['requestID']}, backends "
            f"{' vs '.join(campaign['backends'])}",
        ]
        lines += [f"Note: {note}" for note in campaign["notes"]]
        lines += [*grid_lines(campaign), ""]
    lines.append(f"{len(report['campaigns'])} campaigns among {report['packets']} packets under {report['root']}")
    lines += [f"Note: {note}" for note in report["notes"]]
    return lines
