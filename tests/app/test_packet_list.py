"""The sidebar's packet table outside a server.

4-digit numbers with the full value on hover, the open packet's row marked.
"""

from __future__ import annotations

import math
import os
import shutil

from explorer.catalog.index import SUMMARIES, PacketIndex
from explorer.catalog.summary import summarize
from explorer.samples import injected_error_spec, synthetic_spec, write_packet, write_refused
from explorer.ui.packets import (
    LIST_ORDER,
    NUMBER_COLUMNS,
    PENDING_HTML,
    SIGNIFICANT_DIGITS,
    TABLE_CONFIGURATION,
    PacketList,
)


def _filled_list(root) -> PacketList:
    SUMMARIES.clear()
    write_packet(root / "injected", injected_error_spec())
    write_packet(root / "plain", synthetic_spec(seed=3))
    packets = PacketList(PacketIndex(root), badge=lambda status: status, on_choose=lambda name: None)
    packets.start()  # no session: fills right here
    return packets


def test_highlight_selects_the_named_row_and_keeps_it_across_refills(tmp_path):
    packets = _filled_list(tmp_path)
    names = list(packets._table.value["packet"])
    packets.highlight("plain")
    assert packets._table.selection == [names.index("plain")]
    packets._arrive("injected", summarize(tmp_path / "injected"))  # a refill replaces the table's rows
    packets._flush()
    assert packets._table.selection == [names.index("plain")]
    packets.highlight("not-listed")
    assert packets._table.selection == []


def test_numbers_show_four_significant_digits_and_hover_the_full_value(tmp_path):
    packets = _filled_list(tmp_path)
    table = packets._table
    for column in NUMBER_COLUMNS:
        formatter = table.formatters[column]
        assert formatter.precision == SIGNIFICANT_DIGITS - 1  # d.ddd e: four significant digits
        values = table.value[column]
        assert values.dtype == "float64"  # sorted as numbers (an object column sorted as text, i.e. not at all)
        assert all(isinstance(v, float) and math.isfinite(v) for v in values)  # the cell keeps the full float
    assert TABLE_CONFIGURATION["columnDefaults"]["tooltip"] is True  # hover shows the cell's own (full) value
    assert table._configuration == TABLE_CONFIGURATION


def _shown(packets: PacketList) -> dict[str, str]:
    """packet name as shown -> the status cell."""
    frame = packets._table.value
    return dict(zip(frame["packet"], frame["status"], strict=True))


def test_a_rescan_lists_new_packets_drops_gone_ones_and_rereads_only_changed_ones(tmp_path, monkeypatch):
    import explorer.catalog.index as index_module

    packets = _filled_list(tmp_path)
    checked = []
    real = index_module.checked_summary
    monkeypatch.setattr(index_module, "checked_summary", lambda task: checked.append(task[0]) or real(task))
    monkeypatch.setattr(index_module, "RACY_SECONDS", 0.0)  # the test's packets were written just now
    packets.index.rescan()  # signs every packet: each is read once more
    checked.clear()
    write_packet(tmp_path / "late", synthetic_spec(seed=7))
    shutil.rmtree(tmp_path / "plain")
    assert packets.index.rescan() is True
    packets._flush()
    assert set(_shown(packets)) == {"injected", "late"}
    assert checked == [str(tmp_path / "late")]  # "injected" kept its stat signature: not read again
    assert packets.index.signed_count() == 1
    assert 'data-signed="1"' in packets._count.object and "statuses from unchanged stat signatures" in \
        packets._count.object


def test_a_half_written_packet_is_listed_as_it_is_and_read_again_at_the_next_rescan(tmp_path):
    packets = _filled_list(tmp_path)
    spec = synthetic_spec(seed=8)
    write_packet(tmp_path / "growing", spec)
    tensor = tmp_path / "growing" / "output.bin"
    whole = tensor.read_bytes()
    tensor.write_bytes(whole[: len(whole) // 2])  # the writer is half-way through this file
    packets.index.rescan()
    packets._flush()
    assert packets.index.summary("growing").status == "refused"
    tensor.write_bytes(whole)
    packets.index.rescan()  # written less than RACY_SECONDS ago: no signature, so read again
    assert packets.index.summary("growing").status == "analyzed"


def test_every_numeric_column_sorts_both_ways_and_the_status_column_in_list_order(tmp_path):
    write_refused(tmp_path / "refused")
    packets = _filled_list(tmp_path)
    table = packets._table
    table.sorters = [{"field": "status", "dir": "asc"}]
    assert next(iter(table.current_view["packet"])) == "refused" and LIST_ORDER[0] == "refused"
    for column in NUMBER_COLUMNS:
        for direction in ("asc", "desc"):
            table.sorters = [{"field": column, "dir": direction}]
            values = [v for v in table.current_view[column] if not math.isnan(v)]
            assert values == sorted(values, reverse=direction == "desc"), (column, direction)


def test_a_name_with_a_byte_that_is_not_utf8_and_an_unreadable_directory_are_listed(tmp_path):
    odd = os.fsdecode(b"caf\xe9-packet")
    write_packet(tmp_path / odd, synthetic_spec(seed=9))
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "packet.json").write_text("{}")
    (tmp_path / "locked").chmod(0o000)
    try:
        packets = _filled_list(tmp_path)
        shown = _shown(packets)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert "caf\\xe9-packet" in shown and odd not in shown
    assert PENDING_HTML not in shown["caf\\xe9-packet"] and "refused" in shown["locked"]
    packets.highlight(odd)
    assert packets._table.selection == [packets._names.index(odd)]
    packets._table.value.to_json()  # what goes to the browser encodes (a surrogate would not)
