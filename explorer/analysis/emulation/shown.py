"""The emulation set the Emulations view and every export show by default, from the view's settings.

`settings_set(blocks, partition_tokens, partial_dtype)` is the set the view computes for
its settings: the MLX and paged two-pass kernels each with its own partials and with
`partial_dtype` partials, the single-pass kernel, and the installed MLX library's own run
(a row of its own, which says so where MLX is not installed). `SHOWN_SET` is that set for
the settings' defaults. `view_set(settings)` is the set the view shows for its settings by
their URL names, the builds or the sweep included: what an export's JSON carries beside its
Emulations picture (docs/report.md, "Exports"). No I/O, no UI.
"""

from __future__ import annotations

from collections.abc import Mapping

from explorer.analysis.emulation.kernels import (
    BUILDS_NAME,
    KERNELS,
    MLX_RUN,
    MLX_TWO_PASS,
    PAGED_TWO_PASS,
    SINGLE_PASS,
    SWEEP_NAME,
)

DEFAULT_BLOCKS = KERNELS[MLX_TWO_PASS].parameter("blocks").default
DEFAULT_PARTITION_TOKENS = KERNELS[PAGED_TWO_PASS].parameter("partitionTokens").default
DEFAULT_PARTIAL = "float32"  # the partial dtype of the counterfactual variants (the incident's patched kernel)
SETTINGS_SET = "settings"  # the view's own emulations and the real library (SHOWN_SET with the defaults)
EMULATION_SETS = (SETTINGS_SET, BUILDS_NAME, SWEEP_NAME)  # the view's `emulationSet` choices


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


def view_set(settings: Mapping[str, object]) -> tuple[str, ...]:
    """The emulations the view shows for `settings` ({URL name: value}; a setting not given has its default)."""
    chosen = settings.get("emulationSet", SETTINGS_SET)
    if chosen in (BUILDS_NAME, SWEEP_NAME):
        return (str(chosen),)
    return settings_set(
        int(settings.get("blocks", DEFAULT_BLOCKS)),
        int(settings.get("partitionTokens", DEFAULT_PARTITION_TOKENS)),
        str(settings.get("partialDType", DEFAULT_PARTIAL)),
    )


def request_settings(request: str | list[str] | tuple[str, ...] | None) -> dict[str, object]:
    """The view's settings that show a command line's `--emulate`: its named set when that is `builds` or `sweep`
    alone (the export then leads with what the view leads with), else the defaults."""
    texts = [request] if isinstance(request, str) else list(request or ())
    named = [text.strip() for text in texts]
    return {"emulationSet": named[0]} if named in ([BUILDS_NAME], [SWEEP_NAME]) else {}
