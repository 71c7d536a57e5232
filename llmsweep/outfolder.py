"""The output folder guard: results appear whole or not at all, and nothing llmsweep did not
write is ever replaced.

`atomic_folder(target)` yields a private temporary folder beside `target`; when the block ends
normally the temporary folder takes `target`'s place in one step, otherwise it is removed and
`target` keeps its previous contents. The rules:

- `target` must be a single safe name under its parent (no `.`/`..`, no leading dot), and if it
  exists it must be a folder that llmsweep wrote (its manifest.json names llmsweep), or empty.
- The swap holds a lock on the parent folder so concurrent runs of one sweep take turns: the
  last to finish wins and neither fails. On Linux the swap is one `renameat2(RENAME_EXCHANGE)`, so
  even a kill at any instant leaves either the old or the new folder at `target`; elsewhere it is
  two renames. SIGINT/SIGTERM/SIGHUP are held while folders are made, swapped and removed.
- Temporary folders carry their process id (`.NAME.partial-PID-*`, `.NAME.old-PID-*`); a run
  removes those whose process is gone (a killed run's leftovers) and never touches a live one's.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from llmsweep.errors import LlmsweepError

MANIFEST = "manifest.json"
SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?:partial|old)-(?P<pid>\d+)-[^/]*$")
_SWAP_SIGNALS = {signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}


class OutputFolderError(LlmsweepError):
    """An output location that llmsweep may not or cannot write."""


def check_name(name: str) -> None:
    """An output folder is one path component that does not start with a dot (so never '.',
    '..' or '.git'). Sweep names are stricter still (SAFE_NAME, checked in spec.py)."""
    if not name or name.startswith(".") or any(ch in name for ch in "/\\\0"):
        raise OutputFolderError(
            f"{name!r} is not a safe output folder name: one folder name, not starting with '.' (e.g. chatbot-2027q1)"
        )


def written_by_llmsweep(folder: Path) -> bool:
    """True when `folder` holds a manifest.json that llmsweep wrote (it names llmsweep's version)."""
    try:
        with open(folder / MANIFEST, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "llmsweep_version" in data


def check_target(target: Path) -> None:
    """Refuse a target that llmsweep must not replace: a file, a link, or a folder with contents
    that llmsweep did not write. A missing or empty folder is fine."""
    check_name(target.name)
    parent = target.parent
    if parent.exists() and not parent.is_dir():
        raise OutputFolderError(f"{parent}: is not a folder; give -o a folder (it is created if missing)")
    if target.is_symlink():
        raise OutputFolderError(f"{target}: is a symbolic link; llmsweep writes only real folders it created")
    if not target.exists():
        return
    if not target.is_dir():
        raise OutputFolderError(f"{target}: exists and is not a folder; move it away or choose another -o")
    if written_by_llmsweep(target):
        return
    try:
        empty = not any(target.iterdir())
    except OSError as e:
        raise OutputFolderError(f"{target}: cannot read the folder: {e.strerror}") from None
    if not empty:
        raise OutputFolderError(
            f"{target}: exists and was not written by llmsweep (no llmsweep {MANIFEST}); it is left untouched. "
            "Move it away, or give the sweep another `name:` or another -o"
        )


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def clean_stale(parent: Path, name: str) -> list[Path]:
    """Remove `.NAME.partial-PID-*` / `.NAME.old-PID-*` folders whose process no longer runs. If a
    process died between the two renames of a swap (only where no atomic exchange exists) the
    previous results are in its `.old-` folder and NAME is missing: they are put back instead."""
    try:
        stale = [
            p
            for p in parent.iterdir()
            if (m := _TEMP.match(p.name))
            and m["name"] == name
            and p.is_dir()
            and not p.is_symlink()
            and not _pid_alive(int(m["pid"]))
        ]
    except OSError:
        return []
    target = parent / name
    olds = sorted((p for p in stale if ".old-" in p.name), key=lambda p: p.stat().st_mtime)
    if olds and not target.exists() and written_by_llmsweep(olds[-1]):
        os.rename(olds[-1], target)
        stale.remove(olds[-1])
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)
    return stale


@contextlib.contextmanager
def _lock(parent: Path) -> Iterator[None]:
    """An exclusive lock on the parent folder itself (no lock file left behind), held only while
    temporary folders are cleaned and a result is swapped in: concurrent runs take turns there."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): the swap itself is still all-or-nothing
        yield
        return
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE). False where unsupported."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP):
        return False  # the file system or kernel cannot exchange: fall back to two renames
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the block ends (they are delivered then), so a step that
    must not be cut in half is not."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SWAP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _swap_in(tmp: Path, target: Path) -> Path | None:
    """Put `tmp` at `target`; return the folder now holding the previous contents (to remove).
    Called with signals blocked."""
    if not target.exists():
        os.rename(tmp, target)
        return None
    if _exchange(tmp, target):
        return tmp  # tmp now holds the old results
    old = target.parent / f".{target.name}.old-{os.getpid()}-{tmp.name.rsplit('-', 1)[-1]}"
    os.rename(target, old)
    os.rename(tmp, target)
    return old


@contextlib.contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """Yield a temporary folder beside `target`; on success it replaces `target` whole, on any
    failure (or interrupt) it is removed and `target` keeps its previous contents. Raises
    OutputFolderError, before anything is written, when `target` may not be replaced."""
    target = Path(target)
    check_target(target)
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _lock(target.parent):
            clean_stale(target.parent, target.name)
        with _signals_blocked():  # a signal arrives once `tmp` is set, so the folder is ours to remove
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-{os.getpid()}-", dir=target.parent))
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the result should look like any folder
        yield tmp
        with _lock(target.parent), _signals_blocked():
            clean_stale(target.parent, target.name)
            check_target(target)  # again: another process may have put something there meanwhile
            old = _swap_in(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    except OSError as e:
        _remove(tmp)
        if tmp is None:
            raise OutputFolderError(f"{target.parent}: cannot create the output folder here: {e.strerror}") from None
        raise OutputFolderError(f"{e.filename or target}: cannot write the results: {e.strerror}") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(tmp: Path | None) -> None:
    if tmp is not None and tmp.is_dir():
        with _signals_blocked():
            shutil.rmtree(tmp, ignore_errors=True)
