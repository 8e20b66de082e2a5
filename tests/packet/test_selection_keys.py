"""The selection keys and "packet.json" are defined once; every other list derives from the one list.

The report's selection block, the replay input's selection (integers and strings), the pair's shared fields and
the findings' labelled lines all name keys of the one list; no module but packet/files.py spells "packet.json".
"""

from __future__ import annotations

from pathlib import Path

from explorer.analysis.ranking import SELECTION_FIELDS
from explorer.packet.files import PACKET_JSON
from explorer.packet.snapshot import RECORD_STRINGS, SELECTION_KEYS, SELECTION_LABELS, SELECTION_POSITION
from explorer.replay.checks import REPLAY_SELECTION, SELECTION_INTEGERS, SELECTION_STRINGS

PACKAGE = Path(__file__).resolve().parents[2] / "explorer"


def test_every_selection_list_names_keys_of_the_one_list():
    assert SELECTION_KEYS[: len(SELECTION_POSITION)] == SELECTION_POSITION
    assert set(REPLAY_SELECTION) <= set(SELECTION_KEYS)
    assert {key for key, _ in SELECTION_LABELS} <= set(SELECTION_KEYS)
    assert set(SELECTION_POSITION) <= set(SELECTION_FIELDS)


def test_the_replay_selection_splits_into_the_records_integers_and_strings():
    assert SELECTION_INTEGERS == (
        "requestID",
        "outputIndex",
        "storageLayerIndex",
        "modelLayerIndex",
        "offsetBefore",
        "offsetAfter",
    )
    assert SELECTION_STRINGS == ("phase", "dispatch")
    assert set(SELECTION_STRINGS) <= set(RECORD_STRINGS)


def test_packet_json_is_spelled_once_in_the_package():
    spelled = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if f'"{PACKET_JSON}"' in path.read_text()
    ]
    assert spelled == ["packet/files.py"]
