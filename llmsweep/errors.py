"""Errors the core raises. Each carries a complete sentence a user can act on; only cli.py
turns them into exit codes and stderr lines."""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

# C0 and C1 control characters (escape sequences: colours, cursor moves, OSC 52 writes to the
# clipboard, OSC 8 links), DEL, and the bidirectional overrides that reorder what a line shows.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNPRINTABLE_KEEP_LINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(value: object, keep_lines: bool = False) -> str:
    """Text for a terminal: every control character (and bidi override) shown as '?', so nothing
    from an input file can move the cursor, set a title, write the clipboard or fake a line.
    `keep_lines` keeps newlines (for text llmsweep itself split into lines)."""
    return (_UNPRINTABLE_KEEP_LINES if keep_lines else _UNPRINTABLE).sub("?", str(value))


class LlmsweepError(Exception):
    """Base class: bad input or a run that cannot proceed (exit code 1, no traceback)."""


class UnknownNameError(LlmsweepError):
    """A GPU, model or precision name that no catalog entry or alias matches."""

    def __init__(self, kind: str, name: str, suggestions: list[str], hint: str = ""):
        self.kind, self.name, self.suggestions = kind, name, suggestions
        msg = f"unknown {kind} {name!r}"
        if suggestions:
            msg += "; did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class ConfigFileError(LlmsweepError):
    """A model config.json (or other input file) that cannot be read or lacks a field."""


class CatalogError(LlmsweepError):
    """A packaged or user-supplied catalog entry that is inconsistent."""


_suggestions_left: ContextVar[int | None] = ContextVar("suggestions_left", default=None)


@contextlib.contextmanager
def suggestion_budget(n: int) -> Iterator[None]:
    """Within the block, only the first `n` calls of did_you_mean compare names (each costs a
    difflib pass over a catalog); later ones return no suggestion at once. A file with 99,000
    misspelled names is then reported in seconds, its first problems with their did-you-mean."""
    token = _suggestions_left.set(n)
    try:
        yield
    finally:
        _suggestions_left.reset(token)


def did_you_mean(name: str, candidates: Iterable[str], n: int = 2) -> list[str]:
    """Closest candidates to `name`, compared case-insensitively (difflib ratio >= 0.6)."""
    left = _suggestions_left.get()
    if left is not None:
        if left <= 0:
            return []
        _suggestions_left.set(left - 1)
    by_lower: dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(c.lower(), c)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[h] for h in hits]


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.path}: {self.message}"


class SpecError(LlmsweepError):
    """Every problem found in a sweep file, reported together."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        n = len(problems)
        head = f"{n} problem{'s' if n != 1 else ''} in {problems[0].file}:" if problems else "invalid sweep"
        self.head = head
        super().__init__("\n".join([head, *(f"  {p}" for p in problems)]))

    def lines(self, limit: int | None = None) -> list[str]:
        """The message as printable lines (each problem on one line), at most `limit` problems."""
        shown = self.problems if limit is None else self.problems[:limit]
        out = [printable(self.head), *(f"  {printable(p)}" for p in shown)]
        if len(shown) < len(self.problems):
            out.append(f"  ... and {len(self.problems) - len(shown):,} more problems (the first {len(shown):,} shown)")
        return out
