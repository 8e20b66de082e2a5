"""The shell without a browser against a hostile root: odd names, failing exports, hostile URLs.

The shell without a browser against a hostile root: a non-UTF-8 name through the URL and back, an export that
fails for any reason says so, a session that cannot be set up shows a note instead of nothing.
"""

from __future__ import annotations

import os

from explorer.samples.packets import synthetic_spec, write_packet
from explorer.ui import packet as packet_module
from explorer.ui import shell as shell_module
from explorer.ui.shell import Shell, open_session

UNDECODABLE_NAME = os.fsdecode(b"bad\xffname")


def test_a_non_utf8_name_is_written_into_the_url_as_its_bytes_and_read_back(tmp_path):
    write_packet(tmp_path / "root" / UNDECODABLE_NAME, synthetic_spec())
    write_packet(tmp_path / "root" / "other", synthetic_spec(seed=1))
    shell = Shell(tmp_path / "root", tmp_path / "exports")
    shell.open_url("?packet=bad%FFname&tab=summary")
    assert shell.single.packet == UNDECODABLE_NAME
    assert "packet=bad%FFname&tab=summary" in shell.url_query
    assert 'data-packet="bad\\xffname"' in shell.single.status_line
    shell.open_url("?packet=other")
    assert "packet=other" in shell.url_query
    shell.open_url("?packet=bad%FEname")  # another byte: not listed, ignored with the byte escaped
    assert "bad\\xfename" in shell.single.message


def test_an_export_that_fails_for_any_reason_says_that_nothing_was_written(tmp_path, monkeypatch):
    write_packet(tmp_path / "root" / "p", synthetic_spec())
    shell = Shell(tmp_path / "root", tmp_path / "exports")

    def failing(*args, **options):
        raise MemoryError("simulated")

    monkeypatch.setattr(packet_module, "export_packet", failing)
    shell.single.export()
    assert "Export wrote nothing: MemoryError: simulated" in shell.single.export_note
    assert shell.single.export_button.loading is False


def test_a_session_that_cannot_be_set_up_shows_the_root_and_the_reason(tmp_path, monkeypatch):
    def unlistable(root):
        raise PermissionError(13, "Permission denied", str(root))

    monkeypatch.setattr(shell_module, "PacketIndex", unlistable)
    _sidebar, main = open_session(tmp_path, tmp_path / "exports")
    assert "session-failed" in main.object and str(tmp_path) in main.object and "Permission denied" in main.object
