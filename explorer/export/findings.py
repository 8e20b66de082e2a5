"""NAME.findings.md: an export's write-up in one Markdown file.

NAME.findings.md: an export's write-up in one Markdown file (finding sentences, the selection, links to the PNGs);
text only, computes nothing.

Written beside every export (`explorer report`, the app's Export, a pair's and a
replay run's export) by explorer.export.pages, in the same all-or-none write. The
sentences are the core's (explorer.analysis.findings, explorer.pair.findings) and
their numbers are the JSON report's, printed by explorer.foundations.formatting as
everywhere else; the links are relative, so the file, its PNGs and its JSON can be
moved together into an incident document (docs/report.md, "The findings file").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from explorer.analysis.findings import packet_findings
from explorer.analysis.result import Analysis
from explorer.foundations.bounded import escaped_bytes
from explorer.foundations.formatting import short_number
from explorer.packet.snapshot import SELECTION_LABELS

FINDINGS_SUFFIX = ".findings.md"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>])")  # what Markdown would read as markup inside a line


def markdown_text(text: str) -> str:
    """`text` (a name, a path, a message) escaped so Markdown shows it as written."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", escaped_bytes(text))


def _bullets(lines: Iterable[str]) -> list[str]:
    return [f"- {markdown_text(line)}" for line in lines]


def _header(title: str, fields: Sequence[tuple[str, str]]) -> list[str]:
    """The title and the caption band's fields (the same as on every PNG of the export)."""
    return [
        f"# {markdown_text(title)}",
        "",
        *(f"- {markdown_text(label)}: {markdown_text(value)}" for label, value in fields),
    ]


def _figures(pngs: Sequence[str], titles: dict[str, str]) -> list[str]:
    """One image link per PNG file name (relative: the PNGs sit beside this file), titled by its view."""
    lines = ["", "## Figures", ""]
    for file_name in pngs:
        slug = next((s for s in titles if re.search(rf"-{re.escape(s)}(-\d+)?\.png$", file_name)), None)
        title = titles.get(slug, file_name)
        part = re.search(r"-(\d+)\.png$", file_name) if slug and not file_name.endswith(f"-{slug}.png") else None
        alt = title + (f", part {part.group(1)}" if part else "")
        lines += [f"![{markdown_text(alt)}]({file_name})", ""]
    if not pngs:
        lines += ["No PNG was written with this export.", ""]
    return lines


def _files(stem: str, json_suffix: str) -> list[str]:
    return [
        "## Files",
        "",
        f"- [{stem}{json_suffix}]({stem}{json_suffix}): every number at full precision",
        f"- [{stem}.html]({stem}.html): the page of the views (opens offline)",
        "",
    ]


def selection_lines(analysis: Analysis) -> list[str]:
    """The packet's selection fields as one line each (none when the selection is not established)."""
    selection = analysis.admission.selection
    if not selection:
        return ["Selection not established (see the status)."]
    return [f"{label}: {short_number(selection[key])}" for key, label in SELECTION_LABELS if key in selection]


def packet_markdown(
    analysis: Analysis,
    fields: Sequence[tuple[str, str]],
    stem: str,
    pngs: Sequence[str],
    head: int | None,
    titles: dict[str, str],
) -> str:
    """The findings file of one packet: caption fields, finding sentences, selection, figures, files."""
    lines = _header(f"{fields[0][1]}: findings", fields)
    lines += ["", "## Findings", "", *_bullets(f.text for f in packet_findings(analysis))]
    lines += ["", "## Selection", "", *_bullets(selection_lines(analysis))]
    if head is not None and analysis.numerics is not None:
        lines += _bullets([f"The views open on query head {head}."])
    lines += _figures(pngs, titles) + _files(stem, ".report.json")
    return "\n".join(lines)


def pair_markdown(
    pair, fields: Sequence[tuple[str, str]], title: str, stem: str, pngs: Sequence[str], titles: dict[str, str]
) -> str:
    """The findings file of a pair: caption fields, the pair's findings (which side is off first), the shared
    selection, figures, files."""
    from explorer.pair.findings import pair_findings

    lines = _header(f"{title}: findings", fields)
    lines += ["", "## Findings", "", *_bullets(f.text for f in pair_findings(pair))]
    shared = [f"{name}: {short_number(value)}" for name, value in pair.selection or ()]
    differing = [f"{d.field} differs: a {short_number(d.a)}, b {short_number(d.b)}" for d in pair.selection_differences]
    lines += ["", "## Selection", "", *_bullets(shared + differing or ["Selection not compared (a side was refused)."])]
    lines += _figures(pngs, titles) + _files(stem, ".comparison.json")
    return "\n".join(lines)


def replay_markdown(
    run, fields: Sequence[tuple[str, str]], title: str, stem: str, pngs: Sequence[str], titles: dict[str, str]
) -> str:
    """The findings file of a replay run: caption fields, the run's summary as `explorer replay` prints it (the matrix's
    sentence first, then each arm), the packet's selection, figures, files."""
    from explorer.replay.text import summary_lines

    report = run.report()
    sentence = (report.get("matrix") or {}).get("sentence")
    lines = _header(f"{title}: findings", fields)
    lines += ["", "## Findings", ""] + ([escaped_bytes(sentence), ""] if sentence else [])
    lines += ["```", *(escaped_bytes(line) for line in summary_lines(report)), "```"]
    selection = ["Source packet not found."] if run.packet is None else selection_lines(run.packet)
    lines += ["", "## Selection", "", *_bullets(selection)]
    lines += _figures(pngs, titles) + _files(stem, ".replay.json")
    return "\n".join(lines)
