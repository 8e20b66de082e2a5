"""explorer.triage(root): one DataFrame row per discovered packet, documented columns and dtypes.

explorer.triage(root): one DataFrame row per discovered packet, with the documented columns and dtypes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import explorer
from explorer.catalog.discovery import discover
from explorer.catalog.frame import DTYPES
from explorer.catalog.summary import STATUS_ORDER, summarize

SAMPLES = Path(__file__).resolve().parents[2] / "sample_packets"
COLUMNS = [
    "name",
    "path",
    "status",
    "codes",
    "backend",
    "selection",
    "worstHead",
    "worstLinfHead",
    "worstLinf",
    "noiseFloorRatio",
    "worstUlp",
    "score",
    "headsNotCompared",
]
DOCUMENTED = {
    "name": "string",
    "path": "string",
    "status": "category",
    "codes": "object",
    "backend": "string",
    "selection": "object",
    "worstHead": "Int64",
    "worstLinfHead": "Int64",
    "worstLinf": "float64",
    "noiseFloorRatio": "float64",
    "worstUlp": "Int64",
    "score": "float64",
    "headsNotCompared": "Int64",
}


def test_one_row_per_packet_with_the_documented_columns_and_dtypes():
    frame = explorer.triage(SAMPLES, jobs=2)
    assert list(frame.columns) == COLUMNS == list(DTYPES)
    assert {column: str(dtype) for column, dtype in frame.dtypes.items()} == DOCUMENTED
    assert list(frame["name"]) == [entry.name for entry in discover(SAMPLES)]
    assert list(frame["status"].cat.categories) == list(STATUS_ORDER) and frame["status"].cat.ordered
    for row in frame.itertuples(index=False):
        summary = summarize(SAMPLES / row.name)
        assert (row.status, row.codes, row.path) == (summary.status, summary.codes, summary.path)
        assert (None if pd.isna(row.worstLinf) else row.worstLinf) == summary.worst_linf
        assert (None if pd.isna(row.worstUlp) else row.worstUlp) == summary.worst_ulp
        assert (None if pd.isna(row.score) else row.score) == summary.score
        assert row.selection == (None if summary.selection is None else dict(summary.selection))


def test_an_empty_root_gives_an_empty_frame_with_the_same_columns(tmp_path):
    frame = explorer.triage(tmp_path)
    assert len(frame) == 0 and list(frame.columns) == COLUMNS
    assert {column: str(dtype) for column, dtype in frame.dtypes.items()} == DOCUMENTED
