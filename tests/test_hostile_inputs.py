"""Hostile inputs (resource exhaustion, numbers, field types, ambiguity): each ends in exit code
1, a message naming the file and the field, no traceback, no output folder, and previous results
left byte-identical.

The corpus is data: tests/hostile/<class>/*.yaml, each file's first line saying what to expect
(`{here}` stands for the file's folder); config.json files and profiles they point at live in
tests/hostile/configs and tests/hostile/profiles. Cases that need a FIFO, a device or a huge file
are made here, in a temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from llmsweep import limits
from llmsweep.cli import MAX_BATCH, MAX_PARALLEL, MAX_TOKENS, main
from llmsweep.errors import SpecError
from llmsweep.yamlfile import load_yaml

HOSTILE = Path(__file__).parent / "hostile"
CLASSES = ("exhaustion", "numbers", "types", "ambiguity", "escapes", "limits", "messages")
CASES = sorted(p for c in CLASSES for p in (HOSTILE / c).glob("*.yaml"))
BASE = "name: hostile\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b]}\n"


def expected(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    return first.removeprefix("# expect: ").replace("{here}", str(path.resolve().parent))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> Path:
    """Results of a valid sweep with the same name as every hostile one (out/hostile/)."""
    root = tmp_path_factory.mktemp("previous")
    sweep = root / "hostile.yaml"
    sweep.write_text(BASE)
    r = CliRunner().invoke(main, ["run", str(sweep), "-o", str(root / "out"), "--format", "csv", "-q"])
    assert r.exit_code == 0, r.output
    return root / "out"


def rejected(args: list[str], message: str) -> str:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit), r.output  # no uncaught error
    assert message in r.output, r.output
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", r.output), repr(r.output)
    return r.output


def run_rejected(sweep: Path, message: str, previous: Path, tmp_path: Path, *extra: str) -> str:
    out = tmp_path / "out"
    shutil.copytree(previous, out)
    before = snapshot(out)
    output = rejected(["run", str(sweep), "-o", str(out), "-q", *extra], message)
    assert snapshot(out) == before  # previous results untouched, nothing new (not even a temp folder)
    assert sorted(p.name for p in out.iterdir()) == ["hostile"]
    return output


def test_corpus_is_large_enough():
    assert len(CASES) >= 60
    assert all(list((HOSTILE / c).glob("*.yaml")) for c in CLASSES)


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_hostile_sweep_validate(path):
    output = rejected(["validate", str(path)], expected(path))
    assert output.startswith("Error: ") and f"{path}:" in output  # names the file


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_hostile_sweep_run_leaves_previous_results(path, previous, tmp_path):
    run_rejected(path, expected(path), previous, tmp_path)


# -- files that are not regular files, or too big ------------------------------------------------


def special_files(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero-link"
    link.symlink_to("/dev/zero")
    big = tmp_path / "big"
    big.write_bytes(b"#" * (limits.MAX_FILE_BYTES + 1))
    return {"fifo": fifo, "dev-zero": Path("/dev/zero"), "link-to-dev-zero": link, "big": big}


NOT_REGULAR = "is not a regular file (a FIFO, device or socket); give the path of a file"
TOO_BIG = "is larger than 4 MiB, the limit for an input file; is this the right file?"
KINDS = ["fifo", "dev-zero", "link-to-dev-zero", "big"]


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="needs a POSIX system")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("role", ["sweep", "config", "profile", "profile-option"])
def test_special_and_huge_files_are_refused(role, kind, previous, tmp_path):
    target = special_files(tmp_path)[kind]
    message = TOO_BIG if kind == "big" else NOT_REGULAR
    extra: list[str] = []
    if role == "sweep":
        sweep = target
        message = f"{target}: (file): {message}"
    else:
        sweep = tmp_path / "hostile.yaml"
        if role == "config":
            sweep.write_text(
                "name: hostile\ngrid: {gpu: [h100-sxm], model: [m]}\n" + f"models:\n  m: {{config: '{target}'}}\n"
            )
            message = f"models.m.config: {target}: {message}"
        else:  # a profile is read as a file when its name ends in .yaml
            link = tmp_path / "profile.yaml"
            link.symlink_to(target)
            message = f"profile: {link}: cannot read the profile file: {message}"
            sweep.write_text(BASE + (f"profile: '{link}'\n" if role == "profile" else ""))
            extra = ["--profile", str(link)] if role == "profile-option" else []
    run_rejected(sweep, message, previous, tmp_path, *extra)
    if role != "profile-option":
        rejected(["validate", str(sweep)], message)


def test_a_directory_as_config_json(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").mkdir()
    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: hostile\ngrid: {gpu: [h100-sxm], model: [m]}\nmodels:\n  m: {config: cfg}\n")
    rejected(["validate", str(sweep)], f"models.m.config: {tmp_path / 'cfg'}: cannot read the file (Is a directory)")


# -- the alias bomb: rejected fast and small ---------------------------------------------------


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["name: hostile", "a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_a_1kb_alias_bomb_is_refused_in_little_memory(tmp_path):
    text = alias_bomb()
    assert len(text.encode()) < 1024  # 9^9 = 387,420,489 strings once expanded
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    tracemalloc.start()
    try:
        with pytest.raises(SpecError, match="more than 100,000 values once its aliases"):
            load_yaml(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20


def test_a_document_within_the_limits_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(alias_bomb(levels=3, width=9))  # 729 values: fine
    assert load_yaml(path).data["a2"][0][0][0] == "x"


# -- ambiguity and notes -------------------------------------------------------------------------


def test_no_option_note_says_the_context_is_too_long(tmp_path):
    from llmsweep.pipeline import compute_plan
    from llmsweep.spec import load

    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        "name: hostile\ngrid: {gpu: [h100-sxm], model: [mistralai/Mistral-7B-v0.1], input_tokens: [65024]}\n"
    )
    notes = compute_plan(load(sweep)).notes
    assert (
        "no option for mistralai/Mistral-7B-v0.1 (65024 in, 256 out) can run (context_tokens exceeds the "
        "model's maximum context); none is recommended"
    ) in notes


def test_no_option_note_says_memory_when_memory_is_why(tmp_path):
    from llmsweep.pipeline import compute_plan
    from llmsweep.spec import load

    sweep = tmp_path / "s.yaml"
    sweep.write_text("name: hostile\ngrid: {gpu: [rtx-4090], model: [meta-llama/Llama-3.1-70B-Instruct]}\n")
    notes = compute_plan(load(sweep)).notes
    assert any(n.endswith("(1024 in, 256 out) fits in memory; none is recommended") for n in notes), notes


# -- the ranges are declared once ------------------------------------------------------------------


def test_cli_option_bounds_are_the_declared_ranges():
    assert limits.RANGES["tokens"].high == MAX_TOKENS
    assert limits.RANGES["batch"].high == MAX_BATCH
    assert limits.RANGES["parallel"].high == MAX_PARALLEL


def test_every_range_is_in_the_module_table():
    doc = limits.__doc__ or ""
    for name in limits.RANGES:
        assert f"    {name} " in doc or f"    {name.split('_')[0]} " in doc, name


def test_the_schema_states_the_bounds():
    from llmsweep.spec import json_schema

    schema = json_schema()["$defs"]
    assert schema["CostSpec"]["properties"]["pue"]["maximum"] == 5
    tp = schema["GridSpec"]["properties"]["tp"]
    assert tp["items"]["maximum"] == 1024


@pytest.mark.parametrize(
    "args",
    [
        ["--tp", "9223372036854775807"],
        ["--pp", "2000"],
        ["--batch", "100000000000"],
        ["--input-tokens", "99999999999"],
        ["--output-tokens", "9223372036854775807"],
    ],
)
def test_estimate_options_out_of_range_are_usage_errors(args):
    r = CliRunner().invoke(main, ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", *args])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "Invalid value for" in r.output


def test_estimate_json_is_strict_json():
    import json

    r = CliRunner().invoke(main, ["estimate", "--gpu", "m2-ultra", "--model", "llama-3.1-8b", "--format", "json"])
    assert r.exit_code == 0
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))


def test_check_rejects_non_numbers_and_non_finite():
    assert limits.check("pue", 1.3) is None
    assert limits.check("pue", float("nan")) == (
        "must be a finite number at least 1 and at most 5 (ratio), got nan "
        "(NaN and infinity are not numbers llmsweep can use)"
    )
    assert limits.check("tokens", True) == ("must be an integer at least 1 and at most 10,000,000 (tokens), got True")
    assert limits.check("tokens", 1.5) is not None
    assert limits.check("reserve_fraction", 1.0) is not None
