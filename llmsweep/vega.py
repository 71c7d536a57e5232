"""The vega bundle (vega + vega-lite + vega-embed as one script) that report.html inlines, its cache,
and the one dependency behind both report charts: vl-convert's V8 engine.

Building the bundle takes a second or two, so it is cached per vl-convert version in
`$XDG_CACHE_HOME/llmsweep` (an absolute XDG_CACHE_HOME; else `~/.cache/llmsweep`). Whatever is in
that file runs in the browser of everyone who opens a report, so it is used only when it is
exactly what llmsweep wrote there: a regular file (never a FIFO or a device: opened without
blocking), owned by this user and writable by no one else, at most MAX_BUNDLE_BYTES, whose first
line states the SHA-256 and length of the rest and they match. Anything else (truncated, appended
to, replaced by a link to /dev/zero) is rebuilt and replaced. The check catches damage and stray
writes, not someone who can write as you: such a person can also change llmsweep itself.

Without a home folder (no HOME and no passwd entry for the uid) nothing is cached, and HOME is
set to /nonexistent so that libraries which look it up at import (altair) do not fail.

V8 reserves a large range of virtual addresses when it starts; under any `ulimit -v` it aborts
the whole process with no message. `require_v8` finds that out first, in a child process, so a
run says what to do before it computes anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
from functools import cache
from pathlib import Path

from llmsweep.errors import LlmsweepError

MAX_BUNDLE_BYTES = 16 * 2**20  # the bundle is about 0.9 MB
_HEADER = "// llmsweep vega bundle sha256={sha256} bytes={size}\n"
_PROBE = "import vl_convert as v; v.vegalite_to_svg({'mark': 'point', 'data': {'values': [{}]}})"


def ensure_home() -> None:
    """Give HOME a value when the home folder cannot be determined (no HOME, a uid without a
    passwd entry), so imports that call Path.home() do not fail. Nothing is written there."""
    try:
        Path.home()
    except (RuntimeError, KeyError):
        os.environ["HOME"] = "/nonexistent"


def cache_folder() -> Path | None:
    """Where the bundle is cached, or None when there is no home folder to cache it in."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # a relative XDG_CACHE_HOME is to be ignored (XDG base directory spec)
        return Path(xdg) / "llmsweep"
    home = os.environ.get("HOME", "")
    if home == "/nonexistent":
        return None
    try:
        return Path.home() / ".cache" / "llmsweep"
    except (RuntimeError, KeyError):
        return None


def cache_path() -> Path | None:
    import vl_convert as vlc

    folder = cache_folder()
    if folder is None:
        return None
    return folder / f"vega-bundle-{getattr(vlc, '__version__', 'unknown')}-{vlc.get_vega_embed_version()}.js"


def read_cached(path: Path) -> str | None:
    """The bundle cached at `path` if it is exactly what llmsweep wrote there, else None."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BUNDLE_BYTES + 200:
            return None
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
            return None  # someone else could have written it
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(MAX_BUNDLE_BYTES + 201)
    except OSError:
        return None
    finally:
        os.close(fd)
    head, sep, body = raw.partition(b"\n")
    if not sep:
        return None
    expected = _HEADER.format(sha256=hashlib.sha256(body).hexdigest(), size=len(body)).encode()
    if head + sep != expected:
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def write_cached(path: Path, bundle: str) -> None:
    """Write `bundle` with its checksum line, whole or not at all (a read-only home: no cache)."""
    from llmsweep.export import write_text_atomic

    body = bundle.encode("utf-8")
    header = _HEADER.format(sha256=hashlib.sha256(body).hexdigest(), size=len(body))
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_text_atomic(path, header + bundle)


def bundle_cached() -> bool:
    path = cache_path()
    return path is not None and read_cached(path) is not None


def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script, from vl-convert-python, cached (checked on
    every read, rebuilt when the check fails)."""
    import vl_convert as vlc

    path = cache_path()
    if path is not None:
        cached = read_cached(path)
        if cached is not None:
            return cached
    require_v8("report.html")
    bundle = vlc.javascript_bundle()
    if len(bundle.encode("utf-8")) > MAX_BUNDLE_BYTES:
        raise LlmsweepError(f"the vega bundle from vl-convert is larger than {MAX_BUNDLE_BYTES // 2**20} MiB")
    if path is not None:
        write_cached(path, bundle)
    return bundle


@cache
def _v8_problem() -> str | None:
    try:
        import resource
    except ImportError:  # not POSIX: no such limit
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        ok = False
    else:
        ok = probe.returncode == 0
    if ok:
        return None
    lift = "ulimit -S -v unlimited" if hard == resource.RLIM_INFINITY else "ulimit -v unlimited"
    return (
        f"draws its charts with vl-convert's V8 engine, which cannot start under this process's virtual memory "
        f"limit (ulimit -v {soft // 1024:,} KiB); run `{lift}` before llmsweep, or leave it out of --format"
    )


def require_v8(what: str) -> None:
    """Raise a LlmsweepError saying what to do when V8 cannot start here (`what` needs it)."""
    problem = _v8_problem()
    if problem:
        raise LlmsweepError(f"{what} {problem}")
