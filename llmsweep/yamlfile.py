"""Safe YAML loading that remembers where every key came from and refuses duplicate keys.

The sweep file's problems are reported as `file:line: key.path: message`, so the loader keeps a
map from each key path to its line. Only plain YAML is accepted (SafeLoader: no object tags).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llmsweep.errors import Problem, SpecError

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


def _walk(node: yaml.Node, path: KeyPath, doc: YamlDoc) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                doc.problems.append(
                    Problem(
                        doc.file, line, format_path((*path, key)), f"duplicate key (first given on line {seen[key]})"
                    )
                )
            seen.setdefault(key, line)
            doc.lines.setdefault((*path, key), line)
            _walk(value_node, (*path, key), doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            doc.lines[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), doc)


def _yaml_problem(file: str, e: yaml.YAMLError) -> Problem:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    what = getattr(e, "problem", None) or str(e)
    if "could not determine a constructor" in str(e):
        what = "tags such as !!python/... are not allowed (plain YAML only)"
    if mark is None:
        return Problem(file, None, "(syntax)", f"invalid YAML: {what}")
    return Problem(file, mark.line + 1, "(syntax)", f"invalid YAML at column {mark.column + 1}: {what}")


def load_yaml(path: str | Path) -> YamlDoc:
    """Read and parse a YAML file; raise SpecError for unreadable files and syntax errors."""
    file = str(path)
    p = Path(path)
    if p.is_dir():
        raise SpecError([Problem(file, None, "(file)", "is a directory, not a sweep file (give a .yaml file)")])
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise SpecError([Problem(file, None, "(file)", "file not found")]) from None
    except OSError as e:
        raise SpecError([Problem(file, None, "(file)", f"cannot read the file: {e.strerror}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise SpecError(
            [Problem(file, line, "(file)", f"not UTF-8 text (byte 0x{raw[e.start]:02x}); save the file as UTF-8")]
        ) from None
    doc = YamlDoc(file=file, text=text, data=None)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _walk(node, (), doc)
            doc.data = loader.construct_document(node)
    except yaml.YAMLError as e:
        raise SpecError([_yaml_problem(file, e)]) from None
    finally:
        loader.dispose()
    return doc
