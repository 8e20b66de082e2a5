"""Nonfinite view: counts and maps of where each tensor holds NaNs or infinities.

Head x channel kinds, or head x token counts for the stored K/V; one all-finite line per other tensor.
"""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np

from explorer.analysis.result import (
    FINITE,
    NEGATIVE_INFINITY,
    POSITIVE_INFINITY,
    QUIET_NAN,
    SIGNALING_NAN,
    Analysis,
    NonfiniteMap,
)
from explorer.packet.dtypes import FIELD_BITS
from explorer.packet.model import TENSOR_NAMES
from explorer.views.shared import html_summary
from explorer.views.shared.common import (
    Field,
    Selection,
    explained,
    grid_map,
    heading,
    hex_pattern,
    html_pane,
    named,
    note,
    plot_pane,
    state,
)
from explorer.views.shared.marks import selectable
from explorer.views.shared.markup import NEGATIVE_INFINITY_HEADER, esc, swatches, table

TOKEN_TENSORS = ("storedKeys", "storedValues")  # drawn head x token, aggregated over channels
QUERY_HEAD_TENSORS = ("queries", "output")  # query head x channel maps: a click selects that output element
KIND_CODES = (FINITE, QUIET_NAN, SIGNALING_NAN, POSITIVE_INFINITY, NEGATIVE_INFINITY)
KIND_NAMES = ("finite", "quiet NaN", "signaling NaN", "+inf", "-inf")
KIND_COLOURS = ("#f4f4f4", "#9467bd", "#e377c2", "#d62728", "#1f77b4")
COUNT_CMAP = "Reds"
MAX_TOKEN_CELLS = 200_000  # head x token cells per map; longer histories are drawn in token bins
SHOWN_LOCATIONS = 10  # first locations listed per tensor (the report holds up to 100)
ROW_PIXELS = 22
MAP_BASE_HEIGHT = 150  # title, axes and a colour bar whose label fits beside even one or two rows
MAX_MAP_HEIGHT = 460


def _height(rows: int) -> int:
    return min(MAP_BASE_HEIGHT + ROW_PIXELS * rows, MAX_MAP_HEIGHT)


def legend_html() -> str:
    """The colour of each kind (finite, quiet/signaling NaN, +/-inf) as a line of swatches."""
    return f'<div class="kind-legend">{swatches(zip(KIND_NAMES, KIND_COLOURS, strict=True))}</div>'


def _channel_map(nonfinite: NonfiniteMap, bits: np.ndarray, dtype: str, height: int | None = None) -> hv.Image:
    """Head x channel map of one single-token tensor, each cell coloured by its kind (`height`: default by rows)."""
    kinds = nonfinite.kinds[:, 0, :]
    fields = [
        Field("kind", "kind", kinds, lambda: named(KIND_NAMES)),
        Field("bits", "bit pattern", bits[0, :, 0, :], lambda: hex_pattern(sum(FIELD_BITS[dtype]))),
    ]
    return grid_map(
        kinds,
        fields,
        title=f"{nonfinite.tensor}: kind of every element",
        colour_label="kind",
        ylabel="head",
        clim=(-0.5, len(KIND_CODES) - 0.5),
        cmap=list(KIND_COLOURS),
        colorbar=False,
        height=height or _height(kinds.shape[0]),
    )


def token_bins(tokens: int, heads: int) -> int:
    """Tokens per drawn column so a head x token map stays within MAX_TOKEN_CELLS cells."""
    return max(1, math.ceil(heads * tokens / MAX_TOKEN_CELLS))


def _token_map(nonfinite: NonfiniteMap, height: int | None = None) -> tuple[hv.Image, str]:
    """Head x token map of a stored tensor: per-row counts of each kind over the channels, binned when long."""
    counts = nonfinite.per_head_token
    heads, tokens, _ = counts.shape
    width = token_bins(tokens, heads)
    starts = np.arange(0, tokens, width)
    if width > 1:
        counts = np.add.reduceat(counts, starts, axis=1)
    columns = counts.shape[1]
    first = np.broadcast_to(starts.astype(np.int32)[None, :], (heads, columns))
    last = np.broadcast_to(np.minimum(starts + width, tokens).astype(np.int32)[None, :] - 1, (heads, columns))
    tokens_shown = [Field("first_token", "first token", first), Field("last_token", "last token", last)]
    # per_head_token holds quiet NaN, signaling NaN, +inf, -inf counts: the kinds after FINITE, in order.
    fields = [
        *(tokens_shown if width > 1 else []),
        *(
            Field(f"kind_{code}", f"{name} (elements)", counts[:, :, index].astype(np.int32))
            for index, (code, name) in enumerate(zip(KIND_CODES[1:], KIND_NAMES[1:], strict=True))
        ),
    ]
    total = counts.sum(axis=2).astype(np.int32)
    xlabel = "token" if width == 1 else f"token bin ({width} tokens each)"
    image = grid_map(
        total,
        fields,
        title=f"{nonfinite.tensor}: nonfinite elements per head and token",
        colour_label="count",
        xlabel=xlabel,
        ylabel="head",
        clim=(0, max(int(total.max()), 1)),
        cmap=COUNT_CMAP,
        height=height or _height(heads),
        counts=True,
    )
    binned = (
        f"Drawn in bins of {width} tokens (at most {MAX_TOKEN_CELLS} cells); hover gives each bin's token range."
        if width > 1
        else "One column per token."
    )
    return image, f"Colour: nonfinite elements over the channels of each head and token. {binned}"


def tensor_map(analysis: Analysis, name: str, height: int | None = None) -> hv.Image:
    """The map of where tensor `name` (holding NaN or infinity) holds them: head x token counts for the stored K/V,
    else head x channel kinds; `height` in pixels (default: by its rows)."""
    nonfinite = analysis.facts.nonfinite[name]
    if name in TOKEN_TENSORS:
        return _token_map(nonfinite, height)[0]
    tensor = analysis.admission.tensors[name]
    return _channel_map(nonfinite, tensor.bits, tensor.dtype, height)


def _counts_table(analysis: Analysis) -> str:
    rows = []
    for name in TENSOR_NAMES:
        m = analysis.facts.nonfinite[name]
        shown = ", ".join(str(list(p)) for p in m.first_locations[:SHOWN_LOCATIONS])
        if len(m.first_locations) > SHOWN_LOCATIONS:
            shown += f" (first {SHOWN_LOCATIONS} of {len(m.first_locations)} listed in the report)"
        rows.append(
            (
                f"<code>{name}</code>",
                esc(m.dtype),
                esc(m.nan),
                esc(m.signaling_nan),
                esc(m.positive_infinity),
                esc(m.negative_infinity),
                "all finite" if m.total == 0 else esc(shown),
            )
        )
    return table(
        (
            "tensor",
            "dtype",
            "NaN (quiet and signaling)",
            "of which signaling NaN",
            "+inf",
            NEGATIVE_INFINITY_HEADER,
            "first [head, token, channel]",
        ),
        rows,
        css_class="nonfinite-counts",
    )


def _tensor(analysis: Analysis, name: str, selection: Selection) -> list:
    """The map of one tensor holding NaN or infinity; one line for an all-finite tensor (its map would be blank)."""
    nonfinite = analysis.facts.nonfinite[name]
    tensor = analysis.admission.tensors[name]
    if nonfinite.total == 0:
        finite = f"({math.prod(tensor.shape)} elements, no NaN and no infinity): no map drawn."
        return [note(f"<b><code>{name}</code>: all finite</b> {finite}", "tensor-all-finite")]
    title = heading(name)
    if name in TOKEN_TENSORS:
        image, caption = _token_map(nonfinite)
        return [title, plot_pane(image), note(esc(caption))]
    pane = plot_pane(_channel_map(nonfinite, tensor.bits, tensor.dtype))
    return [title, selectable(pane, selection) if name in QUERY_HEAD_TENSORS else pane]


def codes(names) -> str:
    """Tensor names as code, comma-separated."""
    return ", ".join(f"<code>{name}</code>" for name in names)


def _body(analysis: Analysis, selection: Selection) -> list:
    parts = [heading("Nonfinite counts"), html_pane(_counts_table(analysis))]
    finite = [name for name in TENSOR_NAMES if analysis.facts.nonfinite[name].total == 0]
    others = [name for name in TENSOR_NAMES if name not in finite]
    if not others:
        everywhere = f"any element of the six tensors ({codes(TENSOR_NAMES)})"
        parts.append(state(f"<b>All finite</b>: no NaN and no infinity in {everywhere}.", "all-finite"))
    elif finite:
        held = f"{codes(others)} hold NaN or infinity (counts above)"
        parts.append(note(f"No NaN and no infinity in {codes(finite)} only; {held}.", "tensors-all-finite"))
    parts.append(
        heading(
            "Where",
            "Tensors holding NaN or infinity are mapped. Queries, output and incoming K/V: "
            "one cell per head and channel, coloured by kind. Stored K/V: one cell per head and token, "
            "coloured by its nonfinite count.",
        )
    )
    if others:
        parts.append(html_pane(legend_html()))
    for name in TENSOR_NAMES:
        parts += _tensor(analysis, name, selection)
    return parts


# The nonfinite view of one analysis (explains itself when no tensor facts exist).
build = explained(
    html_summary.NEEDS_FACTS, _body, "the NaN and infinity maps and counts of the six tensors", "view-nonfinite"
)
