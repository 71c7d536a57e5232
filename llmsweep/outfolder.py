"""The output folder guard: results appear whole or not at all, and nothing llmsweep did not
write is ever replaced.

`atomic_folder(target, kind, inputs)` yields a private temporary folder beside `target`; when the
block ends normally the temporary folder takes `target`'s place in one step, otherwise it is
removed and `target` keeps its previous contents. The rules:

- `target` must be a single safe name under its parent (no `.`/`..`, no leading dot).
- An existing `target` is replaced only when it is empty, or when everything in it is what one
  command of the same kind wrote there: its manifest.json names llmsweep and the command (`run`,
  `calibrate`), and lists every file with its SHA-256 (`file_sha256`, written by `seal` when the
  folder is made). A file or folder it does not list (a user's NOTES.md, a .git folder, the sweep
  file kept beside its results) or a listed file whose bytes changed stops the command with a
  message naming them; nothing is moved or removed. So a copied manifest.json makes no folder
  replaceable, and `run` never replaces a calibration folder, nor `calibrate` a run's.
- No input of the command (sweep file, config.json, profile, templates, measurements) may lie
  inside the folder it would replace.
- The swap holds a lock on the parent folder so concurrent runs of one sweep take turns: the
  last to finish wins and neither fails. On Linux the swap is one `renameat2(RENAME_EXCHANGE)`, so
  even a kill at any instant leaves either the old or the new folder at `target`; elsewhere it is
  two renames. SIGINT/SIGTERM/SIGHUP are held while folders are made, swapped and removed.
- Temporary folders carry their process id and the identity of its PID namespace and machine
  (`.NAME.partial-PID@HOST-*`, `.NAME.old-PID@HOST-*`); a run removes those of its own namespace
  whose process is gone (a killed run's leftovers) and never touches a live one's, nor one made in
  another container or machine sharing the folder (its process ids mean nothing here).
- Folders of the -o path that the command created are removed again when it fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path

from llmsweep.errors import LlmsweepError

MANIFEST = "manifest.json"
SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
KINDS = ("run", "calibrate")
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?:partial|old)-(?P<pid>\d+)@(?P<host>[0-9a-f]{12})-[^/]*$")
_SWAP_SIGNALS = {signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}
MAX_LISTED = 5  # names shown in one message
MAX_ENTRIES = 100_000  # entries of a folder looked at before refusing it


class OutputFolderError(LlmsweepError):
    """An output location that llmsweep may not or cannot write."""


def check_name(name: str) -> None:
    """An output folder is one path component that does not start with a dot (so never '.',
    '..' or '.git'). Sweep names are stricter still (SAFE_NAME, checked in spec.py)."""
    if not name or name.startswith(".") or any(ch in name for ch in "/\\\0"):
        raise OutputFolderError(
            f"{name!r} is not a safe output folder name: one folder name, not starting with '.' (e.g. chatbot-2027q1)"
        )


def folder_name(file: str | os.PathLike) -> str:
    """A folder name derived from an input file's name (`calibrate`'s default folder), held to the
    rules of sweep names: lowercase, runs of other characters become '-', no leading '.', '-' or
    '_' ('My Bench.csv' -> 'my-bench', '.hidden.csv' -> 'hidden'). A name with nothing left
    ('..csv', '.csv') is an error asking for -o."""
    stem = Path(file).stem
    name = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).lstrip("._-")[:100].rstrip("-")
    if not name or not SAFE_NAME.match(name):
        raise OutputFolderError(
            f"{file}: cannot name the output folder after this file ({stem!r} has no letter a-z or digit to "
            "start a folder name with); give the folder with -o"
        )
    return name


# -- what llmsweep wrote: the manifest's list of files and their hashes ------------------------------------
def _read_manifest(folder: Path) -> dict | None:
    from llmsweep.limits import MAX_MANIFEST_BYTES, UnreadableFile, read_regular_file
    from llmsweep.yamlfile import parse_json

    try:
        data = parse_json(read_regular_file(folder / MANIFEST, MAX_MANIFEST_BYTES, "a manifest.json"))
    except (OSError, ValueError, UnreadableFile):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("llmsweep_version"), str) else None


def written_by_llmsweep(folder: Path) -> bool:
    """True when `folder` holds a manifest.json that llmsweep wrote (it names llmsweep's version)."""
    return _read_manifest(folder) is not None


def manifest_kind(data: dict) -> str:
    """The command that wrote a manifest (run manifests before this field have none)."""
    kind = data.get("command", "run")
    return kind if isinstance(kind, str) else "?"


_hashes: dict[tuple, str] = {}  # (path, inode, size, mtime) -> sha256, so a file is hashed once per process


def file_sha256(path: Path) -> str:
    st = os.stat(path, follow_symlinks=False)
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _hashes:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(2**20):
                h.update(chunk)
        _hashes[key] = h.hexdigest()
    return _hashes[key]


def _entries(folder: Path) -> list[tuple[str, os.stat_result]]:
    """(relative path, lstat) of everything under `folder`, links not followed."""
    out: list[tuple[str, os.stat_result]] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(folder / rel if rel else folder) as it:
            for entry in it:
                path = f"{rel}/{entry.name}" if rel else entry.name
                st = entry.stat(follow_symlinks=False)
                out.append((path, st))
                if len(out) > MAX_ENTRIES:
                    raise OutputFolderError(f"{folder}: holds more than {MAX_ENTRIES:,} files; it is left untouched")
                if stat.S_ISDIR(st.st_mode):
                    stack.append(path)
    return sorted(out)


def listed_files(data: dict) -> dict[str, str | None]:
    """{relative path: sha256 or None} of the files a manifest says llmsweep wrote (manifests from
    before `file_sha256` list names only)."""
    hashes = data.get("file_sha256")
    if isinstance(hashes, dict):
        return {str(k): str(v) for k, v in hashes.items()}
    files = data.get("files")
    return {str(f): None for f in files} if isinstance(files, list) else {}


def foreign_entries(folder: Path, data: dict) -> tuple[list[str], list[str]]:
    """(entries llmsweep did not write, listed files whose bytes changed) of a folder whose
    manifest is `data`."""
    listed = listed_files(data)
    parents = {str(Path(p).parent) for p in listed if "/" in p}
    parents |= {str(q) for p in parents for q in Path(p).parents if str(q) != "."}
    foreign, changed = [], []
    for rel, st in _entries(folder):
        if rel == MANIFEST:
            continue
        if rel in parents and stat.S_ISDIR(st.st_mode):
            continue
        if rel not in listed or not stat.S_ISREG(st.st_mode):
            foreign.append(rel)
        elif listed[rel] is not None and file_sha256(folder / rel) != listed[rel]:
            changed.append(rel)
    # a foreign folder is named once, not with everything inside it
    tops = [r for r in foreign if not any(r.startswith(f"{o}/") for o in foreign if o != r)]
    return tops, changed


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED:,} more" if len(items) > MAX_LISTED else "")


def check_owned(target: Path, kind: str) -> None:
    """Refuse unless everything in the existing folder `target` is what `llmsweep KIND` wrote."""
    data = _read_manifest(target)
    if data is None:
        raise OutputFolderError(
            f"{target}: exists and was not written by llmsweep (no llmsweep {MANIFEST}); it is left untouched. "
            "Move it away, or "
            + ("give the sweep another `name:` or another -o" if kind == "run" else "choose another -o")
        )
    found = manifest_kind(data)
    if found != kind:
        raise OutputFolderError(
            f"{target}: holds the results of `llmsweep {found}`, which `llmsweep {kind}` does not replace; "
            "it is left untouched. Choose another -o"
        )
    if not isinstance(data.get("file_sha256"), dict) and not listed_files(data):
        raise OutputFolderError(
            f"{target}: its {MANIFEST} lists no files, so what llmsweep wrote there is not known; it is left "
            "untouched. Move it away, or choose another -o"
        )
    try:
        foreign, changed = foreign_entries(target, data)
    except OSError as e:
        raise OutputFolderError(f"{target}: cannot read the folder: {e.strerror}") from None
    if foreign:
        raise OutputFolderError(
            f"{target}: holds {_names(foreign)}, which llmsweep did not write; nothing was replaced. "
            "Move them out of the folder, or choose another -o"
        )
    if changed:
        raise OutputFolderError(
            f"{target}: {_names(changed)} changed since llmsweep wrote {'them' if len(changed) > 1 else 'it'}; "
            "nothing was replaced. Move the folder away (or the changed files), or choose another -o"
        )


def check_target(target: Path, kind: str = "run") -> None:
    """Refuse a target that `llmsweep KIND` must not replace: a file, a link, or a folder with
    contents it did not write. A missing or empty folder is fine."""
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
    try:
        empty = not any(target.iterdir())
    except OSError as e:
        raise OutputFolderError(f"{target}: cannot read the folder: {e.strerror}") from None
    if not empty:
        check_owned(target, kind)


def _within(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether `path` is `folder` or lies inside it, links resolved."""
    p, root = os.path.realpath(path), os.path.realpath(folder)
    return p == root or p.startswith(root.rstrip(os.sep) + os.sep)


def check_inputs_outside(target: Path, inputs: Iterable[str | os.PathLike]) -> None:
    """Refuse when an input of the command lies inside the folder it would replace."""
    for item in inputs:
        if _within(item, target):
            raise OutputFolderError(
                f"{item}: is inside {target}, the folder this command replaces; keep inputs outside their "
                "output folder (move the file, or choose another -o)"
            )


def check_output_file(path: Path, ours: Callable[[str], bool], what: str, keep_out: Iterable[Path] = ()) -> None:
    """Refuse an -o file that llmsweep must not write: a link, anything but a regular file, a
    file whose text `ours` does not recognise as llmsweep's `what`, or a path inside one of the
    folders `keep_out` (a run that is read must stay as its manifest lists it)."""
    for folder in keep_out:
        if _within(path.parent, folder):
            raise OutputFolderError(f"{path}: is inside {folder}, which this command reads; write the file elsewhere")
    if path.is_symlink():
        raise OutputFolderError(f"{path}: is a symbolic link; llmsweep writes only real files it created")
    if not path.exists():
        return
    if not path.is_file():
        raise OutputFolderError(f"{path}: exists and is not a regular file; it is left untouched. Choose another -o")
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError as e:
        raise OutputFolderError(f"{path}: cannot read it: {e.strerror}") from None
    if not ours(head):
        raise OutputFolderError(
            f"{path}: exists and is not {what} llmsweep wrote; it is left untouched. Move it away, or choose another -o"
        )


def seal(folder: Path, kind: str) -> None:
    """Record in folder/manifest.json the command that wrote the folder and the SHA-256 of every
    file in it: what a later command may replace."""
    path = folder / MANIFEST
    data: dict = {}
    if path.is_file():
        data = json.loads(path.read_text("utf-8"))
    data["command"] = kind
    data["file_sha256"] = {
        rel: file_sha256(folder / rel) for rel, st in _entries(folder) if rel != MANIFEST and stat.S_ISREG(st.st_mode)
    }
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")


# -- temporary folders --------------------------------------------------------------------------------------
@cache
def host_id() -> str:
    """12 hex digits naming this machine's boot and this process's PID namespace: process ids are
    compared only between temporary folders with the same id."""
    parts = []
    for source in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        with contextlib.suppress(OSError):
            parts.append(os.readlink(source) if source.endswith("/pid") else Path(source).read_text().strip())
    if not parts:
        parts.append(socket.gethostname())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OverflowError:
        return False
    return True


def clean_stale(parent: Path, name: str) -> list[Path]:
    """Remove `.NAME.partial-PID@HOST-*` / `.NAME.old-PID@HOST-*` folders of this PID namespace
    whose process no longer runs. If a process died between the two renames of a swap (only where
    no atomic exchange exists) the previous results are in its `.old-` folder and NAME is missing:
    they are put back instead."""
    here = host_id()
    try:
        stale = [
            p
            for p in parent.iterdir()
            if (m := _TEMP.match(p.name))
            and m["name"] == name
            and m["host"] == here
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
    old = target.parent / f".{target.name}.old-{os.getpid()}@{host_id()}-{tmp.name.rsplit('-', 1)[-1]}"
    os.rename(target, old)
    os.rename(tmp, target)
    return old


def _make_parents(parent: Path) -> list[Path]:
    """mkdir -p `parent`; the folders it created, deepest first (to remove again on failure)."""
    missing = []
    p = parent
    while not p.exists() and not p.is_symlink() and p != p.parent:
        missing.append(p)
        p = p.parent
    parent.mkdir(parents=True, exist_ok=True)
    return missing


def _remove_created(created: list[Path]) -> None:
    for p in created:  # deepest first; only if still empty (another process may have used it)
        with contextlib.suppress(OSError):
            p.rmdir()


_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_IO_FAILURE = re.compile(r"os error \d+|I/?O error|transport error|No space left|File too large|Disk quota", re.I)


def _why_writes_fail(folder: Path) -> OSError:
    """A write failed without saying why (polars' Parquet writer reports 'transport error'): the
    usual reasons, looked up."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft != resource.RLIM_INFINITY:
            return OSError(errno.EFBIG, f"File too large (ulimit -f {soft // 1024:,} KiB)")
    with contextlib.suppress(OSError, AttributeError):
        st = os.statvfs(folder)
        if st.f_bavail * st.f_frsize < 16 * 2**20:
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return OSError(errno.EIO, "a write failed")


def os_error_of(e: BaseException, folder: Path | None = None) -> OSError | None:
    """`e` as an OSError: itself, or an I/O failure of a library (polars) whose message carries one
    ("... No space left on device (os error 28)") or does not ("Invalid thrift: transport error")."""
    if isinstance(e, OSError) and (e.errno or e.strerror):
        return e
    from_library = isinstance(e, OSError) or type(e).__module__.split(".")[0] == "polars"
    m = _OS_ERROR.search(str(e))
    if m and from_library:
        code = int(m[1])
        return OSError(code, os.strerror(code))
    if from_library and _IO_FAILURE.search(str(e)):
        return _why_writes_fail(folder or Path("."))
    return e if isinstance(e, OSError) else None


def describe_os_error(e: OSError) -> str:
    text = e.strerror or str(e) or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        text += ": free some space (or raise the limit) or choose another -o"
    return text


@contextlib.contextmanager
def atomic_folder(target: Path, kind: str = "run", inputs: Iterable[str | os.PathLike] = ()) -> Iterator[Path]:
    """Yield a temporary folder beside `target`; on success it is sealed (`seal`) and replaces
    `target` whole, on any failure (or interrupt) it is removed, `target` keeps its previous
    contents and folders of the path made for it are removed. Raises OutputFolderError, before
    anything is written, when `target` may not be replaced."""
    target = Path(target)
    check_inputs_outside(target, inputs)
    check_target(target, kind)
    tmp: Path | None = None
    created: list[Path] = []
    try:
        created = _make_parents(target.parent)
        with _lock(target.parent):
            clean_stale(target.parent, target.name)
        with _signals_blocked():  # a signal arrives once `tmp` is set, so the folder is ours to remove
            prefix = f".{target.name}.partial-{os.getpid()}@{host_id()}-"
            tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the result should look like any folder
        yield tmp
        seal(tmp, kind)
        with _lock(target.parent), _signals_blocked():
            clean_stale(target.parent, target.name)
            check_target(target, kind)  # again: another process may have put something there meanwhile
            old = _swap_in(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    except BaseException as e:
        _remove(tmp)
        _remove_created(created)
        error = None if isinstance(e, LlmsweepError | KeyboardInterrupt) else os_error_of(e, target.parent)
        if error is None:
            raise
        if tmp is None:
            raise OutputFolderError(
                f"{target.parent}: cannot create the output folder here: {describe_os_error(error)}"
            ) from None
        raise OutputFolderError(
            f"{target}: cannot write the results: {describe_os_error(error)}; nothing was changed"
        ) from None


def _remove(tmp: Path | None) -> None:
    if tmp is not None and tmp.is_dir():
        with _signals_blocked():
            shutil.rmtree(tmp, ignore_errors=True)
