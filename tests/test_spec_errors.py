"""A corpus of malformed sweeps: each ends in exit code 1, a `file:line: key.path: message` that
names the problem, no traceback, and no output folder. Each file's first line says what to expect."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from llmsweep.cli import main

BAD = sorted((Path(__file__).parent / "sweeps" / "bad").glob("*.yaml"))


def expected(path: Path) -> str:
    first = path.read_text().splitlines()[0] if path.read_text().strip() else ""
    return first.removeprefix("# expect: ")


def check_rejected(args: list[str], out: Path, message: str) -> str:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert message in r.output, r.output
    assert not any(out.iterdir()) if out.exists() else True  # nothing written, not even a partial folder
    return r.output


def test_corpus_is_large_enough():
    assert len(BAD) >= 30


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_malformed_sweep_validate(path, tmp_path):
    args = ["validate", str(path)] + (["--max-rows", "500"] if path.stem == "too_many_rows" else [])
    output = check_rejected(args, tmp_path / "none", expected(path))
    assert output.startswith("Error: ") and f"{path}:" in output


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_malformed_sweep_run_writes_nothing(path, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    args = ["run", str(path), "-o", str(out)] + (["--max-rows", "500"] if path.stem == "too_many_rows" else [])
    check_rejected(args, out, expected(path))


def test_line_numbers_point_at_the_problem():
    path = Path(__file__).parent / "sweeps" / "bad" / "misspelled_gpu.yaml"
    r = CliRunner().invoke(main, ["validate", str(path)])
    assert f"{path}:6: grid.gpu[1]: unknown gpu 'h100-sxn'" in r.output


def test_every_problem_reported_at_once():
    path = Path(__file__).parent / "sweeps" / "bad" / "several_problems.yaml"
    r = CliRunner().invoke(main, ["validate", str(path)])
    lines = r.output.splitlines()
    assert lines[0] == f"Error: 3 problems in {path}:"
    assert any("grid.gpu[0]: unknown gpu 'h100-sxn'" in line for line in lines)
    assert any("grid.tp[0]: Input should be a valid integer" in line for line in lines)
    assert any("slo.ttft_s: Input should be greater than or equal to 0.000001" in line for line in lines)


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: x\n# caf\u00e9\n".encode("latin-1"))
    check_rejected(["validate", str(path)], tmp_path / "none", ":2: (file): not UTF-8 text (byte 0xe9)")


def test_directory_instead_of_file(tmp_path):
    check_rejected(
        ["run", str(tmp_path), "-o", str(tmp_path / "out")], tmp_path / "out", "is a directory, not a sweep file"
    )


def test_missing_file(tmp_path):
    check_rejected(["validate", str(tmp_path / "nope.yaml")], tmp_path / "none", "nope.yaml: (file): file not found")
