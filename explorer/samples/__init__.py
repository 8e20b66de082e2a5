"""The sample writers: synthetic packets, replay runs and campaigns, entered through `write_all`.

They sit above the results they synthesize (packet, analysis, replay) and below every view.
"""

from __future__ import annotations

import os
from pathlib import Path

from explorer.samples.campaigns import CURATED_CAMPAIGNS, SAMPLE_CAMPAIGNS
from explorer.samples.packets import write_samples


def write_all(out: str | os.PathLike, *, full: bool = False, campaign: bool = False) -> list[Path]:
    """`explorer samples`: the curated samples with the curated campaign, and the larger campaign with `campaign`."""
    return write_samples(out, full=full, extra={**CURATED_CAMPAIGNS, **(SAMPLE_CAMPAIGNS if campaign else {})})
