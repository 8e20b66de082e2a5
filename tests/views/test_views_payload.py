"""Every view of the full-size Qwen3.6 packet stays well under the websocket budget.

The full-size Qwen3.6 packet (QH16/KVH2/D256/T5585): every view stays well under the websocket budget.
"""

from __future__ import annotations

import pytest

import explorer
from explorer.samples.packets import FULL_SAMPLE_NAME, QWEN_FULL_TOKENS, qwen_full_spec, write_packet
from explorer.views import VIEWS, Selection

from views_support import payload_bytes, render

MAX_VIEW_BYTES = 5_000_000  # the app's websocket budget for one tab (issue 4)


@pytest.fixture(scope="module")
def full_size(tmp_path_factory):
    return explorer.analyze(write_packet(tmp_path_factory.mktemp("full") / FULL_SAMPLE_NAME, qwen_full_spec()))


@pytest.mark.parametrize("slug, builder", [(slug, builder) for slug, _, builder in VIEWS])
def test_full_size_view_payload(full_size, slug, builder):
    assert full_size.admission.geometry["tokens"] == QWEN_FULL_TOKENS
    assert payload_bytes(render(builder(full_size, Selection()))) < MAX_VIEW_BYTES
