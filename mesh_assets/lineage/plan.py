"""Reading Spark's JVM query plans through py4j, and naming the locations they read."""

from __future__ import annotations

from typing import Any

ColumnSources = dict[str, list[tuple[str, str]]]
"""Output column -> the (input location, input column) pairs its values come from."""


def normalize(path: str) -> str:
    """``file:/x/y/`` and ``/x/y`` name the same local table; other schemes are kept."""
    path = path.rstrip("/")
    for prefix in ("file://", "file:"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
            return "/" + path.lstrip("/")
    return path


def seq(scala_seq: Any) -> list[Any]:
    """A Scala ``Seq`` as a list."""
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def leaf_paths(leaf: Any) -> list[str]:
    """The root paths of a leaf relation of a plan (none for an in-memory or JDBC relation)."""
    name = leaf.nodeName()
    if name == "LogicalRelation":
        try:
            return [str(p) for p in seq(leaf.relation().location().rootPaths())]
        except Exception:  # a relation without a file index (JDBC, ...) has no path
            return []
    if name.startswith("DataSourceV2"):
        try:
            return [str(leaf.table().name())]
        except Exception:
            return []
    return []
