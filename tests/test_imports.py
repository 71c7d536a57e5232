"""Imports point one way (DESIGN.md §2): the estimator sees only columns; only cli.py knows click."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "llmsweep"


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def llmsweep_modules(path: Path) -> set[str]:
    return {n for n in imports(path) if n.startswith("llmsweep")}


def test_estimator_sees_only_columns():
    for path in (PACKAGE / "estimate").glob("*.py"):
        outside = {m for m in llmsweep_modules(path) if not m.startswith("llmsweep.estimate")}
        assert outside <= {"llmsweep.columns"}, path.name


def test_only_the_cli_knows_click():
    for path in PACKAGE.rglob("*.py"):
        if path.name != "cli.py":
            assert "click" not in imports(path), path


def test_catalog_and_grid_do_not_know_the_sweep_file():
    for path in [*(PACKAGE / "catalog").glob("*.py"), PACKAGE / "grid.py"]:
        assert not llmsweep_modules(path) & {"llmsweep.spec", "llmsweep.pipeline", "llmsweep.report"}, path.name


def test_no_exit_or_print_in_the_core():
    for path in PACKAGE.rglob("*.py"):
        if path.name in ("cli.py", "__main__.py"):
            continue
        source = path.read_text()
        assert "sys.exit" not in source and "print(" not in source, path
