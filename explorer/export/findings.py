"""NAME.findings.md: an export's write-up, one Markdown layout for every kind; text only.

Title, caption fields, the core's finding sentences, tables and details, then relative links to the PNGs, JSON and page
beside it, so the set moves into an incident ticket together (docs/report.md, "The findings file"). Every text shows as
written: a word Markdown would read as markup goes in a code span, a control character as \\xNN.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from explorer.foundations.bounded import escaped_bytes

MARKUP_CHARACTERS = frozenset("\\`*_[]<>!&#@~$")  # what CommonMark or a tracker (mentions, math) reads as markup
_LINE_START = re.compile(r"^(?:[-+*>#=]|\d{1,9}[.)]$)")  # a first word that would open a block (list, heading)
_BACKTICKS = re.compile(r"`+")
_PART = re.compile(r"-(\d+)\.png$")
LEADING, TRAILING = "(", ".,;:)"  # punctuation around a word kept outside its code span
NO_PNG = "No PNG was written with this export."
FILE_LINES = (
    ("{json}", "every number at full precision"),
    ("{html}", "the page of the views (opens offline)"),
)


@dataclass(frozen=True)
class Table:
    """A table of the write-up: its heading, column names and rows of cells (text)."""

    heading: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class WriteUp:
    """What one export's findings file says, in this order; `details` are (heading, lines) sections."""

    title: str
    fields: Sequence[tuple[str, str]]
    findings: Sequence[str]
    tables: Sequence[Table] = ()
    details: Sequence[tuple[str, Sequence[str]]] = ()


def _visible(character: str) -> str:
    """A control character (a line break would end the line and let a name open a block) as \\xNN or \\uNNNN."""
    if unicodedata.category(character) not in ("Cc", "Zl", "Zp"):
        return character
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def code_span(text: str) -> str:
    """`text` as a code span: shown exactly as written, never read as markup (backticks inside get a longer fence)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _needs_span(word: str, first: bool) -> bool:
    return (
        any(c in MARKUP_CHARACTERS for c in word)
        or "://" in word
        or word.startswith("www.")
        or (first and _LINE_START.match(word) is not None)
    )


def _split_punctuation(word: str) -> tuple[str, str, str]:
    """(leading, core, trailing): sentence punctuation around a word, a parenthesis only when it is unbalanced."""
    start, end = 0, len(word)
    while end > start:
        core = word[start:end]
        if core[-1] in TRAILING[:-1]:
            end -= 1
        elif len(core) > 1 and core[0] == LEADING and core[-1] == ")":
            start, end = start + 1, end - 1
        elif core[-1] == ")" and core.count(")") > core.count("("):
            end -= 1
        elif core[0] == LEADING and core.count("(") > core.count(")"):
            start += 1
        else:
            break
    return word[:start], word[start:end], word[end:]


def markdown_text(text: str) -> str:
    """`text` as Markdown that shows it as written (the module docstring): markup words in code spans."""
    shown = "".join(map(_visible, escaped_bytes(text)))
    words = []
    for index, word in enumerate(shown.split(" ")):
        if not word or not _needs_span(word, index == 0):
            words.append(word)
            continue
        leading, core, trailing = _split_punctuation(word)
        words.append(leading + code_span(core) + trailing if core and _needs_span(core, False) else code_span(word))
    return " ".join(words)


def _cell(text: str) -> str:
    return markdown_text(text).replace("|", "\\|")


def _table(table: Table) -> list[str]:
    lines = ["", f"## {markdown_text(table.heading)}", ""]
    lines.append("| " + " | ".join(_cell(name) or " " for name in table.header) + " |")
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in table.rows]
    return lines


def _bullets(heading: str, lines: Sequence[str]) -> list[str]:
    return ["", f"## {markdown_text(heading)}", "", *(f"- {markdown_text(line)}" for line in lines)]


def figure_title(file_name: str, titles: Mapping[str, str]) -> str:
    """The alt text of a PNG's link: its section's title, and its part number when the section was split."""
    for slug, title in titles.items():
        if file_name.endswith(f"-{slug}.png"):
            return title
        part = _PART.search(file_name)
        if part and file_name.endswith(f"-{slug}-{part.group(1)}.png"):
            return f"{title}, part {part.group(1)}"
    return file_name


def _figures(pngs: Sequence[str], titles: Mapping[str, str]) -> list[str]:
    """One image link per PNG file name (relative: the PNGs sit beside this file), titled by its section."""
    lines = ["", "## Figures", ""]
    for file_name in pngs:
        lines += [f"![{markdown_text(figure_title(file_name, titles))}]({file_name})", ""]
    return lines + ([NO_PNG, ""] if not pngs else [])


def findings_markdown(
    write_up: WriteUp, stem: str, pngs: Sequence[str], titles: Mapping[str, str], json_suffix: str
) -> str:
    """The findings file of one export: `write_up`, its figures (`pngs`, titled by `titles`: slug -> title) and its
    files (the stem's JSON and page), every link relative."""
    lines = [f"# {markdown_text(write_up.title)}: findings", ""]
    lines += [f"- {markdown_text(label)}: {markdown_text(value)}" for label, value in write_up.fields]
    lines += _bullets("Findings", write_up.findings)
    for table in write_up.tables:
        lines += _table(table)
    for heading, detail in write_up.details:
        lines += _bullets(heading, detail)
    lines += _figures(pngs, titles)
    names = {"json": f"{stem}{json_suffix}", "html": f"{stem}.html"}
    lines += ["## Files", ""]
    lines += [f"- [{file.format(**names)}]({file.format(**names)}): {what}" for file, what in FILE_LINES]
    return "\n".join(lines) + "\n"
