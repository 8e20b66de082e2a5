"""Hostile packets, second pass: swapped links, odd paths, huge products and long names.

Hostile packets, second pass: a directory swapped for a link while read, trailing slashes, bytes paths, huge
products, long names and the escaped-quote JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest

from explorer.analysis.analyze import analyze
from explorer.foundations.bounded import MESSAGE_INTEGER_DIGITS, MESSAGE_LIST_ITEMS, MESSAGE_TEXT_CHARS, digit_count
from explorer.packet.admission import admit
from explorer.packet.files import JSON_SIZE_LIMIT
from explorer.packet.jsonparse import parse_json_object

from packet_support import build, problems, read_descriptor, write_descriptor

SV = "/tensors/storedValues"
SWAP_RUNS = 300
HUGE_ENTRY_DIGITS = 1_100  # four such entries: a product of about 4,400 digits
LONG_NAME_CHARS = 100_000
SNAPSHOT_REFUSAL_NAMES = 5_000
MESSAGE_CEILING = 2_000  # characters: far above any bounded message, far below what was echoed


def _move_into_sub(packet, name="stored-values.bin", key="storedValues"):
    (packet / "sub").mkdir()
    os.replace(packet / name, packet / "sub" / name)
    descriptor = read_descriptor(packet)
    descriptor["tensors"][key]["file"] = f"sub/{name}"
    write_descriptor(packet, descriptor)


def test_a_directory_swapped_with_an_outside_link_is_never_read_through(packet, tmp_path):
    """Another thread keeps swapping `sub` with a link to an outside directory holding different bytes."""
    _move_into_sub(packet)
    outside = tmp_path / "outside"
    outside.mkdir()
    outside_bytes = bytes(reversed((packet / "sub" / "stored-values.bin").read_bytes()))
    (outside / "stored-values.bin").write_bytes(outside_bytes)
    outside_hash = hashlib.sha256(outside_bytes).hexdigest()
    os.symlink(outside, packet / "link")
    os.mkdir(packet / "parked")
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            os.rename(packet / "sub", packet / "parked" / "sub")  # the real directory steps aside
            os.rename(packet / "link", packet / "sub")  # the link takes its name
            os.rename(packet / "sub", packet / "link")
            os.rename(packet / "parked" / "sub", packet / "sub")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    seen = set()
    try:
        for _ in range(SWAP_RUNS):
            analysis = analyze(packet)
            refusals = [(p.code, p.field) for p in analysis.admission.refusals]
            seen.update(refusals or [("none", None)])
            assert all(
                outside_hash not in p.message and str(outside) not in p.message for p in analysis.admission.refusals
            )
            assert refusals in ([], [("path_escape", f"{SV}/file")], [("path_missing", f"{SV}/file")])
            if analysis.admission.tensors is not None:
                assert analysis.admission.tensors["storedValues"].sha256 != outside_hash
    finally:
        stop.set()
        swapper.join()
    assert ("none", None) in seen  # the real directory was read at least once


def test_an_escape_message_never_says_where_the_link_leads(packet, tmp_path):
    os.replace(packet / "queries.bin", tmp_path / "secret-target.bin")
    os.symlink(tmp_path / "secret-target.bin", packet / "queries.bin")
    admission = admit(packet)
    assert problems(admission) == [("path_escape", "/tensors/queries/file")]
    assert "secret-target" not in admission.refusals[0].message and str(tmp_path) not in admission.refusals[0].message
    assert "leads outside the packet" in admission.refusals[0].message


def test_links_inside_the_packet_are_walked_absolute_relative_and_through_directories(packet):
    _move_into_sub(packet)
    os.symlink(packet.resolve() / "sub", packet / "absolute-dir")  # an absolute target inside the packet
    os.symlink("../queries.bin", packet / "sub" / "up-link")  # '..' from the link's own directory
    descriptor = read_descriptor(packet)
    descriptor["tensors"]["storedValues"]["file"] = "absolute-dir/stored-values.bin"
    os.replace(packet / "queries.bin", packet / "q.bin")
    os.symlink("q.bin", packet / "queries.bin")
    descriptor["tensors"]["queries"]["file"] = "sub/up-link"
    write_descriptor(packet, descriptor)
    admission = admit(packet)
    assert admission.refusals == () and admission.tensors is not None


def test_a_link_climbing_above_the_packet_is_an_escape(packet):
    os.replace(packet / "queries.bin", packet.parent / "queries.bin")
    os.symlink("../queries.bin", packet / "queries.bin")
    assert problems(admit(packet)) == [("path_escape", "/tensors/queries/file")]


def test_a_trailing_slash_is_an_invalid_path(packet):
    descriptor = read_descriptor(packet)
    descriptor["tensors"]["storedValues"]["file"] = "stored-values.bin/"
    write_descriptor(packet, descriptor)
    assert problems(admit(packet)) == [("path_invalid", f"{SV}/file")]


def test_a_bytes_path_is_accepted_as_the_os_accepts_it(packet):
    assert admit(os.fsencode(packet)).refusals == ()
    analysis = analyze(os.fsencode(packet / "packet.json"))
    assert analysis.status == "analyzed" and analysis.admission.path == str(packet / "packet.json")
    assert analyze(b"/nonexistent-\xff").admission.refusals[0].code == "path_missing"


def test_products_of_thousands_of_digits_are_payload_too_large(packet):
    descriptor = read_descriptor(packet)
    entry = 10**HUGE_ENTRY_DIGITS - 1
    descriptor["tensors"]["storedValues"]["shape"] = [entry] * 4
    descriptor["tensors"]["storedValues"]["packedStrides"] = [entry] * 3 + [1]
    write_descriptor(packet, descriptor)
    analysis = analyze(packet)
    assert analysis.status == "refused"
    assert ("payload_too_large", f"{SV}/shape") in problems(analysis.admission)
    assert digit_count(entry**4) > 4_300
    assert all(len(p.message) < MESSAGE_CEILING for p in analysis.admission.refusals)
    json.dumps(analysis.report())


def test_digit_count_is_exact_around_powers_of_ten():
    for digits in (1, 2, 15, 16, 17, 300, 4_301, 10_000):
        assert digit_count(10 ** (digits - 1)) == digits
        assert digit_count(10**digits - 1) == digits
        assert digit_count(-(10**digits)) == digits + 1


def test_long_names_and_lists_are_cut_with_a_count(packet):
    descriptor = read_descriptor(packet)
    long_name = "n" * LONG_NAME_CHARS
    descriptor["tensors"]["queries"]["file"] = long_name
    descriptor["tensors"]["x" * LONG_NAME_CHARS] = {}
    write_descriptor(packet, descriptor)
    admission = admit(packet)
    messages = {p.code: p.message for p in admission.refusals}
    assert set(messages) == {"file_unreadable", "tensor_set_invalid"}  # the OS: file name too long
    for message in messages.values():
        assert len(message) < MESSAGE_CEILING and f"{LONG_NAME_CHARS - MESSAGE_TEXT_CHARS} more characters" in message


def test_many_snapshot_refusal_names_are_listed_with_a_count(tmp_path):
    names = {f"refusal-{index:05d}": 1 for index in range(SNAPSHOT_REFUSAL_NAMES)}
    admission = admit(build(tmp_path / "p", snapshot={"/refusals": names}))
    message = next(r.message for r in admission.reasons if r.code == "snapshot_refusals")
    assert f"{SNAPSHOT_REFUSAL_NAMES - MESSAGE_LIST_ITEMS} more" in message and len(message) < MESSAGE_CEILING


def test_a_huge_record_number_is_shown_by_its_digit_count(tmp_path):
    huge = 10**3_000
    admission = admit(build(tmp_path / "p", snapshot={"/records/0/offsetBefore": huge, "/records/0/offsetAfter": huge}))
    message = next(p.message for p in admission.refusals if p.code == "visible_range_mismatch")
    assert "3001-digit number" in message and len(message) < MESSAGE_CEILING
    assert MESSAGE_INTEGER_DIGITS < 3_001


@pytest.mark.parametrize("where", ["parser", "packet.json"])
def test_a_file_of_escaped_quotes_is_refused(tmp_path, where):
    document = b'{"a": "' + b'\\"' * ((JSON_SIZE_LIMIT - 8) // 2)
    assert len(document) <= JSON_SIZE_LIMIT
    if where == "parser":
        assert parse_json_object(document).error is not None
        return
    packet = build(tmp_path / "p")
    (packet / "packet.json").write_bytes(document)
    assert problems(admit(packet)) == [("json_invalid", None)]


def test_escapes_and_brackets_inside_strings_do_not_count_as_depth():
    inside = '\\"[' * 100 + "\\\\"
    parsed = parse_json_object(json.dumps({"a": "[" * 100, "b": inside, "c": [[1]]}).encode())
    assert parsed.error is None and parsed.value["c"] == [[1]]


@pytest.mark.parametrize(
    "path, code",
    [("sub/.", "path_not_regular"), ("sub//stored-values.bin", None), ("stored-values.bin/x", "path_missing")],
)
def test_dot_and_empty_components_walk_as_the_os_would(packet, path, code):
    _move_into_sub(packet)
    descriptor = read_descriptor(packet)
    descriptor["tensors"]["storedValues"]["file"] = path
    write_descriptor(packet, descriptor)
    if path.startswith("stored-values.bin"):
        os.replace(packet / "sub" / "stored-values.bin", packet / "stored-values.bin")
    assert problems(admit(packet)) == ([] if code is None else [(code, f"{SV}/file")])
