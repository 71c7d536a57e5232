"""Hostile corpus, round 3, class 5: the environment (no home, a full disk, a virtual memory limit).

Each case runs llmsweep in a child process whose environment or limits are changed, with a
timeout, and checks the exit code, a one-line message and that nothing is left behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from llmsweep import pipeline

from .hostile_world import CONTROL, SWEEP, assert_refused, make_world, snapshot

posix = pytest.mark.skipif(sys.platform != "linux", reason="Linux only")


def child(args: list, cwd: Path, env: dict | None = None, limits: dict | None = None):
    """`python -m llmsweep ARGS` in a child process (its own limits, user and environment)."""

    def setup() -> None:
        import resource

        for name, value in (limits or {}).items():
            resource.setrlimit(getattr(resource, name), (value, value))

    base = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    return subprocess.run(
        [sys.executable, "-m", "llmsweep", *map(str, args)],
        cwd=cwd,
        env={**base, **(env or {})},
        preexec_fn=setup,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line_error(r, message: str) -> None:
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and not CONTROL.search(r.stderr), r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0], r.stderr


NO_PASSWD = (
    "import pwd, sys\n"
    "def missing(uid):\n"
    "    raise KeyError(f'getpwuid(): uid not found: {uid}')\n"
    "pwd.getpwuid = missing  # a uid without a passwd entry, as in many containers\n"
    "from llmsweep.cli import main\n"
    "sys.argv = ['llmsweep', *sys.argv[1:]]\n"
    "main()\n"
)


def test_no_home_and_no_passwd_entry(tmp_path):
    """altair looks the home folder up at import: llmsweep gives it one, caches nothing, and runs."""
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    args = [sys.executable, "-c", NO_PASSWD, "run", "sweep.yaml", "-q", "--format", "csv"]
    r = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "w" / "estimates.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "sweep.yaml"]  # no cache anywhere here


@posix
def test_a_full_disk_is_a_message_and_leaves_the_previous_results(tmp_path):
    """A file-size limit (ulimit -f) fails every write past it, as a full disk does: EFBIG, not a
    polars traceback or 'cannot write the results: None'."""
    world = make_world(tmp_path)
    assert child(["run", "sweep.yaml", "-q", "--format", "csv"], world.root).returncode == 0
    before = snapshot(world.root)
    r = child(["run", "sweep.yaml", "-q", "--format", "csv,parquet"], world.root, limits={"RLIMIT_FSIZE": 1024})
    assert_one_line_error(r, f"{Path('out') / 'w'}: cannot write the results: File too large (ulimit -f 1 KiB)")
    assert snapshot(world.root) == before  # the previous results, and no temporary folder


def test_no_space_left_inside_polars_is_worded(tmp_path, monkeypatch):
    def full(*_args, **_kwargs):
        raise pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")

    monkeypatch.setattr(pipeline, "write_parquet", full)
    world = make_world(tmp_path)
    args = ["run", world.root / "sweep.yaml", "-o", world.root / "new" / "out", "-q", "--format", "csv"]
    assert_refused(world, args, "cannot write the results: No space left on device: free some space")
    assert not (world.root / "new").exists()  # the -o folders it made are gone too


@posix
def test_a_virtual_memory_limit_is_found_before_anything_is_computed(tmp_path):
    """V8 (report.md's charts) aborts the process under any ulimit -v; llmsweep says so first."""
    world = make_world(tmp_path)
    limits = {"RLIMIT_AS": 8 * 2**30}
    r = child(["run", "sweep.yaml", "-q", "--format", "csv,md"], world.root, limits=limits)
    assert_one_line_error(r, "report.md draws its charts with vl-convert's V8 engine, which cannot start under")
    assert "ulimit -v 8,388,608 KiB" in r.stderr and "leave it out of --format" in r.stderr
    assert not (world.root / "out").exists()
    assert child(["run", "sweep.yaml", "-q", "--format", "csv"], world.root, limits=limits).returncode == 0


CORPUS = ["no home", "file size limit", "no space in polars", "ulimit -v"]
