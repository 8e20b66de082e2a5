"""Emulation-id parsing and the expansion of named sets (default, sweep).

Every error a bounded one-line usage message; no numerics, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from explorer.analysis.emulation import library
from explorer.analysis.emulation.kernels import (
    BUILD,
    BUILDS_NAME,
    BUILDS_SET,
    DEFAULT_SET,
    DEFAULT_SET_NAME,
    FLOAT32_PARTIAL_BUILDS,
    KERNELS,
    MLX_RUN,
    MLX_SDPA,
    SWEEP,
    SWEEP_NAME,
    EmulationIdError,
)
from explorer.foundations.bounded import clip, quoted
from explorer.foundations.record import Record, record

_ID_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^\s=]+)\s*$")


def named_set(name: str) -> tuple[str, ...] | None:
    """The ids of a named set (`default` with mlx_run when MLX is importable here); None for another name."""
    if name == DEFAULT_SET_NAME:
        return DEFAULT_SET + ((MLX_RUN,) if library.available() else ())
    return {SWEEP_NAME: SWEEP, BUILDS_NAME: BUILDS_SET}.get(name)


MAX_REQUESTED_IDS = 256  # ids in one request, named sets expanded (a request is user input)


@record
class RequestedId(Record):
    """A parsed id: the kernel and the parameters given in it (validated, in the order given)."""

    kernel: str
    given: tuple[tuple[str, Any], ...]
    collapsible: bool = False  # from the `builds` set: runs once with any earlier one of the same launch


def _check_partials(text: str, kernel: str, given: dict[str, Any]) -> None:
    """A float32-partials build gives no partialDType choice: another value is a usage error naming the rule."""
    build = given.get(BUILD.name, BUILD.default)
    partial = given.get("partialDType", "float32")
    if kernel == MLX_SDPA and build in FLOAT32_PARTIAL_BUILDS and partial != "float32":
        raise EmulationIdError(
            f"{quoted(text)}: partialDType={partial} is not allowed with build={build}, whose two-pass partials are "
            f"always float32 (builds {', '.join(FLOAT32_PARTIAL_BUILDS)} accept only partialDType=float32)"
        )


def parse_id(text: str) -> RequestedId:
    """Parse `name` or `name(p=v,...)`; raises EmulationIdError naming the id, what is wrong and what is allowed."""
    if not isinstance(text, str):
        raise EmulationIdError(f"an emulation id is a string, got {type(text).__name__}")
    match = _ID_PATTERN.match(text)
    if match is None:
        raise EmulationIdError(f"malformed emulation id {quoted(text)}: expected name or name(parameter=value,...)")
    name, body = match.group(1), match.group(2)
    if name not in KERNELS:
        raise EmulationIdError(
            f"unknown emulation kernel {quoted(name)} in {quoted(text)} (known: "
            f"{', '.join(KERNELS)}, or {DEFAULT_SET_NAME!r}, {SWEEP_NAME!r} or {BUILDS_NAME!r} for a named set)"
        )
    kernel = KERNELS[name]
    given: list[tuple[str, Any]] = []
    for part in body.split(",") if body is not None and body.strip() else ():
        assignment = _ASSIGNMENT.match(part)
        if assignment is None:
            raise EmulationIdError(f"malformed parameter {quoted(part.strip())} in {quoted(text)}: expected name=value")
        key, value_text = assignment.groups()
        parameter = kernel.parameter(key)
        if parameter is None:
            known = ", ".join(p.name for p in kernel.parameters) or "none"
            raise EmulationIdError(f"{name} has no parameter {quoted(key)} in {quoted(text)} (its parameters: {known})")
        if any(key == seen for seen, _ in given):
            raise EmulationIdError(f"parameter {key!r} is given twice in {quoted(text)}")
        try:
            value = parameter.read(value_text)
        except ValueError:
            raise EmulationIdError(f"{quoted(text)}: {key}={clip(value_text)} is not {parameter.accepts}") from None
        given.append((key, value))
    _check_partials(text, name, dict(given))
    return RequestedId(name, tuple(given))


def expand(request: str | Iterable[str]) -> tuple[RequestedId, ...]:
    """The parsed ids of a request, named sets expanded in place (the `builds` set's ids collapsible)."""
    texts = [request] if isinstance(request, str) else list(request)
    if not texts:
        raise EmulationIdError("no emulation id given")
    parsed: list[RequestedId] = []
    for text in texts:
        named = named_set(text.strip()) if isinstance(text, str) else None
        if named is not None:
            collapse = text.strip() == BUILDS_NAME
            parsed += [RequestedId(r.kernel, r.given, r.collapsible or collapse) for r in expand(list(named))]
        else:
            parsed.append(parse_id(text))
        if len(parsed) > MAX_REQUESTED_IDS:
            raise EmulationIdError(f"more than {MAX_REQUESTED_IDS} emulation ids in one request")
    return tuple(parsed)
