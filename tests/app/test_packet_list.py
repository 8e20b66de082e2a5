"""The sidebar's packet table outside a server.

4-digit numbers with the full value on hover, the open packet's row marked, and the server's search, sort
and paging: the browser is sent one page of rows.
"""

from __future__ import annotations

import json
import math
import os
import shutil

from explorer.catalog.index import SUMMARIES, PacketIndex
from explorer.catalog.summary import summarize
from explorer.samples.packets import injected_error_spec, synthetic_spec, write_packet, write_refused
from explorer.ui.packets import (
    COLUMNS,
    HEADER_TOOLTIPS,
    LIST_ORDER,
    NUMBER_COLUMNS,
    PAGE_ROWS,
    PENDING_HTML,
    PacketList,
)


def _filled_list(root) -> PacketList:
    SUMMARIES.clear()
    write_packet(root / "injected", injected_error_spec())
    write_packet(root / "plain", synthetic_spec(seed=3))
    packets = PacketList(PacketIndex(root), badge=lambda status: status, on_choose=lambda name: None)
    packets.start()  # no session: fills right here
    return packets


def _open_rows(packets: PacketList) -> list[str]:
    """The names shown on the page sent to the browser whose row is marked open."""
    return [row["name"] for row in packets.table.view["rows"] if row["open"]]


def test_highlight_marks_the_named_row_and_keeps_it_across_refills(tmp_path):
    packets = _filled_list(tmp_path)
    packets.highlight("plain")
    assert _open_rows(packets) == ["plain"]
    packets.index.rescan()
    packets.flush()  # a refill rebuilds the rows
    assert _open_rows(packets) == ["plain"]
    packets.highlight("not-listed")
    assert _open_rows(packets) == []


def test_numbers_show_four_significant_digits_and_hover_the_full_value(tmp_path):
    packets = _filled_list(tmp_path)
    sent = packets.table.view
    summary = summarize(tmp_path / "injected")
    row = next(row for row in sent["rows"] if row["name"] == "injected")
    assert row["numbers"][0] == [f"{summary.score:.3e}", repr(summary.score)]  # d.ddd e: four significant digits
    for shown, full in row["numbers"]:
        if float(full).is_integer():  # a whole number (a ULP count) is shown as an integer, never 2.544e+06 (issue 39)
            assert shown == str(int(float(full)))
            continue
        mantissa = shown.split("e")[0]
        assert len(mantissa.replace(".", "").lstrip("-")) == 4 and math.isclose(float(shown), float(full), rel_tol=1e-3)
    assert [column["tooltip"] for column in sent["columns"]] == [HEADER_TOOLTIPS[column] for column in COLUMNS]


def _shown(packets: PacketList) -> dict[str, str]:
    """packet name as shown -> the status cell, on the page shown."""
    return {row.shown: row.status for row in packets.shown_rows()}


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
    packets.flush()
    assert set(_shown(packets)) == {"injected", "late"}
    assert checked == [str(tmp_path / "late")]  # "injected" kept its stat signature: not read again
    assert packets.index.signed_count() == 1
    assert 'data-signed="1"' in packets.count_text and "statuses from unchanged stat signatures" in packets.count_text


def test_a_half_written_packet_is_listed_as_it_is_and_read_again_at_the_next_rescan(tmp_path):
    packets = _filled_list(tmp_path)
    spec = synthetic_spec(seed=8)
    write_packet(tmp_path / "growing", spec)
    tensor = tmp_path / "growing" / "output.bin"
    whole = tensor.read_bytes()
    tensor.write_bytes(whole[: len(whole) // 2])  # the writer is half-way through this file
    packets.index.rescan()
    packets.flush()
    assert packets.index.summary("growing").status == "refused"
    tensor.write_bytes(whole)
    packets.index.rescan()  # written less than RACY_SECONDS ago: no signature, so read again
    assert packets.index.summary("growing").status == "analyzed"


def test_every_numeric_column_sorts_both_ways_and_the_status_column_in_list_order(tmp_path):
    write_refused(tmp_path / "refused")
    packets = _filled_list(tmp_path)
    packets.sort_by("status")
    assert [row.shown for row in packets.shown_rows()][-1] == "refused" and LIST_ORDER.index("refused") == 2
    for at, column in enumerate(NUMBER_COLUMNS):
        for descending in (False, True):
            packets.sort_by(column, descending)
            numbers = [row.numbers[at] for row in packets.shown_rows()]
            known = [value for value in numbers if not math.isnan(value)]
            assert len(known) == 2 and known == sorted(known, reverse=descending), (column, descending)
            assert math.isnan(numbers[-1])  # the refused packet has no numbers: last both ways


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
    assert _open_rows(packets) == ["caf\\xe9-packet"]
    json.dumps(packets.table.view).encode("utf-8")  # what goes to the browser encodes (a surrogate would not)


def test_the_list_triage_and_the_first_packet_share_one_order():
    """The sidebar's rows, `explorer triage`'s table and the packet the app opens first follow list_order: analyzed
    first by the largest score, then inconclusive, refused, error (docs/triage-and-app.md)."""
    from pathlib import Path

    from explorer.catalog.triage import Triaged, summary_table

    root = Path(__file__).resolve().parents[2] / "sample_packets"
    SUMMARIES.clear()
    packets = PacketList(PacketIndex(root), badge=lambda status: status, on_choose=lambda name: None)
    packets.start()
    assert len(packets.index.entries) <= PAGE_ROWS  # one page holds every sample packet
    rows = [row.name for row in packets.shown_rows()]
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


def test_sorting_by_status_gives_the_list_order_back_or_its_reverse(tmp_path):
    """A sort by status is the list order (scores largest first within a status), a second click its reverse."""
    SUMMARIES.clear()
    for seed in range(3):
        write_packet(tmp_path / f"plain-{seed}", synthetic_spec(seed=seed + 3))
    write_packet(tmp_path / "injected", injected_error_spec())
    write_refused(tmp_path / "refused")
    packets = PacketList(PacketIndex(tmp_path), badge=lambda status: status, on_choose=lambda name: None)
    packets.start()
    listed = [row.name for row in packets.shown_rows()]
    assert listed == packets.index.ordered_names()
    packets.sort_by("score", descending=True)
    packets.sort_by("status")
    assert [row.name for row in packets.shown_rows()] == listed
    scores = [row.numbers[0] for row in packets.shown_rows() if row.status == "analyzed"]
    assert len(scores) == 4 and scores == sorted(scores, reverse=True)
    packets.sort_by("status", descending=True)
    assert [row.name for row in packets.shown_rows()] == listed[::-1]


def _numbered_list(root, count: int, chosen: list[str]) -> PacketList:
    """A list of `count` refused packets named by number (quick to write and to summarize)."""
    SUMMARIES.clear()
    for number in range(count):
        write_refused(root / f"packet-{number:03d}")
    packets = PacketList(PacketIndex(root), badge=lambda status: status, on_choose=chosen.append)
    packets.start()
    return packets


def test_the_browser_is_sent_one_page_and_the_pager_walks_every_row(tmp_path):
    count = 2 * PAGE_ROWS + 5
    packets = _numbered_list(tmp_path, count, [])
    assert packets.page_count == 3 and len(packets.table.view["rows"]) == PAGE_ROWS
    seen = []
    for page in range(1, packets.page_count + 1):
        packets.go_to_page(page)
        assert packets.table.view["page"] == page and packets.table.view["pages"] == 3
        seen += [row.shown for row in packets.shown_rows()]
    assert seen == [f"packet-{number:03d}" for number in range(count)]  # refused alike: by name
    assert "showing 5 of 45" in packets.count_text
    packets.go_to_page(99)  # kept within the pages there are
    assert packets.table.view["page"] == 3
    packets.sort_by("packet", descending=True)  # a sort starts from the first page
    assert packets.table.view["page"] == 1 and packets.shown_rows()[0].shown == "packet-044"


def test_a_search_filters_on_the_server_and_a_header_click_toggles_the_direction(tmp_path):
    chosen: list[str] = []
    packets = _numbered_list(tmp_path, 2 * PAGE_ROWS + 5, chosen)
    packets.go_to_page(2)
    table = packets.table
    table.receive({"search": " PACKET-01"})  # as typed in the browser: trimmed, any case
    assert [row.shown for row in packets.shown_rows()] == [f"packet-{number:03d}" for number in range(10, 20)]
    assert table.view["page"] == 1 and table.view["pages"] == 1 and table.view["query"] == " PACKET-01"
    assert "showing 10 of 10 matching &quot;PACKET-01&quot; (45 in all)" in packets.count_text
    table.receive({"sort": "packet"})
    assert (table.view["sort"], table.view["descending"]) == ("packet", False)
    table.receive({"sort": "packet"})
    assert (table.view["sort"], table.view["descending"]) == ("packet", True)
    assert table.view["rows"][0]["name"] == "packet-019"
    table.receive({"sort": "score"})  # another column: ascending first
    assert (table.view["sort"], table.view["descending"]) == ("score", False)
    table.receive({"choose": "packet-012", "row": 2})
    table.receive({"choose": "packet-015", "row": 0})  # a page redrawn since: found by its name
    table.receive({"choose": "not-listed", "row": 0})
    table.receive({"sort": "no such column"})
    table.receive(["not", "a", "message"])
    assert chosen == ["packet-012", "packet-015"] and table.view["sort"] == "score"
    packets.search("no such packet")
    assert packets.shown_rows() == [] and table.view["pages"] == 1
