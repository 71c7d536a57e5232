"""The harness of the hostile corpus, round 3 (tests/test_hostile_{folders,files,terminal,environment,limits}.py).

A case runs one command in a "world": a temporary folder holding the inputs and the results of an
earlier run. It must end with the expected exit code and a message naming the file or field (on
one line: a SpecError's problems each on their own line), print no traceback and no control
character, never hang (a watchdog unblocks every FIFO of the world after TIMEOUT_S and fails the
case), leave the earlier results byte-identical and touch nothing outside the output folder
(`World.snapshot` records every entry of the world: type, bytes, link target).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

from llmsweep.cli import main

TIMEOUT_S = 20
SWEEP = "name: w\ngrid: {gpu: [h100-sxm], model: [llama-3.1-8b]}\ncosts: {h100-sxm: {rent: 2.0}}\n"
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every entry under `root` (links not followed): its type and content hash or link target."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if rel.startswith(skip):
                continue
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link " + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > 64 * 2**20:  # sparse "huge" files: their size stands for them
                    out[rel] = f"file of {st.st_size} bytes"
                else:
                    out[rel] = "file " + hashlib.sha256(p.read_bytes()).hexdigest()
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "folder"
            else:
                out[rel] = f"special {stat.S_IFMT(st.st_mode)}"
    return out


def _unblock(root: Path) -> None:
    """Open the write end of every FIFO under `root` and close it: a reader blocked there sees EOF."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if stat.S_ISFIFO(p.lstat().st_mode):
                with contextlib.suppress(OSError):
                    os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))


@dataclass
class Outcome:
    exit_code: int
    output: str
    hung: bool
    exception: BaseException | None = None

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()


@dataclass
class World:
    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def results(self) -> Path:
        return self.out / "w"

    def invoke(self, *args: object, timeout: float = TIMEOUT_S) -> Outcome:
        """The command, in this process, with a watchdog against hangs."""
        fired = threading.Event()

        def watchdog() -> None:
            fired.set()
            _unblock(self.root)

        timer = threading.Timer(timeout, watchdog)
        timer.start()
        try:
            r = CliRunner().invoke(main, [str(a) for a in args], env=self.env or None)
        finally:
            timer.cancel()
        return Outcome(r.exit_code, r.output, fired.is_set(), r.exception)


def make_world(tmp_path: Path, template: Path | None = None) -> World:
    """A world with sweep.yaml and, copied from `template` (a module fixture), out/w/ as a run left it."""
    world = World(tmp_path / "world")
    world.root.mkdir()
    (world.root / "sweep.yaml").write_text(SWEEP)
    (world.root / "cache").mkdir()
    world.env = {"XDG_CACHE_HOME": str(world.root / "cache")}
    if template is not None:
        shutil.copytree(template, world.results, symlinks=True)
    return world


def first_run(tmp_path: Path, formats: str = "csv,parquet") -> Path:
    """out/w/ of a run of SWEEP (for module fixtures)."""
    world = make_world(tmp_path)
    world.env = {}
    r = world.invoke("run", world.root / "sweep.yaml", "-o", world.out, "--format", formats, "-q", timeout=120)
    assert r.exit_code == 0, r.output
    return world.results


def assert_refused(
    world: World, args: list, message: str, code: int = 1, skip: tuple[str, ...] = ("cache",)
) -> Outcome:
    """The command fails with `code` and `message` on one line, no traceback, no control character,
    no hang, and the world is exactly as it was (the vega cache aside, when `skip` says so)."""
    before = snapshot(world.root, skip)
    r = world.invoke(*args)
    assert not r.hung, f"hung: {args}"
    assert r.exit_code == code, (r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output and (r.exception is None or isinstance(r.exception, SystemExit)), r.output
    assert not CONTROL.search(r.output), repr(r.output)
    assert any(message in line for line in r.lines), r.output
    assert snapshot(world.root, skip) == before, "the world changed"
    return r


def assert_ran(world: World, args: list, changes: tuple[str, ...], skip: tuple[str, ...] = ("cache",)) -> Outcome:
    """The command succeeds, prints no control character and changes nothing outside `changes`
    (paths relative to the world)."""
    before = snapshot(world.root, skip)
    r = world.invoke(*args)
    assert not r.hung, f"hung: {args}"
    assert r.exit_code == 0, (r.output, r.exception)
    assert not CONTROL.search(r.output), repr(r.output)
    after = snapshot(world.root, skip)
    touched = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    # the folders that hold the changes (a new out/ for out/w) are part of them
    outside = sorted(
        k for k in touched if not k.startswith(changes) and not any(c.startswith(k + "/") for c in changes)
    )
    assert not outside, outside
    return r
