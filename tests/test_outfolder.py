"""The output folder guard: unsafe names, folders llmsweep did not write, bad -o paths, stale
temporary folders, signals at random points and concurrent runs (llmsweep/outfolder.py)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from llmsweep import outfolder
from llmsweep.cli import main
from llmsweep.outfolder import OutputFolderError, atomic_folder, check_name, clean_stale

from .conftest import ROOT

EXAMPLE = ROOT / "sweeps" / "example.yaml"


def run_cli(*args: str):
    return CliRunner().invoke(main, ["run", "-q", *args])


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def sweep_named(tmp_path: Path, name: str, variant: str = "") -> Path:
    """The example sweep under another name; `variant` (a comment) changes its manifest."""
    text = EXAMPLE.read_text().replace("name: example", f"name: {json.dumps(name)}", 1)
    path = tmp_path / f"sweep-{len(list(tmp_path.glob('sweep-*')))}.yaml"
    path.write_text(f"{text}# variant {variant}\n")
    return path


def dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- names and folders that must not be replaced ---------------------------------------------------


@pytest.mark.parametrize("name", [".", "..", ".git", ".hidden", "a/b", "../x", "", "a\\b", "x\0"])
def test_unsafe_names_are_refused(name):
    with pytest.raises(OutputFolderError, match="not a safe output folder name"):
        check_name(name)


@pytest.mark.parametrize("name", [".", "..", ".git"])
def test_run_refuses_dot_names_and_writes_nothing(tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = run_cli(str(sweep_named(tmp_path, name)), "-o", str(out))
    assert r.exit_code == 1 and "is not a safe folder name" in r.output and "Traceback" not in r.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_a_folder_llmsweep_did_not_write_is_never_replaced(tmp_path):
    mine = tmp_path / "example"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    (mine / "manifest.json").write_text('{"mine": true}')  # a manifest, but not llmsweep's
    before = digest(mine)
    r = run_cli(str(EXAMPLE), "-o", str(tmp_path))
    assert r.exit_code == 1, r.output
    assert f"Error: {mine}: exists and was not written by llmsweep (no llmsweep manifest.json)" in r.output
    assert digest(mine) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example"]  # no temporary folder left


def test_an_empty_folder_and_an_earlier_result_are_replaced(tmp_path):
    (tmp_path / "example").mkdir()
    assert run_cli(str(EXAMPLE), "-o", str(tmp_path), "--format", "csv").exit_code == 0
    first = digest(tmp_path / "example")
    assert run_cli(str(EXAMPLE), "-o", str(tmp_path), "--format", "csv").exit_code == 0
    assert digest(tmp_path / "example") == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example"]


@pytest.mark.parametrize(
    "out, message",
    [
        ("/dev/null", "/dev/null: is not a folder; give -o a folder"),
        ("/proc", "/proc: cannot create the output folder here"),
        ("/sys/x", "/sys/x: cannot create the output folder here"),
        ("FILE", "FILE: is not a folder; give -o a folder"),
        ("FILE/sub", "FILE/sub: cannot create the output folder here"),
    ],
)
def test_bad_output_locations(tmp_path, out, message):
    file = tmp_path / "file.txt"
    file.write_text("x")
    out = out.replace("FILE", str(file))
    message = message.replace("FILE", str(file))
    r = run_cli(str(EXAMPLE), "-o", out)
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output, r.output
    assert file.read_text() == "x"


def test_target_that_is_a_file_or_a_link(tmp_path):
    (tmp_path / "example").write_text("a file named like the sweep")
    r = run_cli(str(EXAMPLE), "-o", str(tmp_path))
    assert r.exit_code == 1 and "example: exists and is not a folder" in r.output
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "example").symlink_to(other)
    r = run_cli(str(EXAMPLE), "-o", str(tmp_path / "b"))
    assert r.exit_code == 1 and "example: is a symbolic link" in r.output
    assert not any(other.iterdir())


# -- stale temporary folders ---------------------------------------------------------------------


def test_stale_temporary_folders_of_dead_processes_are_removed(tmp_path):
    gone, here = dead_pid(), outfolder.host_id()
    for name in (
        f".example.partial-{gone}@{here}-abc",
        f".example.old-{gone}@{here}-abc",
        f".other.partial-{gone}@{here}-x",
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "big.bin").write_bytes(b"0" * 1000)
    live = tmp_path / f".example.partial-{os.getppid()}@{here}-live"  # a running process's: never touched
    live.mkdir()
    # another container or machine sharing the folder: its process ids mean nothing here
    elsewhere = tmp_path / f".example.partial-{gone}@{'0' * 12}-abc"
    elsewhere.mkdir()
    assert run_cli(str(EXAMPLE), "-o", str(tmp_path), "--format", "csv").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live.name, elsewhere.name, f".other.partial-{gone}@{here}-x", "example"]
    )


def test_previous_results_stranded_by_a_kill_between_renames_are_put_back(tmp_path):
    """Where no atomic exchange exists the swap is two renames; a SIGKILL between them leaves the
    old results in `.NAME.old-PID-*` and no NAME: the next run restores them, never deletes them."""
    gone = dead_pid()
    old = tmp_path / f".example.old-{gone}@{outfolder.host_id()}-abc"
    old.mkdir()
    (old / "manifest.json").write_text('{"llmsweep_version": "0.1.0"}')
    clean_stale(tmp_path, "example")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example"]
    assert outfolder.written_by_llmsweep(tmp_path / "example")


def test_two_renames_when_the_exchange_is_unsupported(tmp_path, monkeypatch):
    monkeypatch.setattr(outfolder, "_exchange", lambda a, b: False)
    for content in ("old", "new"):
        with atomic_folder(tmp_path / "r") as tmp:
            (tmp / "manifest.json").write_text(json.dumps({"llmsweep_version": content}))
    assert json.loads((tmp_path / "r" / "manifest.json").read_text()) == {
        "llmsweep_version": "new",
        "command": "run",
        "file_sha256": {},
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_exchange_swaps_in_one_step(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    swapped = outfolder._exchange(a, b)
    if not swapped and sys.platform != "linux":
        pytest.skip("renameat2(RENAME_EXCHANGE) is Linux only (elsewhere the two-rename path, tested above)")
    assert swapped, "Linux (glibc >= 2.28, tmpfs/ext4/xfs/btrfs) exchanges two folders in one step"
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"


# -- signals and concurrency (real processes) ----------------------------------------------------


def _start(sweep: Path, out: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "llmsweep", "run", "-q", str(sweep), "-o", str(out), "--format", "csv,parquet,md"]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _complete(folder: Path) -> bool:
    return all((folder / f).is_file() for f in _manifest(folder)["files"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_at_random_points_leaves_old_or_new_and_no_temporary_folder(tmp_path, sig):
    out = tmp_path / "out"
    old_sweep, new_sweep = sweep_named(tmp_path, "example", "old"), sweep_named(tmp_path, "example", "new")
    started = time.monotonic()
    assert _start(old_sweep, out).wait(120) == 0
    duration = time.monotonic() - started
    old = digest(out / "example")
    rng = random.Random(int(sig))
    outcomes = set()
    for fraction in sorted(rng.uniform(0.05, 1.2) for _ in range(4)):
        p = _start(new_sweep, out)
        time.sleep(duration * fraction)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        assert "Traceback" not in err, err
        now = digest(out / "example")
        assert now == old or (_complete(out / "example") and now != old), err
        outcomes.add("old" if now == old else "new")
        assert sorted(p.name for p in out.iterdir()) == ["example"], sorted(p.name for p in out.iterdir())
        if now != old:  # put the old results back for the next try
            assert _start(old_sweep, out).wait(120) == 0
            assert digest(out / "example") == old
    assert "old" in outcomes  # at least one signal landed mid-run


def test_two_concurrent_runs_of_one_sweep_both_end_cleanly(tmp_path):
    out = tmp_path / "out"
    a, b = sweep_named(tmp_path, "example", "a"), sweep_named(tmp_path, "example", "b")
    procs = [_start(a, out), _start(b, out)]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert sorted(p.name for p in out.iterdir()) == ["example"]
    assert _complete(out / "example")
    assert _manifest(out / "example")["sweep"]["content"].endswith(("# variant a\n", "# variant b\n"))
