"""Safe YAML (and JSON) loading that remembers where every key came from and refuses duplicate keys.

The sweep file's problems are reported as `file:line: key.path: message`, so the loader keeps a
map from each key path to its line. Only plain YAML is accepted (SafeLoader: no object tags).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llmsweep.errors import Problem, SpecError
from llmsweep.limits import MAX_YAML_DEPTH, MAX_YAML_NODES, UnreadableFile, read_regular_file

KeyPath = tuple[str | int, ...]


def format_path(path: KeyPath) -> str:
    """('grid', 'gpu', 2) -> 'grid.gpu[2]'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


@dataclass
class YamlDoc:
    file: str
    text: str
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def line(self, path: KeyPath) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def problem(self, path: KeyPath, message: str) -> Problem:
        return Problem(self.file, self.line(path), format_path(path), message)


class _TooBig(Exception):
    """The document exceeds MAX_YAML_DEPTH or MAX_YAML_NODES (the message says which)."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.line = line


def _check_events(loader: yaml.SafeLoader) -> None:
    """Refuse deep nesting before the (recursive) composer sees it."""
    depth = 0
    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise _TooBig(
                    f"the document nests deeper than {MAX_YAML_DEPTH} levels, the limit for a YAML input file",
                    event.start_mark.line + 1,
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _walk(node: yaml.Node, path: KeyPath, doc: YamlDoc, budget: list[int]) -> None:
    budget[0] += 1
    if budget[0] > MAX_YAML_NODES:
        raise _TooBig(
            f"the document expands to more than {MAX_YAML_NODES:,} values once its aliases (*name) are "
            "followed, the limit for a YAML input file; write the values out or use fewer aliases",
            node.start_mark.line + 1,
        )
    if len(path) > MAX_YAML_DEPTH:
        raise _TooBig(
            f"the document nests deeper than {MAX_YAML_DEPTH} levels once its aliases are followed "
            "(an alias inside its own anchor?), the limit for a YAML input file",
            node.start_mark.line + 1,
        )
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "(complex key)"
            line = key_node.start_mark.line + 1
            if key in seen:
                doc.problems.append(
                    Problem(
                        doc.file, line, format_path((*path, key)), f"duplicate key (first given on line {seen[key]})"
                    )
                )
            seen.setdefault(key, line)
            doc.lines.setdefault((*path, key), line)
            _walk(value_node, (*path, key), doc, budget)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            doc.lines[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), doc, budget)


def _yaml_problem(file: str, e: yaml.YAMLError, text: str = "") -> Problem:
    if isinstance(e, yaml.reader.ReaderError):
        line = text[: e.position].count("\n") + 1
        what = "a NUL byte" if e.character == 0 else f"the control character #x{e.character:04x}"
        return Problem(file, line, "(syntax)", f"invalid YAML: {what} is not allowed in a YAML file")
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    what = getattr(e, "problem", None) or str(e)
    if "could not determine a constructor" in str(e):
        what = "tags such as !!python/... are not allowed (plain YAML only)"
    if mark is None:
        return Problem(file, None, "(syntax)", f"invalid YAML: {what}")
    return Problem(file, mark.line + 1, "(syntax)", f"invalid YAML at column {mark.column + 1}: {what}")


def load_yaml(path: str | Path) -> YamlDoc:
    """Read and parse a YAML file; raise SpecError for unreadable files, syntax errors and
    documents over the limits (size, nesting, alias expansion; see llmsweep.limits)."""
    file = str(path)
    try:
        raw = read_regular_file(path)
    except IsADirectoryError:
        raise SpecError(
            [Problem(file, None, "(file)", "is a directory, not a sweep file (give a .yaml file)")]
        ) from None
    except FileNotFoundError:
        raise SpecError([Problem(file, None, "(file)", "file not found")]) from None
    except UnreadableFile as e:
        raise SpecError([Problem(file, None, "(file)", str(e))]) from None
    except OSError as e:
        raise SpecError([Problem(file, None, "(file)", f"cannot read the file: {e.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecError(
            [Problem(file, line, "(file)", f"not UTF-8 text (byte 0x{raw[e.start]:02x}); save the file as UTF-8")]
        ) from None
    return parse_yaml(text, file)


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse YAML text (a sweep, or the sweep a manifest keeps) within the same limits as a file:
    nesting, alias expansion, integer size; raise SpecError naming `file`."""
    doc = YamlDoc(file=file, text=text, data=None)
    try:
        _check_events(yaml.SafeLoader(text))
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _walk(node, (), doc, [0])
                doc.data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        raise SpecError([_yaml_problem(file, e, text)]) from None
    except _TooBig as e:
        raise SpecError([Problem(file, e.line, "(file)", str(e))]) from None
    except (ValueError, OverflowError) as e:  # e.g. an integer of more than 4,300 digits
        raise SpecError([Problem(file, None, "(syntax)", f"a value cannot be read: {e}")]) from None
    except RecursionError:  # a last guard: the limits above should come first
        raise SpecError(
            [Problem(file, None, "(file)", f"the document nests too deeply (limit {MAX_YAML_DEPTH} levels)")]
        ) from None
    return doc


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_YAML_DEPTH:
                stack.extend((v, depth + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_json(raw: bytes) -> Any:
    """JSON within the limits of a YAML input: at most MAX_YAML_DEPTH levels, integers Python can
    read. Raises ValueError with a phrase to follow the file's name (json.JSONDecodeError for
    syntax, with its line)."""
    import json

    text = raw.decode("utf-8")  # UnicodeDecodeError is the caller's to word
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError(f"nests deeper than {MAX_YAML_DEPTH} levels, the limit for a JSON input file") from None
    except json.JSONDecodeError:
        raise
    except ValueError as e:  # an integer of more than 4,300 digits
        raise ValueError(f"a value cannot be read: {e}") from None
    if _depth(data) > MAX_YAML_DEPTH:
        raise ValueError(f"nests deeper than {MAX_YAML_DEPTH} levels, the limit for a JSON input file")
    return data
