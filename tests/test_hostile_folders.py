"""Hostile corpus, round 3, class 1: folders that are partly the user's (llmsweep/outfolder.py).

A folder is replaced only when everything in it is what the same kind of command wrote (its
manifest lists every file with its SHA-256); inputs never lie inside it; `report` replaces only its
own unchanged reports; derived folder names follow the sweep-name rules; temporary folders of
another PID namespace are not taken for dead ones; a failed run leaves no -o chain behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmsweep import outfolder

from .hostile_world import SWEEP, World, assert_ran, assert_refused, first_run, make_world, snapshot

MEASURED = (
    "id,source,gpu,tp,pp,model,weight_precision,kv_precision,batch,input_len,output_len,metric,value,unit\n"
    "ok,me,H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s\n"
)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return first_run(tmp_path_factory.mktemp("folders"))


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> Path:
    """out/w/ with report.md and its charts (what `report` re-renders)."""
    return first_run(tmp_path_factory.mktemp("reported"), "parquet,md")


@pytest.fixture
def world(tmp_path, template) -> World:
    return make_world(tmp_path, template)


def rerun(world: World, *extra) -> list:
    return ["run", world.root / "sweep.yaml", "-o", world.out, "-q", "--format", "csv,parquet", *extra]


def calibrate_folder(world: World) -> Path:
    (world.root / "m.csv").write_text(MEASURED)
    r = world.invoke("calibrate", world.root / "m.csv", "-o", world.out / "cal")
    assert r.exit_code == 0, r.output
    return world.out / "cal"


def add(path: Path, text: str = "mine") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# -- run: the folder holds something llmsweep did not write --------------------------------------------------
RUN_CASES = {
    "user notes": (lambda w: add(w.results / "NOTES.md"), "holds NOTES.md, which llmsweep did not write"),
    "a git folder": (
        lambda w: (add(w.results / ".git" / "HEAD", "ref: refs/heads/main"), add(w.results / ".git" / "config")),
        "holds .git, which llmsweep did not write",  # the folder once, not everything in it
    ),
    "user folder of configs": (
        lambda w: add(w.results / "configs" / "m.json", "{}"),
        "holds configs, which llmsweep did not write",
    ),
    "a link the user added": (
        lambda w: (w.results / "latest").symlink_to(w.root / "sweep.yaml"),
        "holds latest, which llmsweep did not write",
    ),
    "an edited estimates.csv": (
        lambda w: add(w.results / "estimates.csv", "gpu\nmine\n"),
        "estimates.csv changed since llmsweep wrote it",
    ),
    "a copied manifest among user files": (
        lambda w: (
            shutil.rmtree(w.results),
            add(w.results / "thesis.tex"),
            shutil.copy(w.root.parent / "manifest.json", w.results / "manifest.json"),
        ),
        "holds thesis.tex, which llmsweep did not write",
    ),
    "a copied manifest over a user's own estimates.csv": (
        lambda w: (
            shutil.rmtree(w.results),
            add(w.results / "estimates.csv", "my own table\n"),
            shutil.copy(w.root.parent / "manifest.json", w.results / "manifest.json"),
        ),
        "estimates.csv changed since llmsweep wrote it",
    ),
    "a manifest without a file list": (
        lambda w: (w.results / "manifest.json").write_text(json.dumps({"llmsweep_version": "0.1.0"})),
        "its manifest.json lists no files",
    ),
    "the sweep file kept in the folder": (
        lambda w: shutil.move(w.root / "sweep.yaml", w.results / "sweep.yaml"),
        "is inside",
    ),
}


@pytest.mark.parametrize("case", list(RUN_CASES))
def test_run_refuses_a_folder_that_is_partly_the_users(world, case):
    prepare, message = RUN_CASES[case]
    shutil.copy(world.results / "manifest.json", world.root.parent / "manifest.json")
    prepare(world)
    sweep = world.results / "sweep.yaml" if case == "the sweep file kept in the folder" else world.root / "sweep.yaml"
    args = ["run", sweep, "-o", world.out, "-q", "--format", "csv,parquet"]
    r = assert_refused(world, args, message)
    assert str(world.results) in r.output  # names the folder
    assert sorted(p.name for p in world.out.iterdir()) == ["w"]  # no temporary folder left


@pytest.mark.parametrize("role", ["config", "profile", "template-dir"])
def test_run_refuses_inputs_inside_the_folder_it_replaces(world, role):
    extra: list = []
    sweep = world.root / "sweep.yaml"
    if role == "config":
        from llmsweep.catalog import load_catalog

        add(world.results / "cfg" / "config.json", json.dumps(load_catalog().model("meta-llama/Llama-3.1-8B").config))
        sweep.write_text(
            SWEEP.replace("llama-3.1-8b", "mine") + f"models:\n  mine: {{config: '{world.results}/cfg'}}\n"
        )
        inside = world.results / "cfg"
    elif role == "profile":
        import yaml

        from llmsweep.catalog import load_catalog

        inside = world.results / "profile.yaml"
        inside.write_text(yaml.safe_dump(load_catalog().profile("default").model_dump()))
        extra = ["--profile", inside]
    else:
        inside = world.results / "templates"
        add(inside / "report.md.j2", "# {{ title }}\n")
        extra = ["--template-dir", inside]
    assert_refused(world, [*rerun(world), *extra], f"is inside {world.results}, the folder this command replaces")


def test_a_rerun_replaces_what_llmsweep_wrote_and_lists_it(world):
    """The control: no user file, the folder is replaced; the manifest names every file with its hash."""
    assert_ran(world, rerun(world), ("out/w",))
    manifest = json.loads((world.results / "manifest.json").read_text())
    assert manifest["command"] == "run"
    files = {str(p.relative_to(world.results)) for p in world.results.rglob("*") if p.is_file()}
    assert set(manifest["file_sha256"]) == files - {"manifest.json"}
    for rel, digest in manifest["file_sha256"].items():
        assert outfolder.file_sha256(world.results / rel) == digest


def test_a_user_file_added_after_a_run_survives_the_rerun(world):
    """The promise the issue asked for: the re-run refuses and the file is still there, byte for byte."""
    add(world.results / "NOTES.md", "decision: h100 (signed off)\n")
    r = world.invoke(*rerun(world))
    assert r.exit_code == 1 and "NOTES.md" in r.output
    assert (world.results / "NOTES.md").read_text() == "decision: h100 (signed off)\n"
    (world.results / "NOTES.md").unlink()  # moved away: the run goes ahead
    assert world.invoke(*rerun(world)).exit_code == 0


# -- each command replaces only its own kind -----------------------------------------------------------------
def test_calibrate_does_not_replace_a_run_folder(world):
    (world.root / "m.csv").write_text(MEASURED)
    assert_refused(
        world,
        ["calibrate", world.root / "m.csv", "-o", world.results],
        "holds the results of `llmsweep run`, which `llmsweep calibrate` does not replace",
    )


def test_run_does_not_replace_a_calibration_folder(world):
    cal = calibrate_folder(world)
    (world.root / "sweep.yaml").write_text(SWEEP.replace("name: w", "name: cal"))
    assert_refused(world, rerun(world), f"{cal}: holds the results of `llmsweep calibrate`")


def test_calibrate_refuses_a_calibration_folder_with_a_user_file(world):
    cal = calibrate_folder(world)
    add(cal / "my-analysis.ipynb", "{}")
    assert_refused(world, ["calibrate", world.root / "m.csv", "-o", cal], "holds my-analysis.ipynb")


def test_calibrate_refuses_its_input_inside_the_folder(world):
    cal = calibrate_folder(world)
    add(cal / "m.csv", MEASURED)
    assert_refused(world, ["calibrate", cal / "m.csv", "-o", cal], f"{cal / 'm.csv'}: is inside {cal}")


# -- report: only its own reports ----------------------------------------------------------------------------
@pytest.fixture
def report_world(tmp_path, reported) -> World:
    return make_world(tmp_path, reported)


def report_args(world: World, *extra) -> list:
    return ["report", world.results / "estimates.parquet", "--format", "md", *extra]


REPORT_CASES = {
    "a report.md someone else wrote": (lambda w: add(w.results / "report.md", "# my own report\n"), "report.md was"),
    "an unlisted report.md": (
        lambda w: (
            (w.results / "report.md").rename(w.results / "kept.md"),
            add(w.results / "report.md", "# hand-written\n"),
        ),
        "report.md was not written by llmsweep",
    ),
    "a chart someone edited": (
        lambda w: add(w.results / "charts" / "memory.svg", "<svg>mine</svg>"),
        "charts/memory.svg was not written by llmsweep (or changed since)",
    ),
    "charts as a link": (
        lambda w: (shutil.rmtree(w.results / "charts"), (w.results / "charts").symlink_to(w.root)),
        "charts: is not a folder llmsweep wrote",
    ),
}


@pytest.mark.parametrize("case", list(REPORT_CASES))
def test_report_replaces_only_its_own_unchanged_reports(report_world, case):
    prepare, message = REPORT_CASES[case]
    prepare(report_world)
    assert_refused(report_world, report_args(report_world), message)


def test_report_keeps_user_files_and_lists_what_it_wrote(report_world):
    w = report_world
    add(w.results / "NOTES.md", "keep me")
    add(w.results / "charts" / "mine.svg", "<svg/>")
    before = snapshot(w.results)
    assert_ran(w, report_args(w), ("out/w/report.md", "out/w/charts/", "out/w/manifest.json"))
    assert (w.results / "NOTES.md").read_text() == "keep me"
    assert (w.results / "charts" / "mine.svg").read_text() == "<svg/>"
    assert snapshot(w.results)["estimates.parquet"] == before["estimates.parquet"]
    manifest = json.loads((w.results / "manifest.json").read_text())
    assert "NOTES.md" not in manifest["file_sha256"] and "charts/mine.svg" not in manifest["file_sha256"]
    assert manifest["file_sha256"]["report.md"] == outfolder.file_sha256(w.results / "report.md")
    # and a run refuses the folder now (it holds the user's files), naming them
    assert_refused(w, rerun(w), "holds NOTES.md, charts/mine.svg")


# -- derived names, temporary folders, the -o chain --------------------------------------------------------
@pytest.mark.parametrize(
    ("file", "folder"),
    [("..csv", None), ("...csv", None), (".hidden.csv", "hidden"), ("My Bench (v2).csv", "my-bench-v2")],
)
def test_calibrate_default_folder_names_follow_the_sweep_name_rules(world, monkeypatch, file, folder):
    monkeypatch.chdir(world.root)
    (world.root / file).write_text(MEASURED)
    if folder is None:
        assert_refused(world, ["calibrate", file], f"{file}: cannot name the output folder after this file")
        assert not (world.out / "calibration").exists()
    else:
        assert_ran(world, ["calibrate", file], (f"out/calibration/{folder}", "out/calibration"))
        assert (world.out / "calibration" / folder / "comparison.csv").is_file()


def test_temporary_folders_of_another_namespace_are_not_taken_for_dead(world):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    other = world.out / f".w.partial-{gone.pid}@{'f' * 12}-abc"  # another container's, same volume
    legacy = world.out / f".w.partial-{gone.pid}-abc"  # no namespace: not ours to judge
    for p in (other, legacy):
        add(p / "estimates.csv", "being written")
    assert_ran(world, rerun(world), ("out/w",))
    assert (other / "estimates.csv").read_text() == "being written"
    assert (legacy / "estimates.csv").read_text() == "being written"


def test_a_failed_run_removes_the_folders_it_made_for_o(world):
    deep = world.root / "a" / "b" / "c"
    (world.root / "sweep.yaml").write_text(SWEEP + "report: {formats: [csv]}\n")
    templates = world.root / "t"
    add(templates / "report.md.j2", "{{ 1 / 0 }}")
    args = ["run", world.root / "sweep.yaml", "-o", deep, "-q", "--format", "csv,md", "--template-dir", templates]
    assert_refused(world, args, "the template raised ZeroDivisionError")
    assert not (world.root / "a").exists()


def test_host_id_names_this_namespace():
    assert len(outfolder.host_id()) == 12 and outfolder.host_id() == outfolder.host_id()
    if os.path.exists("/proc/self/ns/pid"):
        child = subprocess.run(
            [sys.executable, "-c", "from llmsweep.outfolder import host_id; print(host_id())"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert child.stdout.strip() == outfolder.host_id()  # same machine, same namespace


CASES = [*RUN_CASES, *REPORT_CASES, "config", "profile", "template-dir", "..csv", "...csv", ".hidden.csv"]
CASES += ["My Bench.csv", "control", "user file survives", "calibrate over run", "run over calibrate"]
CASES += ["calibration user file", "calibrate input inside", "report keeps user files", "other namespace", "-o chain"]
