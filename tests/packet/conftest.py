"""Fixtures of the admission tests (tests/packet only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packet_support import build


@pytest.fixture
def packet(tmp_path) -> Path:
    """A valid, analyzable packet directory written by explorer.samples."""
    return build(tmp_path / "packet")
