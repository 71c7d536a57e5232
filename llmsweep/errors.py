"""Errors the core raises. Each carries a complete sentence a user can act on; only cli.py
turns them into exit codes and stderr lines."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


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


def did_you_mean(name: str, candidates: Iterable[str], n: int = 2) -> list[str]:
    """Closest candidates to `name`, compared case-insensitively (difflib ratio >= 0.6)."""
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
        super().__init__("\n".join([head, *(f"  {p}" for p in problems)]))
