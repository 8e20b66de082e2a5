"""The emulation set the Emulations view and every export show by default, from the view's settings.

`settings_set(blocks, partition_tokens, partial_dtype)` is the set the view computes for
its settings: the MLX and paged two-pass kernels each with its own partials and with
`partial_dtype` partials, the single-pass kernel, and the installed MLX library's own run
(a row of its own, which says so where MLX is not installed). `SHOWN_SET` is that set for
the settings' defaults: what an export's JSON carries beside its Emulations picture
(docs/report.md, "Exports"). No I/O, no UI.
"""

from __future__ import annotations

from explorer.analysis.emulation.kernels import KERNELS, MLX_RUN, MLX_TWO_PASS, PAGED_TWO_PASS, SINGLE_PASS

DEFAULT_BLOCKS = KERNELS[MLX_TWO_PASS].parameter("blocks").default
DEFAULT_PARTITION_TOKENS = KERNELS[PAGED_TWO_PASS].parameter("partitionTokens").default
DEFAULT_PARTIAL = "float32"  # the partial dtype of the counterfactual variants (the incident's patched kernel)


def settings_set(blocks: int, partition_tokens: int, partial_dtype: str) -> tuple[str, ...]:
    """The emulation ids the Emulations view computes for its settings (with the defaults: SHOWN_SET)."""
    return (
        f"{MLX_TWO_PASS}(blocks={blocks})",
        f"{MLX_TWO_PASS}(blocks={blocks},partialDType={partial_dtype})",
        f"{PAGED_TWO_PASS}(partitionTokens={partition_tokens})",
        f"{PAGED_TWO_PASS}(partitionTokens={partition_tokens},partialDType={partial_dtype})",
        SINGLE_PASS,
        MLX_RUN,
    )


SHOWN_SET = settings_set(DEFAULT_BLOCKS, DEFAULT_PARTITION_TOKENS, DEFAULT_PARTIAL)
