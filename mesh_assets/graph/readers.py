"""Who may read a table, for its status: rules between tables, on resolved tables alone (so no other domain's
code runs). Nothing reads a retired table, only its own domain reads a draft, and every reader of another
product's deprecated table is warned, with its sunset and the version to move to.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from mesh_assets.graph.resolve import MeshGraph, Table
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.lifecycle import Status


def _successor(table: Table, graph: MeshGraph) -> str | None:
    """The newest readable later version of ``table`` (``version 2 (sales.orders_v2)``), if there is one."""
    base = table.spec.table if table.spec is not None else table.name
    later = [
        t
        for t in graph.tables.values()
        if t.domain == table.domain and t.spec is not None and t.spec.table == base and t.version > table.version
    ]
    newest = max((t for t in later if t.status.readable_across_domains), key=lambda t: t.version, default=None)
    return f"version {newest.version} ({newest.ref})" if newest else None


def read_refusal(reader: Table, table: Table, graph: MeshGraph) -> str | None:
    """Why ``reader`` may not read ``table`` for its status, or None."""
    if not table.status.readable:
        return f"{table.ref} is retired: nothing may read it; read {_successor(table, graph) or 'another table'}"
    if reader.domain != table.domain and not table.status.readable_across_domains:
        return f"{table.ref} is a draft: other domains may read it once {table.domain} makes it active"
    return None


def deprecation_warnings(graph: MeshGraph, only: set[str] | None = None, today: date | None = None) -> list[SpecError]:
    """Every read of another product's deprecated table by a table of ``only`` (default: any), at the input's
    own line: the sunset, whether it has passed, and the version to move to. A warning, not an error: the
    reader keeps reading until the producer retires the table."""
    today = today or datetime.now(UTC).date()
    found = []
    for table in graph.tables.values():
        if only is not None and table.domain not in only:
            continue
        for inp in table.declared:
            info = graph.get(inp.domain, inp.table)
            if (
                info is None
                or info.status is not Status.DEPRECATED
                or (info.domain, info.product)
                == (
                    table.domain,
                    table.product,
                )
            ):
                continue
            passed = info.sunset is not None and info.sunset < today
            when = f"its sunset {info.sunset} has passed" if passed else f"sunset {info.sunset}"
            move = _successor(info, graph)
            message = f"{inp.ref} is deprecated ({when}): " + (f"move to {move}" if move else "move off it")
            found.append(SpecError(relative(table.source_file), inp.line, inp.field, message))
    return sorted(found)
