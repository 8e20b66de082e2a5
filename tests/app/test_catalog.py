"""Packet discovery under a root, name lookup, root and export-dir choice, and the packet-list summary."""

from __future__ import annotations

from pathlib import Path

import explorer
from explorer.export.files import EXPORT_DIR_ENV, choose_export_dir
from explorer.samples.packets import CURATED, synthetic_spec, write_packet
from explorer.ui import catalog
from explorer.ui.shell import parse_options

REPO = Path(__file__).resolve().parents[2]


def _packet(directory: Path) -> Path:
    return write_packet(directory, synthetic_spec())


def test_discover_lists_packets_one_or_two_levels_deep_only(tmp_path):
    _packet(tmp_path / "b-first")
    _packet(tmp_path / "group" / "a-second")
    _packet(tmp_path / "group" / "deeper" / "too-deep")  # three levels: not listed
    _packet(tmp_path / ".hidden")
    _packet(tmp_path / "b-first" / "inside")  # a packet directory is not searched further
    (tmp_path / "not-a-packet").mkdir()
    (tmp_path / "loose.json").write_text("{}")

    entries = catalog.discover(tmp_path)

    assert [entry.name for entry in entries] == ["b-first", "group/a-second"]
    assert entries[1].path == (tmp_path / "group" / "a-second").resolve()


def test_discover_skips_links_leading_outside_the_root_and_aliases_inside_it(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    _packet(root / "inside")
    _packet(outside / "escaped")
    (root / "link-out").symlink_to(outside / "escaped", target_is_directory=True)
    (root / "link-in").symlink_to(root / "inside", target_is_directory=True)

    assert [entry.name for entry in catalog.discover(root)] == ["inside"]  # each directory once, by (device, inode)


def test_discover_of_a_missing_or_empty_root_is_empty(tmp_path):
    assert catalog.discover(tmp_path / "missing") == ()
    assert catalog.discover(tmp_path) == ()


def test_lookup_accepts_only_listed_names(tmp_path):
    _packet(tmp_path / "one")
    entries = catalog.discover(tmp_path)
    assert catalog.lookup(entries, "one") == entries[0]
    for name in ("../one", "./one", str(tmp_path / "one"), "one/", "ONE", "", None, 1):
        assert catalog.lookup(entries, name) is None


def test_root_comes_from_the_argument_then_the_environment_then_the_samples(tmp_path):
    assert catalog.choose_root(str(tmp_path), {catalog.ROOT_ENV: "/elsewhere"}) == tmp_path.resolve()
    assert catalog.choose_root(None, {catalog.ROOT_ENV: str(tmp_path)}) == tmp_path.resolve()
    assert catalog.choose_root(None, {}) == REPO / "sample_packets"


def test_app_arguments_pick_root_and_export_dir(tmp_path):
    root, exports = parse_options(["--root", str(tmp_path), "--export-dir", str(tmp_path / "out")], {})
    assert (root, exports) == (tmp_path.resolve(), (tmp_path / "out").resolve())
    root, exports = parse_options([], {catalog.ROOT_ENV: str(tmp_path), EXPORT_DIR_ENV: str(tmp_path / "env")})
    assert (root, exports) == (tmp_path.resolve(), (tmp_path / "env").resolve())
    assert choose_export_dir(None, {}) == (Path.cwd() / "exports").resolve()


def test_the_bundled_samples_are_all_listed():
    names = [entry.name for entry in catalog.discover(catalog.default_root())]
    assert set(CURATED) <= set(names)


def test_summary_gives_the_worst_head_the_largest_primary_head_linf_and_every_code():
    for name in CURATED:
        analysis = explorer.analyze(catalog.default_root() / name)
        summary = catalog.summarize(analysis)
        assert summary.status == analysis.status
        codes = [p.code for p in analysis.admission.refusals] + [r.code for r in analysis.reasons]
        assert list(summary.codes) == list(dict.fromkeys(codes))
        linfs = [m.linf for m in analysis.numerics.primary.per_head] if analysis.numerics else []
        defined = [value for value in linfs if value is not None]
        if defined:
            assert summary.worst_linf == max(defined)
            assert linfs[summary.worst_linf_head] == max(defined)
        else:
            assert summary.worst_linf is None and summary.worst_linf_head is None
        # worstHead means what analyze and the app mean: the head with the largest score
        score = analysis.report()["score"]
        assert summary.worst_head == (None if score is None else score["worstHead"])
        if score is not None and score["value"] is not None:
            assert score["perHead"][summary.worst_head] == score["value"]
