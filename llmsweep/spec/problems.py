"""Problems in the file's own terms: each pydantic error as `file:line: key.path: message` at the key
path the file wrote (unknown keys with a did-you-mean), the grid's unknown names even when the rest
of the file is invalid, and every problem once, in file order.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from llmsweep.catalog import load_catalog
from llmsweep.errors import LlmsweepError, Problem, did_you_mean
from llmsweep.limits import yaml_number_hint
from llmsweep.yamlfile import KeyPath, YamlDoc


def _pydantic_problems(doc: YamlDoc, e: ValidationError, model: type[BaseModel], prefix: KeyPath = ()) -> list[Problem]:
    """One problem per location; alternatives of a union (e.g. batch: N or max) are joined with 'or'."""
    by_loc: dict[KeyPath, list[str]] = {}
    got: dict[KeyPath, str] = {}
    for err in e.errors():
        raw = tuple(p for p in err["loc"] if not _is_union_tag(p))
        if raw[-1:] == ("[key]",):  # a mapping key that is not text (`5: ...`, `null: ...`): at that key
            raw = raw[:-1]
            err = {**err, "msg": "Keys should be strings"}
        loc: KeyPath = _written(doc, raw, prefix)
        if err["type"] == "extra_forbidden":
            key = str(loc[-1])
            known = _fields_at(model, loc[:-1])
            hint = did_you_mean(key, known, n=1)
            msg = f"unknown key {key!r}" + (f"; did you mean {hint[0]!r}?" if hint else f" (known: {', '.join(known)})")
        elif err["type"] == "missing":
            msg = "required key is missing"
        else:
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] != "value_error" and not isinstance(err.get("input"), dict | list):
                got[loc] = f" (got {err['input']!r})" + yaml_number_hint(err["input"])
        by_loc.setdefault(loc, [])
        if msg not in by_loc[loc]:
            by_loc[loc].append(msg)
    return [doc.problem((*prefix, *loc), " or ".join(msgs) + got.get(loc, "")) for loc, msgs in by_loc.items()]


def _written(doc: YamlDoc, loc: KeyPath, prefix: KeyPath = ()) -> KeyPath:
    """`loc` as the file wrote it: a list index pydantic added to a single value that stands for a
    list of one (a GPU's one price offer, an axis of one value) is dropped; a mapping key that is
    not text (5, null) is given as written."""
    node: Any = doc.data
    for part in prefix:
        node = node.get(part) if isinstance(node, dict) else None
    out: list = []
    for part in loc:
        key = _non_text_key(node, part)
        if key is not _NO_KEY:
            out.append(_spelling(doc, (*prefix, *out), key))
            node = node.get(key)
            continue
        if isinstance(part, int) and not isinstance(node, list):
            continue
        out.append(part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(out)


_NO_KEY = object()


def _non_text_key(node: Any, part: str | int) -> Any:
    """The key of mapping `node` that is not text and that pydantic's location `part` stands for
    (it gives null as 'None'), else _NO_KEY."""
    if isinstance(node, dict):
        for key in node:
            if not isinstance(key, str) and (key == part if isinstance(part, int) else str(key) == part):
                return key
    return _NO_KEY


def _spelling(doc: YamlDoc, parent: KeyPath, key: Any) -> str:
    """How the file wrote a key that is not text (null, ~, 5, true): its line is recorded under that."""
    for path in doc.lines:
        if len(path) == len(parent) + 1 and path[:-1] == parent and isinstance(path[-1], str):
            try:
                same = yaml.safe_load(path[-1]) == key and type(yaml.safe_load(path[-1])) is type(key)
            except yaml.YAMLError:
                same = False
            if same:
                return path[-1]
    return str(key)


_UNION_TAG = re.compile(r"^(int|str|float|bool|none|constrained-\w+|[a-z_-]+\[.*\])$")


def _is_union_tag(part: str | int) -> bool:
    """pydantic adds the member type of a union to error locations ('int', "literal['max']", ...)."""
    return isinstance(part, str) and bool(_UNION_TAG.match(part))


def _fields_at(model: type[BaseModel], loc: KeyPath) -> list[str]:
    """Field names of the sub-model at `loc` (for did-you-mean on unknown keys)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            continue
        field = current.model_fields.get(part)
        if field is None:
            return []
        current = _model_in(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _model_in(ann: Any) -> type[BaseModel] | None:
    """The last pydantic model an annotation holds, however deep (X | None, list[str | X],
    Annotated[...]): the model an unknown key below that field belongs to."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    found = None
    for arg in getattr(ann, "__args__", ()) or ():
        found = _model_in(arg) or found
    return found


def _precheck_names(doc: YamlDoc, data: dict) -> list[Problem]:
    """Name problems in the grid, reported even when other parts of the file are invalid."""
    grid = data.get("grid")
    if not isinstance(grid, dict):
        return []
    catalog = load_catalog()
    extra = {"gpu": set(data.get("gpus") or {}), "model": set(data.get("models") or {})}
    problems = []
    for axis, kind in (("gpu", "gpu"), ("model", "model"), ("precision", "precision")):
        values = grid.get(axis)
        for i, v in enumerate(values if isinstance(values, list) else [values] if values is not None else []):
            if not isinstance(v, str) or v in extra.get(kind, ()):
                continue
            try:
                getattr(catalog, f"resolve_{kind}")(v)
            except LlmsweepError as e:
                path: KeyPath = ("grid", axis, i) if isinstance(values, list) else ("grid", axis)
                problems.append(doc.problem(path, str(e)))
    return problems


def _dedupe(problems: list[Problem]) -> list[Problem]:
    """Each problem once, in file order (grid.gpu[2] before grid.gpu[10])."""

    def order(p: Problem) -> tuple:
        return (p.line if p.line is not None else math.inf, re.sub(r"\d+", lambda m: m[0].zfill(12), p.path))

    return sorted(dict.fromkeys(problems), key=order)
