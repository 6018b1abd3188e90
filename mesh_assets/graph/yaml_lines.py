"""YAML loading that remembers the line of every key, so errors can point at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Lines = dict[tuple[str | int, ...], int]
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _walk(node: yaml.Node, path: tuple[str | int, ...], lines: Lines) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            _walk(value_node, (*path, key_node.value), lines)
            lines[(*path, key_node.value)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), lines)


def load(path: Path) -> tuple[Any, Lines]:
    """Parse ``path`` once (libyaml when available); return the data and key path -> 1-based line."""
    loader = _Loader(path.read_text())
    try:
        node = loader.get_single_node()
        lines: Lines = {}
        if node is None:
            return None, lines
        _walk(node, (), lines)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def line_for(lines: Lines, loc: tuple[str | int, ...]) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
