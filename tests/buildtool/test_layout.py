"""buildtool's three products (cache, images, isolation) share only the top-level utilities,
and the isolation plugin names no variable of this project: read from the sources."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "buildtool"
PRODUCTS = ("cache", "images", "isolation")
# The shared utilities: top-level modules of buildtool, stdlib only.
SHARED = {p.stem for p in ROOT.glob("*.py")} - {"__init__", "__main__", "cli"}


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {n for n in names if n == "buildtool" or n.startswith("buildtool.")}


@pytest.mark.parametrize("product", PRODUCTS)
def test_a_product_imports_only_itself_and_shared_utilities(product: str) -> None:
    allowed = {"buildtool", f"buildtool.{product}"} | {f"buildtool.{s}" for s in SHARED}
    wrong = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in (ROOT / product).rglob("*.py")
        for name in _imported(path)
        if not any(name == a or name.startswith(f"buildtool.{product}.") for a in allowed)
        and not (name.startswith("buildtool.") and name.split(".")[1] in SHARED)
    }
    assert not wrong, sorted(wrong)


def test_shared_utilities_import_no_product() -> None:
    wrong = {
        f"{name}.py: {imported}"
        for name in SHARED
        for imported in _imported(ROOT / f"{name}.py")
        if imported.split(".")[1:2] and imported.split(".")[1] in PRODUCTS
    }
    assert not wrong, sorted(wrong)


def test_the_isolation_plugin_names_no_project_variable() -> None:
    found = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "isolation").rglob("*.py")
        if "DYN_" in path.read_text()
    ]
    assert found == []
