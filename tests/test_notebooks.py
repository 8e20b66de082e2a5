"""Runs every notebook top to bottom in a real kernel and checks they are committed without outputs.

Runs every notebook top to bottom with nbclient and a real IPython kernel (cwd notebooks/) and checks they are
committed without outputs; never writes a notebook back.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = REPO / "notebooks"
KERNEL_NAME = "python3"
CELL_TIMEOUT_S = 300  # per cell; a hung cell ends the test instead of the suite
VIEW_MIME = "application/vnd.holoviews_exec.v0+json"  # a Panel object rendered inline
CDN_HOSTS = ("cdn.bokeh.org", "cdn.holoviz.org")  # where the non-inline resources would come from
OUTPUTS_NOTE = "**Saved without outputs.**"  # the first cell says why (docs/development.md, Notebooks)
VERDICT_WORDS = re.compile(r"\b(pass|passed|passes|fail|failed|fails|ok|okay|acceptable)\b", re.IGNORECASE)

# notebook -> (text its outputs must show, views it must draw inline, export files it must write)
EXPECTED = {
    "01-quickstart.ipynb": (
        (
            "status: analyzed",
            "primary reference: original-Q FP32 softmax attention",
            "What this analysis does not prove:",
            "exported report equals the report of what it shows: True",
            "storedKeys      bfloat16  shape (1, 2, 128, 64)",
            "queries         float32   shape (1, 8, 1, 64)",
            "storedKeys[0, 0, 0, 0] = 1.671875 (bit pattern 0x3fd6)",
            "q . k of query head 0, first tokens:",
            'data-status="analyzed"',
            "19 packets; by status:",
        ),
        8,
        ("clean-fp32q-bf16kv.html", "clean-fp32q-bf16kv.report.json"),
    ),
    "02-incident-walkthrough.ipynb": (
        (
            "largest error: query head 5 (KV head 1), channel 11",
            "channels of query head 5 that stand out: [8, 9, 10, 11]",
            "narrowed-Q counterfactual (float32 -> bfloat16 -> float32)",
            "KV head 0, channel 3: fields sign",
            "KV head 1, channel 17: fields exponent",
            "KV head 1, channel 40: fields mantissa",
            "stored   0x3f58",
            "incoming 0xbf58",
            "head 1, token 10, channel 3: quiet NaN",
            "head 1, token 20, channel 7: signaling NaN",
            "ineligible query heads: [4, 5, 6, 7] -> KV heads [1]",
            'data-status="inconclusive"',
            "last_row_mismatch",
            "nonfinite_inputs",
            "white-space: nowrap",  # the triage table's cells never wrap mid-word in a narrow window
        ),
        4,
        (
            "injected-error-head5.html",
            "injected-error-head5.report.json",
            "last-row-mismatch.html",
            "last-row-mismatch.report.json",
            "nan-stored-values.html",
            "nan-stored-values.report.json",
        ),
    ),
    "03-backend-pair.ipynb": (
        (
            "inputs byte-identical: True",
            "357 of 2048 output elements differ",
            "query heads carrying them: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]",
            "equal to the rounded reference: 2047 of 2048",
            "equal to the rounded reference: 1691 of 2048",
            "nearer the primary reference: a 357, b 0, tie 1691, undefined 0",
            "target tokens: 1928 vs 6829; differ: True",
            "storedKeys: 1 of 65536 differ at [(1, 100, 5)]",
            "reason: inputs_differ",
            "['selection_differs']",
            "storageLayerIndex: a 3, b 4",
            'data-status="compared"',
            'data-status="inconclusive"',
            "exported comparison equals pair.report(): True",
        ),
        6,
        (
            "qwen36-pair-paged-vs-qwen36-pair-contiguous.html",
            "qwen36-pair-paged-vs-qwen36-pair-contiguous.comparison.json",
        ),
    ),
    "04-kernel-emulations.ipynb": (
        (
            "emulated on: shared_inputs",
            "output elements compared: 4096; where the two sides differ: 782",
            "emulations run: 31;",  # the sweep under emulation-v4: five named builds, not the engine build
            "mlx_run and mlx_unfused(device=cpu) agree on 4096 of 4096 output elements",
            "paged_two_pass: reproduces 782 of the 782 differing elements of side a (paged), 0 of side b (contiguous)",
            "mlx_two_pass: reproduces 0 of the 782 differing elements of side a (paged), 782 of side b (contiguous)",
            "mlx_two_pass(partialDType=float32): reproduces 780 of the 782 differing elements of side a (paged)",
            "rounded reference (baseline)",
            "groups of emulations on the",
            "first decisive element: query head",
            "Hypothesis fma=off",
            "pair-emulation-matrix",
        ),
        1,
        (),
    ),
    "05-replay-run.ipynb": (
        (
            "status: analyzed - source packet: qwen36-pair-contiguous",
            "nativeSDPA vs the contiguous capture: 0 of 2048 differ",
            "pagedFixed vs the paged capture (partner): 0 of 2048 differ",
            "fixed and segmented byte-identical: True",
            "readback byte-exact: True",
            "analysis.json agrees: True",
            'class="replay-matrix"',
            "run with an arm that exited 1: inconclusive ['replay_arm_failed'] - pagedSegmented exit code 1",
            "readback run: inconclusive ['replay_readback_differs'] - storedKeys: 1 element differs at "
            "[kvHead, token, channel] [1, 255, 0]",
        ),
        4,
        (),
    ),
    "06-campaign.ipynb": (
        (
            "The first kernel-originated difference is at step 62, layer 0 (inputs byte-identical, outputs differ: "
            "14 of 32 output elements differ, max 1 ULP)",
            "inherited from the kernel difference before it",
            "The seed tokens first differ at step 63",
            "first inputs-differ cell: 62 1 inherited",
            "missing: [{'outputIndex': 63, 'modelLayerIndex': 1, 'absentOn': ['contiguous']}]",
            "nearer the primary reference: {'paged': 14, 'contiguous': 0, 'tie': 18, 'undefined': 0}",
            "reproduced bit for bit on contiguous by: none of the emulations run",
            "## Findings",  # the one findings layout of every kind
            'data-status="compared"',
        ),
        3,
        (
            "campaign-Qwen3.6_synthetic_campaign_-request-2.html",  # named by model and request
            "campaign-Qwen3.6_synthetic_campaign_-request-2.campaign.json",
            "campaign-Qwen3.6_synthetic_campaign_-request-2.findings.md",
            "paged-o62-l0-vs-contiguous-o62-l0.html",
        ),
    ),
}


def _read(name: str):
    return nbformat.read(NOTEBOOKS_DIR / name, as_version=nbformat.NO_CONVERT)


def _code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _output_text(notebook) -> str:
    """Streams, plain text and HTML of every output (never the inline JavaScript)."""
    parts = []
    for cell in _code_cells(notebook):
        for output in cell.outputs:
            if output.output_type == "stream":
                parts.append(output.text)
            data = output.get("data", {})
            parts += [data[mime] for mime in ("text/plain", "text/html") if mime in data]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def kernel_environment(tmp_path_factory):
    """A `python3` kernel spec running this interpreter, the repo importable and exports in a temporary folder."""
    jupyter_dir = tmp_path_factory.mktemp("jupyter")
    spec_dir = jupyter_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (tests)",
                "language": "python",
            }
        )
    )
    exports = tmp_path_factory.mktemp("exports")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, [str(jupyter_dir), os.environ.get("JUPYTER_PATH")])))
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        patch.setenv("EXPLORER_EXPORT_DIR", str(exports))
        yield exports


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_committed_without_outputs(name):
    notebook = _read(name)
    nbformat.validate(notebook)
    assert _code_cells(notebook)
    for cell in _code_cells(notebook):
        assert cell.outputs == [], cell.source
        assert cell.execution_count is None, cell.source


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_first_cell_says_why_outputs_are_not_saved(name):
    first = _read(name).cells[0]
    assert first.cell_type == "markdown" and OUTPUTS_NOTE in first.source


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sources_carry_no_verdict_wording(name):
    for cell in _read(name).cells:
        assert not VERDICT_WORDS.search(cell.source), cell.source


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_runs_top_to_bottom(name, kernel_environment):
    path = NOTEBOOKS_DIR / name
    committed = path.read_bytes()
    notebook = _read(name)
    client = NotebookClient(
        notebook, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT_S, resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}
    )
    client.execute()  # raises CellExecutionError on the first cell that raises

    texts, views, exports = EXPECTED[name]
    cells = _code_cells(notebook)
    assert all(cell.execution_count is not None for cell in cells)
    assert not [o for cell in cells for o in cell.outputs if o.output_type == "error"]
    shown = _output_text(notebook)
    for text in texts:
        assert text in shown, text
    streams = "\n".join(o.text for cell in cells for o in cell.outputs if o.output_type == "stream")
    assert not VERDICT_WORDS.search(streams)
    assert sum(VIEW_MIME in o.get("data", {}) for cell in cells for o in cell.outputs) >= views
    serialized = nbformat.writes(notebook)
    for host in CDN_HOSTS:
        assert host not in serialized, f"{name} loads resources from {host}"
    for file_name in exports:
        assert (kernel_environment / file_name).stat().st_size > 0, file_name
    assert path.read_bytes() == committed  # outputs are never written back
