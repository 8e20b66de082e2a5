"""The package's layering, read from the source.

No import of a higher layer, no import circle, no other module's underscore names.

Layers, lowest first (docs/architecture.md): version = foundations < packet < analysis < pair = replay
< catalog < campaigns < samples < views < export = notebook < ui < the entry points (app, cli, launch,
the package's __init__ and __main__). Every import statement counts, also one inside a
function or under TYPE_CHECKING; the only tolerated back-references are the lazy
delegations listed in ALLOWED_LAZY, each a result's own method importing its own builder.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "explorer"
LAYERS = {
    "version": 0,
    "foundations": 0,
    "packet": 1,
    "analysis": 2,
    "pair": 3,
    "replay": 3,
    "catalog": 4,
    "campaigns": 5,
    "samples": 6,
    "views": 7,
    "export": 8,
    "notebook": 8,
    "ui": 9,
}
TOP = 10  # app, cli, launch, __init__, __main__
# (importing module, imported module): a result's method delegating to its own builder, imported lazily.
ALLOWED_LAZY = {
    ("explorer.analysis.result", "explorer.analysis.report"),  # Analysis.report()
    ("explorer.analysis.result", "explorer.analysis.element"),  # Analysis.element()
    ("explorer.pair.model", "explorer.pair.report"),  # Pair.report()
    ("explorer.replay.model", "explorer.replay.report"),  # Replay.report()
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _rank(module: str) -> int:
    parts = module.split(".")
    return TOP if len(parts) == 1 else LAYERS.get(parts[1], TOP)


def _is_package(module: str) -> bool:
    return MODULES.get(module, Path()).name == "__init__.py"


def _imports(module: str) -> list[tuple[int, str, tuple[str, ...], bool]]:
    """(line, imported module, names taken, lazy) of every explorer import in `module`."""
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    top_level = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        lazy = id(node) not in top_level
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, (), lazy) for alias in node.names if alias.name.startswith("explorer")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("explorer"):
            names = tuple(alias.name for alias in node.names)
            submodules = [f"{node.module}.{name}" for name in names if f"{node.module}.{name}" in MODULES]
            targets = submodules or [node.module]
            found += [(node.lineno, target, names if target == node.module else (), lazy) for target in targets]
    return found


def _edges() -> dict[str, set[str]]:
    """Module -> modules it imports, leaving out a package's own submodules imported by its __init__."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module in MODULES:
        for _, target, _, lazy in _imports(module):
            if lazy and (module, target) in ALLOWED_LAZY:
                continue
            if _is_package(module) and target.startswith(module + "."):
                continue
            if target in MODULES and target != module:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_layer_table_names_every_package():
    packages = {module.split(".")[1] for module in MODULES if module.count(".") >= 1 and _is_package(module)}
    assert packages <= set(LAYERS), f"a package without a layer: {sorted(packages - set(LAYERS))}"


def test_no_module_imports_a_higher_layer():
    offences = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: imports {target} (layer {_rank(target)} "
        f"above {_rank(module)})"
        for module in MODULES
        for line, target, _, lazy in _imports(module)
        if _rank(target) > _rank(module) and not (lazy and (module, target) in ALLOWED_LAZY)
    ]
    assert offences == [], "\n".join(offences)


def test_no_import_circles():
    assert _cycles(_edges()) == [], "import circles (module groups importing each other)"


def test_no_module_imports_another_modules_underscore_names():
    offences = [
        f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: from {target} import {name}"
        for module in MODULES
        for line, target, names, _ in _imports(module)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert offences == [], "\n".join(offences)


@pytest.mark.parametrize("pair", sorted(ALLOWED_LAZY))
def test_each_allowed_lazy_import_is_lazy_and_commented(pair):
    module, target = pair
    lines = MODULES[module].read_text().splitlines()
    found = [(line, lazy) for line, imported, _, lazy in _imports(module) if imported == target]
    assert found and all(lazy for _, lazy in found), f"{module} must import {target} only inside a method"
    assert all("lazy" in lines[line - 1] for line, _ in found), f"{module}: say why the import of {target} is lazy"


def test_the_checker_sees_a_circle_and_an_upward_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _rank("explorer.views.packet.errors") > _rank("explorer.analysis.result") > _rank("explorer.packet.model")
