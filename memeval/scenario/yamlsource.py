"""A scenario file read with PyYAML's safe loader, plus the line of every key and value.

The node tree gives positions, so every error can name the line; it also catches duplicate
mapping keys, which `safe_load` would silently merge (the last one wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memeval.errors import ScenarioError

YPath = tuple[str | int, ...]
# What `yaml.safe_load` uses (safe constructor: plain data only), on libyaml when present;
# the node tree is kept for positions, and the data is constructed from that same tree.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def display_path(path: Path) -> str:
    """The path as a user would type it: relative to the working directory when inside it."""
    try:
        if path.is_absolute():
            return str(path.relative_to(Path.cwd()))
    except ValueError:
        pass
    return str(path)


def one_line(text: str) -> str:
    """Escape line breaks and control characters so a message stays on one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


@dataclass
class YamlDoc:
    """The data of one YAML file and where each part of it sits."""

    file: str
    data: Any
    key_lines: dict[YPath, int] = field(default_factory=dict)
    value_lines: dict[YPath, int] = field(default_factory=dict)

    def line(self, path: YPath, at_key: bool = False) -> int:
        """The line of `path` (its key when `at_key`), else of its nearest ancestor that exists."""
        for end in range(len(path), -1, -1):
            sub = path[:end]
            lines = self.key_lines if at_key and end == len(path) else self.value_lines
            if sub in lines:
                return lines[sub]
        return 1

    def label(self, path: YPath) -> str:
        """A readable key path: `sessions[s1].turns[s1t1].expect.records[0]`."""
        out = ""
        node = self.data
        for part in path:
            if isinstance(part, int):
                item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
                ident = _ident(item)
                out += f"[{ident if ident is not None else part}]"
                node = item
            else:
                out += f".{part}" if out else str(part)
                node = node.get(part) if isinstance(node, dict) else None
        return out

    def error(self, path: YPath, problem: str, at_key: bool = False) -> ScenarioError:
        """`FILE:LINE: key: problem`, on one line."""
        label = self.label(path)
        where = f"{self.file}:{self.line(path, at_key)}"
        return ScenarioError(
            one_line(f"{where}: {label}: {problem}" if label else f"{where}: {problem}")
        )


def _ident(item: Any) -> str | None:
    if isinstance(item, dict):
        for key in ("id", "name"):
            if isinstance(item.get(key), str) and item[key]:
                return str(item[key])
    return None


def read_yaml(path: Path) -> YamlDoc:
    """Parse one file; syntax errors, duplicate keys and a non-mapping top level are errors."""
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{shown}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ScenarioError(f"{shown}: cannot read ({exc.strerror})") from None
    loader = SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ScenarioError(one_line(f"{shown}:{line}: invalid YAML: {exc.problem}")) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(one_line(f"{shown}: invalid YAML: {exc}")) from None
    finally:
        loader.dispose()
    doc = YamlDoc(file=shown, data=data)
    if node is None:
        raise ScenarioError(
            f"{shown}:1: the file is empty (a scenario is a mapping with name, ...)"
        )
    if not isinstance(node, yaml.MappingNode):
        raise doc.error((), "the top level must be a mapping of keys (name, user, space, ...)")
    _index(doc, node, ())
    return doc


def _index(doc: YamlDoc, node: yaml.Node, path: YPath) -> None:
    doc.value_lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            line = key_node.start_mark.line + 1
            if key in seen and key != "<<":
                where = f"{doc.file}:{line}"
                label = doc.label(path)
                problem = f"duplicate key {key!r} (first at line {seen[key]})"
                text = f"{where}: {label}: {problem}" if label else f"{where}: {problem}"
                raise ScenarioError(one_line(text))
            seen[key] = line
            doc.key_lines[(*path, key)] = line
            _index(doc, value_node, (*path, key))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            doc.key_lines[(*path, i)] = item.start_mark.line + 1
            _index(doc, item, (*path, i))
