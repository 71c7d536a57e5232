"""Hostile corpus, round 3, class 4: terminal escapes in anything llmsweep prints.

Names and keys from a sweep file, a manifest, a measurements file or the command line can hold
escape sequences (OSC 52 writes the clipboard, CSI moves the cursor, a newline fakes a line, a
bidi override reorders one). Every message and note llmsweep prints shows them as '?', for every
command that prints input data. (report.md's links: test_hostile_outputs.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmsweep.errors import printable

from .hostile_world import CONTROL, World, assert_ran, assert_refused, first_run, make_world

OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # "evil" into the clipboard
CSI = "\x1b[2J\x1b[31m"  # clear the screen, then red
FAKE_LINE = "x\nError: none, all is well"
BIDI = "gpu\u202eexe.txt"
C1 = "a\x9b31mb"
ESCAPES = {"osc52": OSC52, "csi": CSI, "newline": FAKE_LINE, "bidi": BIDI, "c1": C1}


def yaml_text(value: str) -> str:
    return json.dumps(value)  # a JSON string is a YAML double-quoted scalar, escapes included


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return first_run(tmp_path_factory.mktemp("terminal"), "parquet")


@pytest.fixture
def world(tmp_path, template) -> World:
    return make_world(tmp_path, template)


def write_sweep(world: World, extra: str, gpu: str = "h100-sxm") -> Path:
    path = world.root / "evil.yaml"
    path.write_text(f"name: w\ngrid: {{gpu: [{gpu}], model: [llama-3.1-8b]}}\n{extra}")
    return path


# a problem whose key path holds the escape (pydantic and the resolver name keys as written)
@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", list(ESCAPES))
def test_escapes_in_keys_of_a_refused_sweep(world, command, name):
    key = ESCAPES[name]
    sweep = write_sweep(world, f"gpus:\n  {yaml_text(key)}: {{memory_gb: 80, memory_bandwidth_gbps: 3000}}\n")
    args = [command, sweep] + (["-o", world.out, "-q"] if command == "run" else [])
    r = assert_refused(world, args, f"gpus.{printable(key)}")
    assert f"{sweep}:" in r.output
    assert len(r.lines) == 2  # the head and one problem: a newline in the key made no line of its own


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", ["osc52", "csi", "newline"])
def test_escapes_in_notes_of_a_sweep_that_runs(world, command, name):
    gid = ESCAPES[name]
    gpu = "{memory_gb: 80, memory_bandwidth_gbps: 3000, dense_tflops: {bf16: 900}}"
    sweep = write_sweep(world, f"gpus:\n  {yaml_text(gid)}: {gpu}\n", gpu=yaml_text(gid))
    args = [command, sweep] + (["-o", world.out, "-q", "--format", "csv"] if command == "run" else [])
    r = assert_ran(world, args, ("out/w",))
    assert f"note: gpus.{printable(gid)}: no `family`" in r.output


def test_escapes_in_an_output_path(world):
    out = world.root / f"out{CSI}"
    r = assert_ran(world, ["run", world.root / "sweep.yaml", "-o", out, "-q", "--format", "csv"], (f"out{CSI}",))
    assert printable(str(out / "w" / "estimates.csv")) in r.lines


def test_escapes_in_a_manifest_that_report_refuses(world):
    manifest = world.results / "manifest.json"
    data = json.loads(manifest.read_text())
    data["catalog"]["gpus"][OSC52] = "not an object"
    manifest.write_text(json.dumps(data))
    assert_refused(world, ["report", world.results / "estimates.parquet"], f"catalog.gpus.{printable(OSC52)}")


def test_escapes_in_measurements(world):
    header = "id,source,gpu,tp,pp,model,weight_precision,kv_precision,batch,input_len,output_len,metric,value,unit\n"
    row = "{},{},H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s\n"
    path = world.root / "m.csv"
    path.write_text(header + row.format(CSI, OSC52) + row.format(CSI, "b"))
    r = assert_ran(world, ["calibrate", path, "-o", world.out / "cal"], ("out/cal",))
    assert "more than once" in r.output  # the repeated id, noted, without its escapes


def test_escapes_in_an_estimate_config_path(world):
    from llmsweep.catalog import load_catalog

    folder = world.root / f"m{CSI}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(load_catalog().model("meta-llama/Llama-3.1-8B").config))
    r = assert_ran(world, ["estimate", "--gpu", "h100-sxm", "--model", folder / "config.json"], ())
    assert "m?[2J?[31m" in r.output


@pytest.mark.parametrize("command", ["gpus", "models", "precisions"])
def test_escapes_in_a_catalog_lookup(world, command):
    assert_refused(world, [command, OSC52 + "x"], "unknown")


def test_printable():
    assert printable("a\x1b[31mb\x07c\nd\x9be\u202ef") == "a?[31mb?c?d?e?f"
    assert printable("a\nb", keep_lines=True) == "a\nb"
    assert not CONTROL.search(printable("".join(map(chr, range(0x20))) + "\x7f\x85\u2066"))


CORPUS = [f"{c}/{n}" for c in ("validate", "run") for n in ESCAPES]
CORPUS += [f"notes {c}/{n}" for c in ("validate", "run") for n in ("osc52", "csi", "newline")]
CORPUS += ["output path", "manifest", "measurements", "estimate config", "gpus", "models", "precisions"]
