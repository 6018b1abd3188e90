"""YAML loading that remembers the line of every key, so errors can point at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Lines = dict[tuple[str | int, ...], int]


def _walk(node: yaml.Node, path: tuple[str | int, ...], lines: Lines) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _walk(value_node, (*path, key), lines)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(item, (*path, i), lines) for i, item in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def load(path: Path) -> tuple[Any, Lines]:
    """Parse ``path``; return the data and a map from key path to 1-based line."""
    text = path.read_text()
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: Lines = {}
    if node is None:
        return None, lines
    return _walk(node, (), lines), lines


def line_for(lines: Lines, loc: tuple[str | int, ...]) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
