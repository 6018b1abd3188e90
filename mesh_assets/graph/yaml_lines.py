"""YAML loading that remembers the line of every key, so errors can point at it, within fixed bounds.

A spec is read only if it is small (``MAX_BYTES``), uses few aliases (``MAX_ALIASES``: an alias re-uses a
node, and nine nested ones make a 500-byte file a billion values), nests shallowly and expands to few values
(``MAX_DEPTH``, ``MAX_NODES``). The bounds are checked on the file's size and its parse events, before any
document is built, so a hostile file is refused in milliseconds whatever it would expand to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Lines = dict[tuple[str | int, ...], int]
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_BYTES = 1 << 20
MAX_ALIASES = 8
MAX_DEPTH = 32
MAX_NODES = 100_000


class SpecRefused(ValueError):
    """A spec file outside the bounds; the message says which bound and what the file has."""


def _check_events(text: str) -> None:
    aliases = depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise SpecRefused(
                    f"refused: more than {MAX_ALIASES} YAML aliases (*name) at line {event.start_mark.line + 1}; "
                    "write the values out"
                )
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecRefused(f"refused: nested deeper than {MAX_DEPTH} levels at line {event.start_mark.line + 1}")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _walk(root: yaml.Node) -> Lines:
    """Key path -> line of every key (of the item, in a list), aliases expanded, without recursion and at
    most ``MAX_NODES`` of them."""
    lines: Lines = {}
    todo: list[tuple[yaml.Node, tuple[str | int, ...]]] = [(root, ())]
    while todo:
        node, path = todo.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if len(lines) > MAX_NODES:
            raise SpecRefused(f"refused: the spec expands to more than {MAX_NODES:,} values")
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                lines[(*path, key_node.value)] = key_node.start_mark.line + 1
                todo.append((value_node, (*path, key_node.value)))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return lines


def load(path: Path) -> tuple[Any, Lines]:
    """Parse ``path`` once (libyaml when available); return the data and key path -> 1-based line.

    Raises :class:`SpecRefused` for a file outside the bounds, ``yaml.YAMLError`` for one that does not parse.
    """
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise SpecRefused(f"refused: the file is {size:,} bytes; a spec may have at most {MAX_BYTES:,}")
    text = path.read_text()
    _check_events(text)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines = _walk(node)
        return loader.construct_document(node), lines
    finally:
        loader.dispose()


def line_for(lines: Lines, loc: tuple[str | int, ...]) -> int | None:
    """The line of the deepest known prefix of ``loc``."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
