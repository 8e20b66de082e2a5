"""An export's files: where they go, the free name they share (name, name-2, ...), all-or-none writes.

Each file is written whole or not at all and never over an existing name (explorer.foundations.safeio); when any file of
the set cannot be written, the files this export wrote are removed. Computes nothing, renders nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from explorer.foundations.safeio import write_new

EXPORT_DIR_ENV = "EXPLORER_EXPORT_DIR"
DEFAULT_EXPORT_DIR = "exports"
HTML_SUFFIX = ".html"
PNG_SUFFIX = ".png"
FINDINGS_SUFFIX = ".findings.md"
MAX_NAME_ATTEMPTS = 1000  # name-2, name-3, ... before giving up on a free file name
MAX_STEM_CHARS = 100  # characters of a name kept in file names (a name may be 255 bytes, a path 4096)
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

Findings = Callable[[str, Sequence[str]], str]  # (stem, PNG file names) -> the text of NAME.findings.md


@dataclass(frozen=True)
class ExportPaths:
    """Files written by one export (every part of a split PNG); `files` names them all, for the app's downloads."""

    html: Path
    report: Path
    pngs: tuple[Path, ...] = ()
    findings: Path | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file written, in the order a note lists them: page, JSON, findings, PNGs."""
        return (self.html, self.report, *((self.findings,) if self.findings else ()), *self.pngs)


def choose_export_dir(argument: str | None, environ: Mapping[str, str] = os.environ) -> Path:
    """The export directory: the argument, else $EXPLORER_EXPORT_DIR, else ./exports, made absolute (realpath: a symlink
    loop stays in the path and writing there fails with ELOOP, where Path.resolve would raise)."""
    chosen = argument or environ.get(EXPORT_DIR_ENV) or DEFAULT_EXPORT_DIR
    return Path(os.path.realpath(os.path.expanduser(chosen)))


def stem_base(name: str, fallback: str) -> str:
    """The file-name stem of a name: ASCII letters, digits and ._- only, at most MAX_STEM_CHARS."""
    return _UNSAFE_NAME.sub("_", name).strip("._")[:MAX_STEM_CHARS] or fallback


def png_suffixes(shots: Mapping[str, Sequence[bytes]]) -> dict[str, bytes]:
    """Each PNG's file-name ending after the stem: `-<slug>.png`, or `-<slug>-1.png`, `-2.png`, ... for parts."""
    files = {}
    for slug, parts in shots.items():
        numbers = [""] if len(parts) == 1 else [f"-{number}" for number in range(1, len(parts) + 1)]
        files.update(zip([f"-{slug}{number}{PNG_SUFFIX}" for number in numbers], parts, strict=True))
    return files


def set_suffixes(json_suffix: str, slugs: Sequence[str]) -> tuple[str, ...]:
    """The file-name endings that make a stem taken for an export of this kind: any of its files."""
    pngs = (f"-{slug}{part}{PNG_SUFFIX}" for slug in slugs for part in ("", "-1"))
    return (HTML_SUFFIX, json_suffix, FINDINGS_SUFFIX, *pngs)


def free_stem(out_dir: Path, base: str, suffixes: Sequence[str]) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first stem none of whose export files (`suffixes`) exist."""
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        stem = base if attempt == 1 else f"{base}-{attempt}"
        if not any(os.path.lexists(out_dir / f"{stem}{suffix}") for suffix in suffixes):
            return stem
    raise FileExistsError(f"no free export name for {base} in {out_dir}")


def write_set(files: Mapping[Path, str | bytes]) -> tuple[Path, ...]:
    """Every file of `files`, or none of them: a failed write removes the ones this call wrote."""
    written: list[Path] = []
    try:
        for path, data in files.items():
            written.append(write_new(path, data))
    except BaseException:
        remove(written)
        raise
    return tuple(written)


def remove(paths: Sequence[Path]) -> None:
    """Remove the files of an export that failed (what cannot be removed stays; the error raised says why)."""
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def _write_named(out_dir: Path, base: str, files: Mapping[str, str | bytes], suffixes: Sequence[str]):
    """Every file of one export (`files`: suffix -> content) under the first free stem, all or none; the first file
    reserves the name (`write_new` links it only while free), so of two exports choosing one stem the other moves on."""
    for _ in range(MAX_NAME_ATTEMPTS):
        stem = free_stem(out_dir, base, suffixes)
        try:
            return stem, write_set({out_dir / f"{stem}{suffix}": data for suffix, data in files.items()})
        except FileExistsError:
            continue  # another export took the stem between the look and the write
    raise FileExistsError(f"no free export name for {base} in {out_dir}")


def write_export(
    out_dir: Path,
    base: str,
    report: tuple[str, str],
    page: str,
    pngs: Mapping[str, bytes],
    findings: Findings,
    sections: Sequence[str],
) -> ExportPaths:
    """One export under the first free stem from `base`, all or none: the JSON (`report`: suffix, text), the page, the
    PNGs (suffix -> bytes) and, last, `findings(stem, PNG names)`. A stem is taken when any file of the kind's set
    exists (`sections`: its PNG slugs, drawn or not)."""
    json_suffix, text = report
    suffixes = (*set_suffixes(json_suffix, sections), *pngs)
    stem, written = _write_named(out_dir, base, {json_suffix: text, HTML_SUFFIX: page, **pngs}, suffixes)
    json_path, html_path, png_paths = written[0], written[1], written[2:]
    try:
        markdown = write_new(out_dir / f"{stem}{FINDINGS_SUFFIX}", findings(stem, [p.name for p in png_paths]))
    except BaseException:
        remove(written)
        raise
    return ExportPaths(html=html_path, report=json_path, pngs=png_paths, findings=markdown)
