"""pyproject.toml declares every third-party module the package imports, and CI pins each one.

Every import statement of explorer/ is read (also one inside a function); each module outside the standard
library must be a distribution of `dependencies`, or of the extra named in OPTIONAL for the few imported only
when asked; every declared distribution has a pin in .ci/constraints.txt.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "explorer"
# Imported module -> the distribution that provides it, where the two names differ.
DISTRIBUTION = {"PIL": "pillow", "distributed": "dask"}
# Modules imported only inside the function that needs them -> the extra that installs them.
OPTIONAL = {"dask": "cluster", "distributed": "cluster", "mlx": "mlx", "playwright": "export"}
NAME = re.compile(r"[A-Za-z0-9_.-]+")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _names(requirements: list[str]) -> set[str]:
    return {_normal(NAME.match(requirement).group()) for requirement in requirements}


def _imported() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name != "explorer"}


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
REQUIRED = _names(PROJECT["dependencies"])
EXTRAS = {extra: _names(requirements) for extra, requirements in PROJECT["optional-dependencies"].items()}


def test_every_imported_module_is_declared_required_or_in_its_extra():
    undeclared = []
    for module in sorted(_imported()):
        distribution = _normal(DISTRIBUTION.get(module, module))
        declared_in = EXTRAS[OPTIONAL[module]] if module in OPTIONAL else REQUIRED
        if distribution not in declared_in:
            undeclared.append(f"{module} ({distribution}, expected in {OPTIONAL.get(module, 'dependencies')})")
    assert undeclared == []


def test_nothing_is_declared_required_that_the_package_does_not_import():
    imported = {_normal(DISTRIBUTION.get(module, module)) for module in _imported()}
    assert REQUIRED - imported == set()


def test_every_declared_distribution_is_pinned_for_ci():
    pinned = {
        _normal(line.split("==")[0])
        for line in (REPO / ".ci" / "constraints.txt").read_text().splitlines()
        if "==" in line
    }
    declared = REQUIRED | EXTRAS["test"]
    assert {name for name in declared if name not in pinned} == set()
