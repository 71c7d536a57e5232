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


def test_quickstart_has_exactly_two_commands():
    quick = README.split("## Quickstart")[1].split("\n## ")[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[1] == "python3 -m pip install '.[test]' && python3 -m pytest"
