"""The process-wide summary cache and PacketIndex.

Verified-content hits cost no analysis, partners, order, paths.
"""

from __future__ import annotations

import os
import shutil

import pytest

import explorer.catalog.index as index_module
from explorer.catalog.index import SUMMARIES, PacketIndex
from explorer.catalog.summary import list_order, summarize
from explorer.samples.packets import injected_error_spec, synthetic_spec, with_snapshot, write_packet, write_refused


@pytest.fixture
def root(tmp_path):
    SUMMARIES.clear()
    write_packet(tmp_path / "paged", synthetic_spec(seed=3))
    write_packet(tmp_path / "contiguous", synthetic_spec(seed=3, backend="contiguous"))
    write_packet(tmp_path / "group" / "copy-of-paged", synthetic_spec(seed=3))
    write_packet(tmp_path / "injected", injected_error_spec())
    write_packet(tmp_path / "discarded", with_snapshot(synthetic_spec(seed=5), sampleOutcome="discarded"))
    write_refused(tmp_path / "refused")
    return tmp_path


@pytest.fixture
def analyses(monkeypatch):
    """Paths analyzed by the index (a cache hit re-admits but never analyzes)."""
    seen = []
    real = index_module.analyze
    monkeypatch.setattr(index_module, "analyze", lambda path: seen.append(str(path)) or real(path))
    return seen


def test_a_fill_gives_what_summarize_gives_and_a_second_fill_analyzes_nothing(root, analyses):
    first = PacketIndex(root)
    arrived = []
    first.fill(lambda name, summary: arrived.append(name))
    assert sorted(arrived) == sorted(entry.name for entry in first.entries) and first.complete
    for entry in first.entries:
        assert first.summary(entry.name) == summarize(entry.path)
    assert len(analyses) == len(first.entries)

    analyses.clear()
    second = PacketIndex(root)
    second.fill()
    assert analyses == [str(root / "refused")]  # refused content has no key: its admission is its summary
    assert all(second.summary(e.name) == first.summary(e.name) for e in second.entries)


def test_changed_content_is_summarized_again(root, analyses):
    PacketIndex(root).fill()
    shutil.rmtree(root / "paged")  # write_packet never overwrites
    write_packet(root / "paged", injected_error_spec())
    analyses.clear()
    index = PacketIndex(root)
    index.fill()
    assert sorted(analyses) == sorted([str(root / "paged"), str(root / "refused")])
    assert index.summary("paged") == summarize(root / "paged")


def test_identical_content_under_two_names_keeps_each_path(root):
    index = PacketIndex(root)
    index.fill()
    assert index.summary("paged").path == str(root / "paged")
    assert index.summary("group/copy-of-paged").path == str(root / "group" / "copy-of-paged")


def test_partners_share_the_selection_key(root):
    index = PacketIndex(root)
    assert index.partners("paged") == ()  # nothing known before the fill
    index.fill()
    assert index.partners("paged") == ("contiguous", "group/copy-of-paged")
    assert index.partners("contiguous") == ("group/copy-of-paged", "paged")
    assert index.partners("refused") == () and index.partners("injected") == ()


def test_ordered_names_put_analyzed_by_largest_ratio_first(root):
    index = PacketIndex(root)
    assert index.ordered_names() == sorted(entry.name for entry in index.entries)  # unknown: by name
    index.fill()
    expected = sorted((e.name for e in index.entries), key=lambda n: list_order(n, summarize(root / n)))
    assert index.ordered_names() == expected
    assert expected[0] == "injected" and expected[-1] == "refused"
    assert index.summary("discarded").status == "inconclusive"


def test_a_cancelled_fill_stops(root):
    index = PacketIndex(root)
    index.fill(cancelled=lambda: True)
    assert not index.complete


# ---------------------------------------------------------------- stat signatures: unchanged packets are not re-read


@pytest.fixture
def reads(monkeypatch):
    """Paths admitted or analyzed by the index, with the racy-change window closed (every file counts as settled)."""
    monkeypatch.setattr(index_module, "RACY_SECONDS", 0.0)
    seen = []
    real_admit, real_analyze = index_module.admit, index_module.analyze
    monkeypatch.setattr(index_module, "admit", lambda path: seen.append(str(path)) or real_admit(path))
    monkeypatch.setattr(index_module, "analyze", lambda path: seen.append(str(path)) or real_analyze(path))
    return seen


def test_a_packet_whose_stat_signature_is_unchanged_is_not_read_again(root, reads):
    first = PacketIndex(root)
    first.fill()
    assert reads
    reads.clear()
    second = PacketIndex(root)
    arrived = []
    second.fill(lambda name, summary: arrived.append(name))
    assert reads == [] and sorted(arrived) == sorted(e.name for e in second.entries)
    assert all(second.summary(e.name) == first.summary(e.name) for e in second.entries)


@pytest.mark.parametrize("change", ["flip a byte in place", "add a file", "chmod"])
def test_any_change_to_a_packet_directory_reads_it_again(root, reads, change):
    PacketIndex(root).fill()
    output = root / "paged" / "output.bin"
    if change == "flip a byte in place":
        data = bytearray(output.read_bytes())
        data[0] ^= 1
        output.write_bytes(bytes(data))  # same size, same inode
    elif change == "add a file":
        (root / "paged" / "notes.txt").write_text("x")
    else:
        output.chmod(0o600)
    reads.clear()
    index = PacketIndex(root)
    index.fill()
    assert sorted(set(reads)) == [str(root / "paged")]
    assert index.summary("paged") == summarize(root / "paged")


def test_recent_crowded_deep_or_missing_directories_have_no_signature(root, monkeypatch):
    packet = str(root / "paged")
    assert index_module.stat_signature(packet) is None  # written less than RACY_SECONDS ago
    monkeypatch.setattr(index_module, "RACY_SECONDS", 0.0)
    assert index_module.stat_signature(packet) is not None
    assert index_module.stat_signature(str(root / "nothing-here")) is None
    assert index_module.stat_signature(str(root / "paged" / "packet.json")) is None  # not a directory
    deep = root / "paged" / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    assert index_module.stat_signature(packet) is None
    shutil.rmtree(root / "paged" / "a")
    monkeypatch.setattr(index_module, "SIGNATURE_MAX_ENTRIES", 4)
    assert index_module.stat_signature(packet) is None


def test_a_signature_never_opens_what_it_lists(root, monkeypatch):
    monkeypatch.setattr(index_module, "RACY_SECONDS", 0.0)
    os.mkfifo(root / "paged" / "fifo")  # opening it for reading would block
    (root / "paged" / "link").symlink_to("/dev/zero")
    signature = index_module.stat_signature(str(root / "paged"))
    assert {"fifo", "link"} <= {name for name, *_ in signature}
