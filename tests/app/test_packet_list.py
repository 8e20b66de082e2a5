"""The sidebar's packet table outside a server: 4-digit numbers with the full value on hover, the open packet's row marked."""

from __future__ import annotations

import math

from explorer.catalog.index import SUMMARIES, PacketIndex
from explorer.samples import injected_error_spec, synthetic_spec, write_packet
from explorer.catalog.summary import summarize
from explorer.ui.packets import SIGNIFICANT_DIGITS, TABLE_CONFIGURATION, PacketList


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
    for column in ("worst linf", "ratio"):
        formatter = table.formatters[column]
        assert formatter.precision == SIGNIFICANT_DIGITS - 1  # d.ddd e: four significant digits
        values = table.value[column]
        assert all(isinstance(v, float) and math.isfinite(v) for v in values)  # the cell keeps the full float
    assert TABLE_CONFIGURATION["columnDefaults"]["tooltip"] is True  # hover shows the cell's own (full) value
    assert table._configuration == TABLE_CONFIGURATION
