"""The notebook face of an analysis: HTML, plain text, `result.views.*` and `pn.panel(result)`.

The notebook face of an analysis: rich HTML, plain text, `result.views.*` and `pn.panel(result)` for every
status, and a core that still never imports a UI library.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import explorer
from explorer.export.files import DEFAULT_EXPORT_DIR, EXPORT_DIR_ENV
from explorer.notebook.packet import VIEW_CALLS, Views, export_dir, sample
from explorer.packet.model import ANALYZED, INCONCLUSIVE, REFUSED
from explorer.samples.packets import write_samples
from explorer.views.shared import html_summary, markup

REPO = Path(__file__).resolve().parents[2]
UI_MODULES = ("panel", "holoviews", "bokeh")
HEAD = 5  # a query head every sample has (QH8)
# One packet per kind of result: analyzed, inconclusive with and without a reference, refused.
SAMPLES = {
    "injected-error-head5": ANALYZED,
    "nan-stored-values": INCONCLUSIVE,
    "discarded-sample": INCONCLUSIVE,
    "refused-hash-mismatch": REFUSED,
}
METHODS = [call.split("(")[0] for call in VIEW_CALLS]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("samples")
    write_samples(root)
    return {name: explorer.analyze(root / name) for name in SAMPLES}


def _codes(result) -> list[str]:
    return [p.code for p in result.admission.refusals] + [r.code for r in result.reasons]


@pytest.mark.parametrize("name", SAMPLES)
def test_repr_html_shows_status_codes_and_views(name, results):
    result = results[name]
    assert result.status == SAMPLES[name]
    markup = result._repr_html_()
    assert f'data-status="{result.status}"' in markup
    assert bool(_codes(result)) == (result.status != ANALYZED)
    for code in _codes(result):
        assert f">{code}</code>" in markup
    assert ".views.errors()" in markup


def test_repr_html_lists_the_largest_heads_first(results):
    markup = results["injected-error-head5"]._repr_html_()
    table = markup.split('class="per-head-primary"')[1].split("</table>")[0]
    rows = re.findall(r"<tr[^>]*><td[^>]*>(\d+)</td>", table)
    assert rows[0] == str(HEAD)
    assert len(rows) == html_summary.LARGEST_HEADS


def test_repr_html_without_reference_says_why(results):
    missing = markup.esc(html_summary.MISSING[html_summary.NEEDS_NUMERICS])
    assert missing in results["discarded-sample"]._repr_html_()
    assert markup.esc(html_summary.MISSING_BECAUSE_REFUSED) in results["refused-hash-mismatch"]._repr_html_()


@pytest.mark.parametrize("name", SAMPLES)
def test_plain_text_is_one_line_with_status_and_codes(name, results):
    from IPython.lib.pretty import pretty

    result = results[name]
    text = pretty(result)
    assert "\n" not in text
    assert result.status in text and all(code in text for code in _codes(result))
    assert repr(result.views).startswith("Views of ")


def test_accessor_covers_every_registry_view():
    from explorer.views import VIEWS

    assert METHODS[:-1] == [slug for slug, _, _ in VIEWS]
    assert METHODS[-1] == "all"
    for method in METHODS:
        assert callable(getattr(Views, method))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", SAMPLES)
def test_each_view_is_a_viewable_for_each_status(name, method, results):
    import panel as pn
    from bokeh.document import Document

    accessor = results[name].views
    kwargs = {"head": HEAD} if "head=" in VIEW_CALLS[METHODS.index(method)] else {}
    view = getattr(accessor, method)(**kwargs)
    assert isinstance(view, pn.viewable.Viewable)
    document = Document()
    document.add_root(view.get_root(document))
    assert document.roots


def test_attention_follows_the_head(results):
    import panel as pn

    view = results["injected-error-head5"].views.attention(head=HEAD)
    assert [select.value for select in view.select(pn.widgets.Select)] == [HEAD]


@pytest.mark.parametrize("name", SAMPLES)
def test_pn_panel_shows_every_view_in_tabs(name, results):
    import panel as pn

    from explorer.views import VIEWS

    tabs = pn.panel(results[name])
    assert isinstance(tabs, pn.Tabs)
    assert [panel.title for panel in tabs.get_root().tabs] == [title for _, title, _ in VIEWS]


def test_sample_finds_the_bundled_packets():
    assert (sample("clean-fp32q-bf16kv") / "packet.json").is_file()
    with pytest.raises(FileNotFoundError):
        sample("no-such-packet")


def test_export_dir_follows_the_environment_else_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(EXPORT_DIR_ENV, raising=False)
    assert export_dir() == tmp_path.resolve() / DEFAULT_EXPORT_DIR
    monkeypatch.setenv(EXPORT_DIR_ENV, str(tmp_path / "elsewhere"))
    assert export_dir() == tmp_path.resolve() / "elsewhere"


def test_core_and_rich_display_never_import_ui_libraries():
    script = f"""
import json, sys
import explorer, explorer.analysis.result, explorer.analysis.analyze
result = explorer.analyze({str(REPO / "sample_packets" / "injected-error-head5")!r})
result._repr_html_()
repr(result.views)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {UI_MODULES!r})))
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    assert json.loads(completed.stdout) == []
