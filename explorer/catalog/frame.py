"""triage_frame(root): `explorer triage`'s JSON lines as a pandas DataFrame for notebooks; no UI.

One row per packet, sorted by name; the columns are the JSON-line keys (docs/triage-and-app.md) with the dtypes
of DTYPES (<NA> or NaN where a number is undefined).
"""

from __future__ import annotations

import os

import pandas as pd

from explorer.catalog.discovery import discover
from explorer.catalog.limits import DEFAULT_TIMEOUT_S
from explorer.catalog.summary import STATUS_ORDER
from explorer.catalog.triage import Triaged, json_line_fields, triage
from explorer.catalog.workers import default_jobs

STRING = pd.StringDtype("python")  # holds any name, also one with an undecodable byte
DTYPES = {
    "name": STRING,
    "path": STRING,
    "status": pd.CategoricalDtype(STATUS_ORDER, ordered=True),
    "codes": object,
    "backend": STRING,
    "selection": object,
    "worstHead": "Int64",
    "worstLinfHead": "Int64",
    "worstLinf": "float64",
    "noiseFloorRatio": "float64",
    "worstUlp": "Int64",
    "score": "float64",
    "headsNotCompared": "Int64",
}


def frame_of(items: list[Triaged]) -> pd.DataFrame:
    """One row per triaged packet, sorted by name, with the documented columns and dtypes."""
    rows = [json_line_fields(item) for item in sorted(items, key=lambda item: item.name)]
    columns = {column: [row[column] for row in rows] for column in DTYPES}
    columns["codes"] = [tuple(codes) for codes in columns["codes"]]
    return pd.DataFrame({column: pd.Series(values, dtype=DTYPES[column]) for column, values in columns.items()})


def triage_frame(
    root: str | os.PathLike,
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> pd.DataFrame:
    """Triage every packet under `root` (local worker processes, or the Dask scheduler at `scheduler`)."""
    items = list(triage(discover(root), jobs=jobs or default_jobs(), scheduler=scheduler, timeout=timeout))
    return frame_of(items)
