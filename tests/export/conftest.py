"""The export tests use tests/app's helpers (app_support) and the root conftest's `browser` fixture."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))  # app_support, as tests/app imports it
