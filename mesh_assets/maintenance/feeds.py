"""The change-feed versions clean-up must keep: a ``changes`` output reads its upstream's Change Data Feed from the
version after the one its last run consumed (recorded in its own commits, :func:`~mesh_assets.run.compute.consumed`),
so every upstream file written or replaced since that version is still needed, however old, until it runs again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from mesh_assets.graph.resolve import MeshGraph, Node, Table
from mesh_assets.run.compute import consumed
from mesh_assets.storage.lake import open_table
from mesh_assets.storage.tables import TableRegistry


@dataclass(frozen=True)
class Held:
    """The retention a table's unconsumed feed needs: ``hours`` back to the commit of ``version``, the oldest
    version a ``changes`` reader (``reader``, ``<domain>.<table>``) consumed up to."""

    hours: int
    version: int
    reader: str

    @property
    def why(self) -> str:
        return f"kept for {self.reader}, which consumed its change feed up to version {self.version}"


def feed_readers(graph: MeshGraph, table: Table) -> list[Node]:
    """The outputs that read ``table`` by window ``changes``."""
    nodes = (graph.nodes.get((t.domain, t.name)) for t in graph.readers(table.domain, table.name))
    return [
        node
        for node in nodes
        if node is not None and any(r.input.window.kind == "changes" and r.table.key == table.key for r in node.reads)
    ]


def _committed_ms(location: str, registry: TableRegistry, version: int) -> int | None:
    """When ``version`` of the table was committed (ms since the epoch, from the log), None if no longer logged."""
    found = open_table(location, registry.s3)
    if found is None:
        return None
    for info in found.history():
        if info.get("version") == version:
            return info.get("timestamp")
    return None


def held_by_feeds(
    registry: TableRegistry, table: Table, readers: list[Node], now: datetime | None = None
) -> Held | None:
    """The retention that keeps every version of ``table`` after the oldest one a reader in ``readers`` consumed:
    back to that version's commit, with an hour's margin for files written before it; None when every reader is
    up to date (or never ran: its first run reads the latest version whole)."""
    location = registry.location(table.domain, table.name)
    latest = open_table(location, registry.s3)
    if latest is None:
        return None
    behind = [
        (since, node.table.ref)
        for node in readers
        if (since := consumed(registry, node).get(table.ref)) is not None and since < latest.version()
    ]
    if not behind:
        return None
    since, reader = min(behind)
    committed = _committed_ms(location, registry, since)
    if committed is None:  # its commit is gone from the log: keep everything the log still has
        committed = min((info.get("timestamp") or 0) for info in latest.history())
    elapsed = (now or datetime.now(UTC)).timestamp() - committed / 1000
    return Held(math.ceil(max(elapsed, 0) / 3600) + 1, since, reader)
