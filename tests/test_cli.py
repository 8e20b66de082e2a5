"""Tests of the `explorer` command line: exit codes, --json, --output, the summary, no UI import."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import explorer
from explorer import cli, cli_parser
from explorer.analysis.analyze import analyze
from explorer.samples import campaigns as campaign_samples
from explorer.samples import packets as samples

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "sample_packets"
UI_MODULES = ("panel", "holoviews", "bokeh")
NOT_NEEDED_BY_ANALYZE = (*UI_MODULES, "ml_dtypes")  # bfloat16 is promoted by a shift; versions come from metadata

EXIT = {
    "clean-fp32q-bf16kv": 0,
    "qwen36-bf16-t64": 0,
    "fp16-kv": 0,
    "injected-error-head5": 0,
    "last-row-mismatch": 3,
    "nan-stored-values": 3,
    "discarded-sample": 3,
    "refused-hash-mismatch": 4,
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", list(EXIT))
def test_exit_status_follows_the_status(capsys, name):
    code, out, _ = run(capsys, "analyze", str(COMMITTED / name))
    assert code == EXIT[name]
    assert f"Status: {analyze(COMMITTED / name).status}" in out


def test_json_is_exactly_the_report(capsys):
    for name in EXIT:
        path = str(COMMITTED / name)
        code, out, _ = run(capsys, "analyze", path, "--json")
        assert code == EXIT[name]
        assert json.loads(out) == analyze(path).report()
        assert out == json.dumps(json.loads(out), allow_nan=False, indent=2) + "\n"


def test_packet_json_path_is_accepted(capsys):
    code, out, _ = run(capsys, "analyze", str(COMMITTED / "clean-fp32q-bf16kv" / "packet.json"), "--json")
    assert code == 0 and json.loads(out)["status"] == "analyzed"


def test_missing_packet_is_refused_not_an_error(capsys, tmp_path):
    code, out, _ = run(capsys, "analyze", str(tmp_path / "nowhere"))
    assert code == 4 and "path_missing" in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["analyze"],
        ["analyze", "a", "b"],
        ["analyze", "p", "--bogus"],
        ["frobnicate"],
        ["samples"],
    ],
)
def test_usage_errors_exit_2(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and "usage:" in err


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "analyze", "--help")
    assert code == 0 and "PACKET" in out
    code, out, _ = run(capsys, "--help")
    assert code == 0 and all(f"    {name}" in out for name in cli.COMMANDS)


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "--help"],
        ["compare", "a"],
        ["triage", "--help"],
        ["replay", "--help"],
        ["samples", "--out"],
        ["report", "p", "--out"],
        ["analyze", "p", "--bogus"],
        ["--version"],
    ],
)
def test_a_named_command_gets_the_messages_of_the_whole_parser(capsys, argv):
    """The parser built for the one command a line names says what the parser of every command says."""
    said = []
    for parser in (cli.build_parser(), cli.build_parser(argv[0] if argv[0] in cli.COMMANDS else None)):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        said.append((exit_.value.code, *capsys.readouterr()))
    assert said[0] == said[1] and said[0][1] + said[0][2] != ""


@pytest.mark.parametrize("columns", [None, "60", "200", "0", "wide"])
def test_help_is_as_wide_as_argparse_makes_it(monkeypatch, columns):
    """The help formatter reads the width shutil would give argparse (stdout is no terminal here)."""
    import argparse

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli_parser.HelpFormatter("explorer")._width == argparse.HelpFormatter("explorer")._width
    parsers = [cli.build_parser(), cli.build_parser("analyze")]
    assert all(isinstance(p._get_formatter(), cli_parser.HelpFormatter) for p in parsers)
    subcommand = parsers[1]._subparsers._group_actions[0].choices["analyze"]
    assert isinstance(subcommand._get_formatter(), cli_parser.HelpFormatter)


def test_output_is_written_and_never_overwritten(capsys, tmp_path):
    packet = str(COMMITTED / "discarded-sample")
    target = tmp_path / "report.json"
    code, out, _ = run(capsys, "analyze", packet, "--output", str(target))
    assert code == 3 and out.startswith("Status: inconclusive")
    assert json.loads(target.read_text()) == analyze(packet).report()

    target.write_text("keep me")
    code, out, err = run(capsys, "analyze", packet, "--json", "--output", str(target))
    assert code == 2 and out == "" and "already exists" in err
    assert target.read_text() == "keep me"

    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "absent")
    code, _, _ = run(capsys, "analyze", packet, "--output", str(dangling))
    assert code == 2 and not (tmp_path / "absent").exists()


def test_unwritable_output_is_a_usage_error(capsys, tmp_path):
    code, out, err = run(
        capsys, "analyze", str(COMMITTED / "clean-fp32q-bf16kv"), "--output", str(tmp_path / "no-such-dir" / "r.json")
    )
    assert code == 2 and out == "" and err.count("\n") == 1


def test_summary_shows_every_code_and_field(capsys, tmp_path):
    spec = samples.synthetic_spec()
    descriptor = samples.packet_descriptor(spec)
    descriptor["tensors"]["queries"]["sha256"] = "0" * 64
    descriptor["tensors"]["output"]["sha256"] = "1" * 64
    descriptor["identity"]["backend"] = "abacus"
    packet = samples.write_packet(tmp_path / "p", spec, descriptor=descriptor)
    code, out, _ = run(capsys, "analyze", str(packet))
    report = analyze(packet).report()
    assert code == 4 and len(report["refusals"]) == 3
    for problem in report["refusals"]:
        assert f"{problem['code']}  {problem['field']}  {problem['message']}" in out
    for name in ("nan-stored-values", "discarded-sample", "last-row-mismatch"):
        code, out, _ = run(capsys, "analyze", str(COMMITTED / name))
        for reason in analyze(COMMITTED / name).report()["inconclusiveReasons"]:
            assert f"{reason['code']}  {reason['message']}" in out


def test_summary_marks_identity_and_lists_limitations(capsys):
    path = COMMITTED / "qwen36-bf16-t64"
    report = analyze(path).report()
    code, out, _ = run(capsys, "analyze", str(path))
    assert code == 0
    assert "declared, not authenticated" in out
    assert report["identity"]["artifactSHA256"] in out
    for text in report["limitations"]:
        assert text in out
    heads = report["geometry"]["queryHeads"]
    table = [line.split() for line in out.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert [row[0] for row in table] == [str(h) for h in range(heads)]


def test_internal_error_is_one_line_exit_1(capsys, monkeypatch):
    def broken(path, **options):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr("explorer.analysis.analyze.analyze", broken)
    code, out, err = run(capsys, "analyze", str(COMMITTED / "clean-fp32q-bf16kv"))
    assert code == 1 and out == ""
    assert err == "explorer: internal error: RuntimeError: simulated bug\n"


def test_samples_command_writes_the_curated_set(capsys, tmp_path):
    code, out, _ = run(capsys, "samples", "--out", str(tmp_path))
    assert code == 0
    written = [*samples.CURATED, *samples.REPLAY_RUNS, *campaign_samples.CURATED_CAMPAIGNS]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*written, samples.SAMPLES_README])
    assert out.splitlines() == [str(tmp_path / name) for name in written]


def test_module_and_script_entry_points():
    runs = [([sys.executable, "-m", "explorer"], name) for name in EXIT] + [(["explorer"], "last-row-mismatch")]
    for command, name in runs:
        packet = str(COMMITTED / name)
        done = subprocess.run([*command, "analyze", packet, "--json"], capture_output=True, text=True, check=False)
        assert (done.returncode, done.stderr) == (EXIT[name], "")
        assert json.loads(done.stdout)["status"] == analyze(packet).status


def test_analyze_never_imports_the_ui_nor_ml_dtypes():
    probe = (
        "import sys, explorer, explorer.cli, explorer.samples\n"
        "from explorer.cli import main\n"
        f"code = main(['analyze', {str(COMMITTED / 'clean-fp32q-bf16kv')!r}, '--json'])\n"
        f"loaded = [m for m in {NOT_NEEDED_BY_ANALYZE!r} if m in sys.modules]\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "0 []"


def test_hostile_packets_are_refusals_not_errors(capsys, tmp_path):
    spec = samples.synthetic_spec()
    not_json = samples.write_packet(tmp_path / "not-json", spec)
    (not_json / "packet.json").write_bytes(b'{"schema": NaN}')
    fifo = samples.write_packet(tmp_path / "fifo", spec)
    (fifo / "output.bin").unlink()
    os.mkfifo(fifo / "output.bin")
    deep = samples.write_packet(tmp_path / "deep", spec)
    (deep / "packet.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    for packet, code in ((not_json, "json_invalid"), (fifo, "path_not_regular"), (deep, "json_invalid")):
        status, out, err = run(capsys, "analyze", str(packet))
        assert status == 4 and err == "" and code in out


def test_readme_has_two_setup_commands_and_ci_runs_the_test_command():
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = [
        line
        for block in setup.split("```bash")[1:]
        for line in block.split("```")[0].splitlines()
        if line and not line.startswith("#")
    ]
    assert commands == [
        "python -m venv .venv && . .venv/bin/activate && pip install -e . && panel serve explorer/app.py",
        "bash .ci/run",
    ]
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == "python -m pytest" and "`python -m pytest`" in setup
    assert "-e '.[test]'" in " ".join(ci)  # the package with its test extra, at the pinned versions


def test_summary_escapes_terminal_control_characters(capsys, tmp_path):
    spec = samples.synthetic_spec()
    spec = dataclasses.replace(spec, identity={**spec.identity, "modelID": "evil\x1b[2J\nname\x07"})
    packet = samples.write_packet(tmp_path / "p", spec)
    code, out, _ = run(capsys, "analyze", str(packet))
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out
    assert "modelID: evil\\x1b[2J\\nname\\x07" in out


def test_samples_into_a_file_is_a_usage_error(capsys, tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    code, out, err = run(capsys, "samples", "--out", str(target))
    assert code == 2 and out == "" and err.startswith("explorer: usage error:")


# ---------------------------------------------------------------- explorer compare

PAIR = (str(COMMITTED / samples.PAIR_NAMES["paged"]), str(COMMITTED / samples.PAIR_NAMES["contiguous"]))
COMPARE_EXIT = {  # (A, B) -> exit status
    PAIR: 0,
    (PAIR[0], str(COMMITTED / samples.PAIR_NAMES["input-differs"])): 0,
    (PAIR[0], str(COMMITTED / samples.PAIR_NAMES["other-layer"])): 3,
    (PAIR[0], str(COMMITTED / "discarded-sample")): 3,
    (str(COMMITTED / "refused-hash-mismatch"), PAIR[1]): 4,
}


@pytest.mark.parametrize("pair", list(COMPARE_EXIT))
def test_compare_exit_status_and_json(capsys, pair):
    code, out, err = run(capsys, "compare", *pair, "--json")
    assert (code, err) == (COMPARE_EXIT[pair], "")
    assert json.loads(out) == explorer.compare(*pair).report()
    assert out == json.dumps(json.loads(out), allow_nan=False, indent=2) + "\n"


def test_compare_same_packet_is_a_usage_error(capsys):
    for other in (PAIR[0], PAIR[0] + "/packet.json"):
        code, out, err = run(capsys, "compare", PAIR[0], other, "--json")
        assert code == 2 and out == "" and "same packet.json" in err
    code, out, err = run(capsys, "compare", PAIR[0])
    assert code == 2 and "usage:" in err


def test_compare_summary_leads_with_the_incident_table(capsys):
    code, out, _ = run(capsys, "compare", *PAIR)
    report = explorer.compare(*PAIR).report()
    assert code == 0
    lines = out.splitlines()
    order = [
        next(i for i, line in enumerate(lines) if line.startswith(prefix))
        for prefix in (
            "Status: compared",
            "Findings:",
            "  - Nearer the primary reference: a ",
            "  - Equal to the primary reference rounded",
            "Inputs: all five tensors byte-identical",
            "Output: ",
            "Nearer",
            "Ladder",
            "Tokens: ",
            "Limitations:",
        )
    ]
    assert order == sorted(order)
    output = report["output"]
    assert f"{output['mismatched']} of {output['compared']} output elements differ" in out
    heads = ", ".join(f"{h} ({n})" for h, n in enumerate(output["perHead"]) if n)
    assert heads in out
    start = next(i for i, line in enumerate(lines) if line.startswith("Ladder"))
    ladder = [line.split() for line in lines[start + 2 : start + 4]]
    for row, side in zip(ladder, ("a", "b"), strict=True):
        assert row[1] == report[side]["backend"]
        assert row[-3:] == [
            str(report["ladder"][side]["equalToRoundedReference"]),
            "of",
            str(report["ladder"][side]["compared"]),
        ]
    assert "target a 1928, target b 6829 (differ)" in out
    for tensor in report["inputs"]["tensors"]:
        assert any(line.split()[:2] == [tensor, "yes"] for line in lines)


def test_compare_summary_names_refused_sides_and_reasons(capsys):
    refused = (str(COMMITTED / "refused-hash-mismatch"), PAIR[1])
    code, out, _ = run(capsys, "compare", *refused)
    assert code == 4 and "side a: sha256_mismatch  /tensors/storedValues/sha256" in out
    code, out, _ = run(capsys, "compare", PAIR[0], str(COMMITTED / samples.PAIR_NAMES["other-layer"]))
    assert code == 3 and "selection_differs" in out
    assert any(line.split() == ["storageLayerIndex", "3", "4"] for line in out.splitlines())


def test_compare_output_is_never_overwritten(capsys, tmp_path):
    target = tmp_path / "pair.json"
    code, _, _ = run(capsys, "compare", *PAIR, "--output", str(target))
    assert code == 0 and json.loads(target.read_text()) == explorer.compare(*PAIR).report()
    code, out, err = run(capsys, "compare", *PAIR, "--output", str(target))
    assert code == 2 and out == "" and "already exists" in err


def test_compare_never_imports_the_ui():
    probe = (
        "import sys\n"
        "from explorer.cli import main\n"
        f"code = main(['compare', {PAIR[0]!r}, {PAIR[1]!r}, '--json'])\n"
        f"loaded = [m for m in {UI_MODULES!r} if m in sys.modules]\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "0 []"


def test_compare_emulate_json_and_matrix_table(capsys):
    code, out, err = run(capsys, "compare", *PAIR, "--json", "--emulate", "default", "--emulate", "mlx_two_pass")
    report = explorer.compare(*PAIR, emulate=["default", "mlx_two_pass"]).report()
    assert (code, err) == (0, "") and json.loads(out) == report
    assert sorted(row["id"] for row in report["emulationMatrix"]["rows"]) == sorted(report["emulationsRequested"]["a"])
    code, out, _ = run(capsys, "compare", *PAIR, "--emulate", "default")
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Kernel emulations"))
    differing = report["emulationDiffering"]["global"]
    assert lines[start + 1].split()[:4] == ["emulation", "decisive", "a", "(of"]
    rows = report["emulationMatrix"]["rows"]
    # table order, then the baseline row
    for line, row in zip(lines[start + 2 : start + 2 + len(rows)], rows, strict=True):
        assert line.split() == [
            row["id"],
            *(str(row[key]["a"]["global"]) for key in ("bitEqualDecisive",)),
            str(row["bitEqualDecisive"]["b"]["global"]),
            str(row["bitEqualDiffering"]["a"]),
            str(row["bitEqualDiffering"]["b"]),
            str(row["bitEqual"]["a"]["global"]),
            str(row["bitEqual"]["b"]["global"]),
        ]
    assert lines[start + 2 + len(rows)].split()[:3] == ["rounded", "reference", "(baseline)"]
    assert f"differing a (of {differing})" in lines[start + 1]


def test_compare_emulate_decisive_columns_stand_under_each_sides_own_count(capsys):
    """Inputs differ: each side's emulations run on its own inputs, so each decisive column has its own total."""
    pair = (PAIR[0], str(COMMITTED / samples.PAIR_NAMES["input-differs"]))
    own = [analyze(path, emulate="default").emulation_counts.decisive.count for path in pair]
    assert own[0] != own[1]  # the case of the bug: side a's total printed over both columns
    _code, out, _ = run(capsys, "compare", *pair, "--emulate", "default")
    header = next(line for line in out.splitlines() if line.split()[:2] == ["emulation", "decisive"])
    assert f"decisive a (of {own[0]})" in header and f"decisive b (of {own[1]})" in header


def test_compare_emulate_unknown_id_is_a_usage_error(capsys):
    for bad in ("bogus", "mlx_two_pass(blocks=0)", "paged_two_pass(colour=red)"):
        code, out, err = run(capsys, "compare", *PAIR, "--emulate", bad)
        assert (code, out) == (2, "") and err.startswith("explorer: usage error: --emulate:")


def test_compare_emulate_without_a_matrix_says_why(capsys):
    code, out, _ = run(capsys, "compare", PAIR[0], str(COMMITTED / "qwen36-bf16-t64"), "--emulate", "single_pass")
    assert code == 3 and "Kernel emulations: no emulation x side matrix (shape_differs)" in out
    code, out, _ = run(capsys, "compare", *PAIR)
    assert "Kernel emulations" not in out


def test_element_prints_every_field_of_the_record_after_the_summary(capsys):
    path = COMMITTED / "qwen36-bf16-t64"
    record = analyze(path).element(4, 155)
    code, out, _ = run(capsys, "analyze", str(path), "--element", "1179")
    assert code == EXIT["qwen36-bf16-t64"]
    section = out.split("Element 4,155 (flat index 1179):\n")[1]
    assert out.startswith(run(capsys, "analyze", str(path))[1])  # the summary is unchanged
    for label, value in record.fields():
        expected = (
            repr(value)
            if isinstance(value, float)
            else json.dumps(value)
            if value is None or isinstance(value, bool)
            else str(value)
        )
        assert f"  {label}" in section and section.split(f"  {label}")[1].split("\n")[0].strip() == expected
    assert run(capsys, "analyze", str(path), "--element", "4,155")[1] == out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--element", "99,1"], "head 99 is outside 0..15"),
        (["--element", "x"], "is not H,C"),
        (["--element", "1", "--json"], "--json prints exactly the report"),
    ],
)
def test_element_usage_errors(capsys, argv, message):
    code, out, err = run(capsys, "analyze", str(COMMITTED / "qwen36-bf16-t64"), *argv)
    assert code == 2 and message in err and out == ""


def test_element_of_a_refused_packet_says_it_is_not_available(capsys):
    code, out, _ = run(capsys, "analyze", str(COMMITTED / "refused-hash-mismatch"), "--element", "0,0")
    assert code == EXIT["refused-hash-mismatch"] and "Element 0,0: not available" in out


def test_summary_leads_with_status_and_the_per_head_table(capsys):
    """Status first, the per-head table before the identity, the limitations last; a missing value prints '-'."""
    _, out, _ = run(capsys, "analyze", str(COMMITTED / "injected-error-head5"))
    lines = out.splitlines()
    assert lines[0] == "Status: analyzed"
    table, identity = out.index("Reference:"), out.index("Identity (declared")
    assert table < identity < out.index("Limitations:")
    assert "null" not in out and "0.1318" in out  # head 5's linf at 4 significant digits


def test_refused_side_of_a_pair_names_no_backend(capsys):
    _, out, _ = run(capsys, "compare", str(COMMITTED / "qwen36-pair-paged"), str(COMMITTED / "refused-hash-mismatch"))
    side_b = next(line for line in out.splitlines() if line.startswith("  b:"))
    assert "status refused" in side_b and "backend" not in side_b and "null" not in out


def test_summary_gives_the_score_second_and_per_head(capsys):
    _, out, _ = run(capsys, "analyze", str(COMMITTED / "nan-stored-values"))
    lines = out.splitlines()
    score = analyze(COMMITTED / "nan-stored-values").score
    assert lines[1].startswith("Score (error / allowance") and f"{score.heads_not_compared} of 8 heads" in lines[1]
    assert " score " in next(line for line in lines if line.strip().startswith("head"))
