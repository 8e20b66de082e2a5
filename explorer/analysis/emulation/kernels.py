"""The table of emulated kernels (parameters, defaults, labels, assumptions) and emulation-id parsing; no numerics, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from explorer.packet.dtypes import DTYPES

DEFAULT_SET_NAME = "default"
MLX_TWO_PASS, PAGED_TWO_PASS, SINGLE_PASS = "mlx_two_pass", "paged_two_pass", "single_pass"
# Upper bounds on the integer launch parameters (an id is user input; these keep it a sane request).
MAX_BLOCKS = 1 << 16
MAX_PARTITION_TOKENS = 1 << 24
OUTPUT_DTYPE = "the output tensor's dtype"  # the default of a parameter that follows the packet's output dtype

_ID_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([^\s=]+)\s*$")
_DECIMAL = re.compile(r"^[0-9]+$")


class EmulationIdError(ValueError):
    """An emulation id names an unknown kernel, parameter or value (a usage error, never packet content)."""


@dataclass(frozen=True)
class Parameter:
    """One launch parameter of a kernel: its name, default, what it accepts and how a value text is read."""

    name: str
    default: Any
    accepts: str
    read: Callable[[str], Any]


def _positive_integer(limit: int) -> Callable[[str], Any]:
    def read(text: str) -> int:
        if not _DECIMAL.match(text) or not 1 <= int(text) <= limit:
            raise ValueError
        return int(text)
    return read


def _dtype(text: str) -> str:
    if text not in DTYPES:
        raise ValueError
    return text


@dataclass(frozen=True)
class Kernel:
    """One emulated kernel: its name, a one-line description and its parameters in their listed order."""

    name: str
    description: str
    parameters: tuple[Parameter, ...]

    def parameter(self, name: str) -> Parameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        known = ", ".join(p.name for p in self.parameters) or "none"
        raise EmulationIdError(f"{self.name} has no parameter {name!r} (its parameters: {known})")


_BLOCKS = Parameter("blocks", 128, f"an integer from 1 to {MAX_BLOCKS}", _positive_integer(MAX_BLOCKS))
_PARTITION_TOKENS = Parameter("partitionTokens", 256, f"an integer from 1 to {MAX_PARTITION_TOKENS}",
                              _positive_integer(MAX_PARTITION_TOKENS))
_MLX_PARTIAL = Parameter("partialDType", OUTPUT_DTYPE, " or ".join(DTYPES), _dtype)
_PAGED_PARTIAL = Parameter("partialDType", "float32", " or ".join(DTYPES), _dtype)

KERNELS: Mapping[str, Kernel] = MappingProxyType({
    MLX_TWO_PASS: Kernel(MLX_TWO_PASS, "MLX vector decode kernel with per-block partials and a merge", (_BLOCKS, _MLX_PARTIAL)),
    PAGED_TWO_PASS: Kernel(PAGED_TWO_PASS, "paged decode kernel (exp2 domain, partitions merged)",
                           (_PARTITION_TOKENS, _PAGED_PARTIAL)),
    SINGLE_PASS: Kernel(SINGLE_PASS, "single online softmax over all keys (no blocks)", ()),
})

DEFAULT_SET = (MLX_TWO_PASS, f"{MLX_TWO_PASS}(partialDType=float32)", PAGED_TWO_PASS, SINGLE_PASS)

COMMON_ASSUMPTIONS = (
    "The GPU's SIMD reductions may sum lanes in another order than the 32-lane split and butterfly emulated here.",
    "The GPU's fast exp/exp2 differ from correctly rounded values in the last bits; here each is evaluated in "
    "float64 and rounded to float32.",
    "The compiler may fuse multiply-adds; here every float32 operation is rounded on its own.",
)
MERGE_ASSUMPTIONS = {
    MLX_TWO_PASS: "The real kernel merges blocks in a simdgroup-strided order (simdgroup g takes blocks g, g + 32, "
                  "..., then a sum across simdgroups); this emulation sums the blocks in index order.",
    PAGED_TWO_PASS: "The real kernel may merge simdgroups and partitions in another order; this emulation sums "
                    "them in index order.",
    SINGLE_PASS: "No real kernel is claimed to run exactly this loop; it is the baseline of a kernel without blocks.",
}


@dataclass(frozen=True)
class RequestedId:
    """A parsed id: the kernel and the parameters given in it (validated, in the order given)."""

    kernel: str
    given: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class EmulationSpec:
    """A resolved emulation: kernel, every parameter's value (listed order) and the normalised id."""

    kernel: str
    parameters: Mapping[str, Any]
    id: str
    non_default: tuple[str, ...]

    @property
    def label(self) -> str:
        settings = ", ".join(f"{name} {value}" for name, value in self.parameters.items())
        return (f"{self.id}: emulated {KERNELS[self.kernel].description}"
                + (f" ({settings})" if settings else "") + "; a counterfactual, not the reference")

    def assumptions(self) -> tuple[str, ...]:
        kernel = KERNELS[self.kernel]
        launch = ", ".join(f"{p.name} = {self.parameters[p.name]}"
                           + (" (set by the user)" if p.name in self.non_default else " (default)")
                           for p in kernel.parameters)
        launch_sentence = (f"The kernel's launch parameters are assumed to be {launch}; the real launch may differ."
                           if launch else "The kernel has no launch parameters to assume.")
        return (*COMMON_ASSUMPTIONS, MERGE_ASSUMPTIONS[self.kernel], launch_sentence)


def parse_id(text: str) -> RequestedId:
    """Parse `name` or `name(p=v,...)`; raises EmulationIdError naming what is unknown or malformed."""
    if not isinstance(text, str):
        raise EmulationIdError(f"an emulation id is a string, got {type(text).__name__}")
    match = _ID_PATTERN.match(text)
    if match is None:
        raise EmulationIdError(f"malformed emulation id {text!r}: expected name or name(parameter=value,...)")
    name, body = match.group(1), match.group(2)
    if name not in KERNELS:
        raise EmulationIdError(f"unknown emulation kernel {name!r} in {text!r} (known: {', '.join(KERNELS)}, "
                               f"or {DEFAULT_SET_NAME!r} for the default set)")
    kernel = KERNELS[name]
    given: list[tuple[str, Any]] = []
    if body is not None and body.strip():
        for part in body.split(","):
            assignment = _ASSIGNMENT.match(part)
            if assignment is None:
                raise EmulationIdError(f"malformed parameter {part.strip()!r} in {text!r}: expected name=value")
            key, value_text = assignment.groups()
            parameter = kernel.parameter(key)
            if any(key == seen for seen, _ in given):
                raise EmulationIdError(f"parameter {key!r} is given twice in {text!r}")
            try:
                value = parameter.read(value_text)
            except ValueError:
                raise EmulationIdError(f"{name}: {key}={value_text!r} is not {parameter.accepts}") from None
            given.append((key, value))
    return RequestedId(name, tuple(given))


def expand(request: str | Iterable[str]) -> tuple[RequestedId, ...]:
    """The parsed ids of a request: "default" (the default set) or ids, where "default" expands in place."""
    texts = [request] if isinstance(request, str) else list(request)
    if not texts:
        raise EmulationIdError("no emulation id given")
    parsed: list[RequestedId] = []
    for text in texts:
        if isinstance(text, str) and text.strip() == DEFAULT_SET_NAME:
            parsed += [parse_id(default) for default in DEFAULT_SET]
        else:
            parsed.append(parse_id(text))
    return tuple(parsed)


def resolve(requested: RequestedId, output_dtype: str | None) -> EmulationSpec:
    """Every parameter's value and the normalised id (only non-default parameters, in the kernel's order).

    A default that follows the output dtype is unknown when `output_dtype` is None
    (tensors not admitted); a value given for it is then kept in the id.
    """
    kernel = KERNELS[requested.kernel]
    given = dict(requested.given)
    values, shown, names = {}, [], []
    for parameter in kernel.parameters:
        default = output_dtype if parameter.default == OUTPUT_DTYPE else parameter.default
        value = given.get(parameter.name, default)
        values[parameter.name] = value
        if parameter.name in given and value != default:
            shown.append(f"{parameter.name}={value}")
            names.append(parameter.name)
    normalised = kernel.name + (f"({','.join(shown)})" if shown else "")
    return EmulationSpec(kernel.name, MappingProxyType(values), normalised, tuple(names))


def resolve_all(request: str | Iterable[str], output_dtype: str | None) -> tuple[EmulationSpec, ...]:
    """The distinct resolved emulations of a request, each at the position of its first occurrence."""
    specs: dict[str, EmulationSpec] = {}
    for requested in expand(request):
        spec = resolve(requested, output_dtype)
        specs.setdefault(spec.id, spec)
    return tuple(specs.values())


def normalised_ids(request: str | Iterable[str], output_dtype: str | None) -> tuple[str, ...]:
    """The normalised ids of a request in the order they run (emulationsRequested)."""
    return tuple(spec.id for spec in resolve_all(request, output_dtype))
