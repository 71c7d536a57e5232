"""Docs that cannot rot: the README's column dictionary and Quickstart."""

from __future__ import annotations

import re

from llmsweep.columns import COLUMNS, EXPORTED, c, markdown_dictionary, options_dictionary

from .conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_readme_column_dictionary_is_generated_from_columns_py():
    block = README.split("<!-- columns:start -->\n")[1].split("\n<!-- columns:end -->")[0]
    assert block == markdown_dictionary()
    for name in EXPORTED:
        assert f"| `{name}` |" in block


def test_readme_options_columns_are_generated_from_columns_py():
    block = README.split("<!-- options:start -->\n")[1].split("\n<!-- options:end -->")[0]
    assert block == options_dictionary()


def test_columns_declared_once_with_units_in_names():
    names = [col.name for col in COLUMNS]
    assert len(names) == len(set(names))
    for col in COLUMNS:
        if col.unit in ("bytes", "s", "bytes/s", "FLOP/s", "tokens/s"):
            suffix = {
                "bytes": "bytes",
                "s": "_s",
                "bytes/s": "bytes_per_s",
                "FLOP/s": "flops_per_s",
                "tokens/s": "_per_s",
            }[col.unit]
            assert suffix in col.name, col.name


def test_column_refs_refuse_undeclared_names():
    import pytest

    with pytest.raises(AttributeError, match="not declared"):
        _ = c.tokens_per_second


QUICKSTART = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install . && llmsweep run sweeps/example.yaml",
    ". .venv/bin/activate && pip install '.[test]' && python -m pytest",
)


def quickstart_commands() -> list[str]:
    quick = README.split("## Quickstart")[1].split("\n## ")[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quickstart_has_exactly_two_commands_that_use_a_virtual_environment():
    # Debian/Ubuntu's system Python refuses `pip install` outside a venv (PEP 668): both commands use .venv
    assert quickstart_commands() == list(QUICKSTART)
    quick = README.split("## Quickstart")[1].split("\n## ")[0]
    assert "python3-venv" in quick and "externally-managed-environment" in quick


def test_ci_runs_the_quickstart_verbatim():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in quickstart_commands():
        assert command in ci, command  # a line of its own, word for word


def test_readme_counts_the_catalogs():
    from llmsweep.catalog import load_catalog

    cat = load_catalog()
    gpus = re.search(r"`llmsweep/catalog/gpus.yaml`: (\d+) GPUs", README).group(1)
    models = re.search(r"`llmsweep/catalog/models.yaml`: (\d+) models", README).group(1)
    assert (int(gpus), int(models)) == (len(cat.gpus), len(cat.models))
