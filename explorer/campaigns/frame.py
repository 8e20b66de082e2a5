"""campaign_frame(root): every campaign's cells as a pandas DataFrame for notebooks; no UI.

One row per cell, by campaign and causal order, with DTYPES' columns and dtypes; `df.attrs` holds the report
without its cells (`campaigns`, `singleBackend`, `notes`, `schema`, `root`).
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from explorer.campaigns.model import KEY_FIELDS, STATES
from explorer.campaigns.sets import compared
from explorer.catalog.limits import DEFAULT_TIMEOUT_S

# The columns in order, with their dtypes.
DTYPES = {
    "campaign": pd.StringDtype("python"),
    "captureSet": pd.StringDtype("python"),
    **dict.fromkeys(KEY_FIELDS, object),
    "outputIndex": "Int64",
    "modelLayerIndex": "Int64",
    "state": pd.CategoricalDtype(STATES, ordered=True),
    "packets": object,
    "inputsDiffering": object,
    "outputsDiffering": "Int64",
    "maxUlp": "Int64",
    "codes": object,
}


def frame_of(report: dict[str, Any]) -> pd.DataFrame:
    """The DataFrame of a campaign report (build_campaign_report)."""
    rows = [
        {"campaign": campaign["id"], "captureSet": campaign["captureSet"], **campaign["key"], **cell}
        for campaign in report["campaigns"]
        for cell in campaign["cells"]
    ]
    frame = pd.DataFrame({column: pd.Series([row[column] for row in rows], dtype=DTYPES[column]) for column in DTYPES})
    entries = [{key: value for key, value in campaign.items() if key != "cells"} for campaign in report["campaigns"]]
    frame.attrs = {
        "schema": report["schema"],
        "root": report["root"],
        "notes": report["notes"],
        "campaigns": [entry for entry in entries if compared(entry["backends"])],
        "singleBackend": [entry for entry in entries if not compared(entry["backends"])],
    }
    return frame


def campaign_frame(
    root: str | os.PathLike,
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    request: str | None = None,
    backends: tuple[str, str] | None = None,
    emulate: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """Find and grid every campaign under `root` (local worker processes, or the Dask scheduler at `scheduler`)."""
    from explorer.campaigns.report import build_campaign_report
    from explorer.campaigns.run import run_campaigns
    from explorer.catalog.workers import default_jobs

    run = run_campaigns(
        root,
        jobs=jobs or default_jobs(),
        scheduler=scheduler,
        timeout=timeout,
        request=request,
        backends=backends,
        emulate=emulate,
    )
    return frame_of(build_campaign_report(run))
