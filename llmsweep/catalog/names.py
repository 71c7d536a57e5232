"""Name matching shared by the catalogs: case-insensitive ids and aliases, did-you-mean."""

from __future__ import annotations

import re
from dataclasses import dataclass

from llmsweep.errors import UnknownNameError, did_you_mean

_VENDOR_PREFIX = re.compile(r"^(nvidia|amd|intel|apple|geforce|radeon|instinct)-+")


def normalize(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'rtx-4090'; 'H100_SXM' -> 'h100-sxm'."""
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    while True:
        stripped = _VENDOR_PREFIX.sub("", key)
        if stripped == key:
            return key
        key = stripped


@dataclass(frozen=True, slots=True)
class Resolved:
    id: str
    note: str | None = None  # said to the user when the name was ambiguous


class NameIndex:
    """Maps ids and aliases (normalised) to catalog ids; some aliases are knowingly ambiguous."""

    def __init__(self, kind: str, names: dict[str, list[str]], ambiguous: dict[str, list[str]] | None = None):
        self.kind = kind
        self._ids = list(names)
        self._lookup: dict[str, str] = {}
        for cid, aliases in names.items():
            for n in [cid, *aliases]:
                self._lookup.setdefault(normalize(n), cid)
        self._ambiguous = {normalize(k): v for k, v in (ambiguous or {}).items()}
        self._display = [n for cid, aliases in names.items() for n in [cid, *aliases]]

    def __contains__(self, name: str) -> bool:
        return normalize(name) in self._lookup

    def resolve(self, name: str) -> Resolved:
        key = normalize(name)
        if key in self._ambiguous:
            chosen, *others = self._ambiguous[key]
            if others:
                return Resolved(
                    chosen,
                    f"{self.kind} {name!r} is ambiguous; using {chosen} (the most common variant; "
                    f"also: {', '.join(others)})",
                )
            return Resolved(chosen)
        if key in self._lookup:
            return Resolved(self._lookup[key])
        ids = list(dict.fromkeys(self._lookup[normalize(s)] for s in did_you_mean(name, self._display, n=4)))
        raise UnknownNameError(self.kind, name, ids[:2], f"`llmsweep {self.kind}s` lists them")
