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
    assert (
        'data-signed="1"' in packets._count.object
        and "statuses from unchanged stat signatures" in packets._count.object
    )


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
    assert list(table.current_view["packet"])[-1] == "refused" and LIST_ORDER.index("refused") == 2
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


def test_the_list_triage_and_the_first_packet_share_one_order():
    """The sidebar's rows, `explorer triage`'s table and the packet the app opens first follow list_order: analyzed
    first by the largest score, then inconclusive, refused, error (docs/triage-and-app.md)."""
    import html
    from pathlib import Path

    from explorer.catalog.triage import Triaged, summary_table

    root = Path(__file__).resolve().parents[2] / "sample_packets"
    SUMMARIES.clear()
    packets = PacketList(PacketIndex(root), badge=lambda status: status, on_choose=lambda name: None)
    packets.start()
    rows = [html.unescape(name) for name in packets._table.value["packet"]]
    summaries = {name: summarize(root / name) for name in rows}
    statuses = [summaries[name].status for name in rows]
    assert statuses[0] == "analyzed" and [LIST_ORDER.index(s) for s in statuses] == sorted(
        LIST_ORDER.index(s) for s in statuses
    )
    scores = [summaries[name].score for name in rows if summaries[name].status == "analyzed"]
    assert scores == sorted(scores, reverse=True)
    assert packets.first_in_order() == rows[0]
    table = summary_table([Triaged(name, summaries[name]) for name in sorted(rows)], root, 0.0, "test")
    listed = table.split("Packets by status")[1].split("Pairs (")[0].splitlines()[2:]
    assert [line.split()[0] for line in listed if line.strip()] == rows


def test_sorting_by_status_keeps_the_score_order_within_each_status(tmp_path):
    """Tabulator sorts the status column by its cell text: each cell leads with its status's place, then its row's
    place in the default order, so a sort by status is the default order (scores largest first within a status)."""
    SUMMARIES.clear()
    for seed in range(3):
        write_packet(tmp_path / f"plain-{seed}", synthetic_spec(seed=seed + 3))
    write_packet(tmp_path / "injected", injected_error_spec())
    write_refused(tmp_path / "refused")
    packets = PacketList(PacketIndex(tmp_path), badge=lambda status: status, on_choose=lambda name: None)
    packets.start()
    table = packets._table.value
    shuffled = list(reversed(range(len(table))))  # a sort owes nothing to the rows' order before it (Tabulator's)
    by_status = sorted(shuffled, key=lambda row: table["status"][row])
    assert by_status == list(range(len(table)))  # the rows are built in the default order
    analyzed = [row for row in by_status if "analyzed" in table["status"][row]]
    scores = [table["score"][row] for row in analyzed]
    assert len(analyzed) == 4 and scores == sorted(scores, reverse=True)
