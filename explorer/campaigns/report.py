"""The campaign report (JSON, attention-explorer.campaign.v1) and its origin sentence; no verdicts.

Keys are docs/campaigns.md's: the origin says where bytes first differ, not which backend is right.
"""

from __future__ import annotations

from typing import Any

from explorer.analysis.blocks import runtime
from explorer.campaigns.axis import uncaptured
from explorer.campaigns.grid import Campaign, Cell, Origin, are, counted, listed, origin_of
from explorer.campaigns.model import DUPLICATE, IDENTICAL, KEY_FIELDS, MISSING, REFUSED_STATE, SCHEMA, STATES
from explorer.campaigns.run import CampaignRun
from explorer.campaigns.sets import compared
from explorer.foundations.formatting import short_number

LIMITATIONS = (
    "a campaign shows where the two backends' bytes first differ among the captured cells, not why; a kernel "
    "difference in a layer or step that was not captured is invisible",
    "identity and selection fields are declarations: packets saying they captured one request are not proven to",
    "an outputs-differ cell is a kernel difference at that cell; whether it matters (a difference within "
    "rounding on both sides) is read from its pair, not decided here",
)


def _where(cell: Cell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    packets = {backend: list(names) for backend, names in cell.packets.items()}
    return {"outputIndex": cell.output_index, "modelLayerIndex": cell.layer, "packets": packets}


def cell_json(cell: Cell) -> dict[str, Any]:
    """One cell of `cells[]` with its pair's counts (zero when identical, null where not counted)."""
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
        "emulationSentence": None,
    }
    if pair is None:
        return block
    block.update(
        elementsDiffering=pair.outputs_differing,
        compared=pair.compared,
        maxUlp=pair.max_ulp,
        nearerReason=pair.nearer_reason,
    )
    if pair.nearer is not None:  # sides "a" and "b" by their backends' names
        block["nearerPrimaryReference"] = {{"a": a, "b": b}.get(name, name): n for name, n in pair.nearer.items()}
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
        block["emulationSentence"] = emulation_sentence(block, campaign.backends)
    return block


def _side_reproduced(block: dict[str, Any], side: str) -> str:
    reproducing = block["reproducedBy"][side]
    if reproducing:
        return f"{side} by {', '.join(reproducing)}"
    rows = [row for row in block["emulations"] if row["bitEqual"][side] is not None]
    if not rows:
        return f"{side} by none (no emulation could be computed on it)"
    closest = max(rows, key=lambda row: row["bitEqual"][side])
    return (
        f"{side} by none (closest {closest['id']}: {short_number(closest['bitEqual'][side])} of "
        f"{short_number(closest['compared'][side])} elements bit-equal)"
    )


def emulation_sentence(block: dict[str, Any], backends: tuple[str, ...]) -> str:
    """Which of the emulations asked for reproduce each side of the first outputs-differ cell bit for bit."""
    return (
        f"Of the {counted(len(block['emulations']), 'emulation')} asked for, the output at "
        f"{_at_block(block)} is reproduced bit for bit on "
        + "; on ".join(_side_reproduced(block, side) for side in backends)
        + "."
    )


def _coverage(campaign: Campaign, origin: Origin) -> dict[str, Any]:
    cells = campaign.cells
    layers = sorted({cell.layer for cell in cells})
    per_backend = {backend: sum(bool(cell.packets[backend]) for cell in cells) for backend in campaign.backends}
    return {
        "cellsPerBackend": per_backend if compared(campaign.backends) else {},
        "packetsPerBackend": dict(campaign.packets_per_backend),
        "steps": sorted({cell.output_index for cell in cells}),
        "layers": layers,
        "uncapturedLayers": [list(run) for run in uncaptured(layers)],
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


def _at_block(block: dict[str, Any]) -> str:
    return f"step {block['outputIndex']}, layer {block['modelLayerIndex']}"


def _run_text(run: list[int]) -> str:
    first, last = run
    return str(first) if first == last else f"{first} to {last}"


def origin_sentence(
    campaign: Campaign, origin: Origin, coverage: dict[str, Any], outputs: dict[str, Any] | None = None
) -> str:
    """The paragraph a reader needs first: where the difference starts (with `outputs`, its firstOutputsDiffer
    block, the emulations reproducing each side) and what could hide it."""
    if not compared(campaign.backends):
        return f"One backend only ({', '.join(campaign.backends) or '-'}): nothing to compare."
    parts = []
    first, inputs, tokens = origin.first_outputs_differ, origin.first_inputs_differ, origin.first_tokens_differ
    if first is not None:
        pair = first.pair
        counts = ""
        if pair is not None and pair.outputs_differing is not None:
            counts = f": {short_number(pair.outputs_differing)} of {short_number(pair.compared)} output elements"
            counts += f" differ, max {short_number(pair.max_ulp)} ULP"
        parts.append(
            f"The first kernel-originated difference is at {_at(first)} (inputs byte-identical, outputs "
            f"differ{counts})."
        )
        if outputs is not None and outputs["emulationSentence"] is not None:
            parts.append(outputs["emulationSentence"])
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
            f"{'The' if identical == 1 else 'All'} {counted(identical, 'cell')} compared {are(identical)} "
            "byte-identical on both backends."
            if identical
            else "No cell holds one packet of each backend to compare."
        )
    if origin.gaps_before:
        where = "before it " if bound is not None else ""
        parts.append(
            f"{counted(len(origin.gaps_before), 'cell')} {where}{are(len(origin.gaps_before))} "
            "missing, duplicated or refused "
            f"({listed([_at(cell) for cell in origin.gaps_before], '; ')}): "
            f"{'the real' if bound is not None else 'an'} origin may be hidden there."
        )
    runs = coverage["uncapturedLayers"]
    if runs:
        single = len(runs) == 1 and runs[0][0] == runs[0][1]
        parts.append(
            f"{'Layer' if single else 'Layers'} {listed([_run_text(run) for run in runs])} "
            f"{'was' if single else 'were'} not captured."
        )
    return " ".join(parts)


def campaign_json(campaign: Campaign) -> dict[str, Any]:
    """One entry of `campaigns[]`."""
    origin = origin_of(campaign)
    coverage = _coverage(campaign, origin)
    inputs, tokens = origin.first_inputs_differ, origin.first_tokens_differ
    seeds = None if tokens is None else dict(tokens.seed_tokens)
    outputs = _outputs_block(campaign, origin.first_outputs_differ)
    return {
        "id": campaign.id,
        "key": dict(zip(KEY_FIELDS, campaign.key, strict=True)),
        "captureSet": campaign.capture_set,
        "backends": list(campaign.backends),
        "cells": [cell_json(cell) for cell in campaign.cells],
        "originSentence": origin_sentence(campaign, origin, coverage, outputs),
        "firstOutputsDiffer": outputs,
        "firstInputsDiffer": None
        if inputs is None
        else {
            **_where(inputs),
            "tensors": cell_json(inputs)["inputsDiffering"],
            "explained": origin.explained,
            "explanation": "inherited" if origin.explained else "unexplained",
        },
        "firstTokensDiffer": None if tokens is None else {"outputIndex": tokens.output_index, "seedTokens": seeds},
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
