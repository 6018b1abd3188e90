"""Retired outputs leave nothing behind: an output whose status is ``retired`` has no asset in its code location
(:mod:`mesh_assets.definitions` builds none), and its table, once no table reads it and nothing wrote it for
longer than its tier's retention, is deleted (after a dry run lists it).

Within the retention the table is kept: ``mesh restore`` and runs pinned to its versions may still need it, and
a retirement can still be undone. A table of another status, or one still read, is never a candidate.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime

from mesh_assets.graph.resolve import MeshGraph, Table
from mesh_assets.maintenance.vacuum import retention_hours
from mesh_assets.model.lifecycle import Status
from mesh_assets.settings import MaintenanceSettings
from mesh_assets.storage.lake import is_object_store, local_path, open_table
from mesh_assets.storage.tables import TableRegistry


@dataclass(frozen=True)
class RetiredTable:
    """A retired output's table and whether it may go: ``why`` says why not."""

    table: Table
    location: str
    last_write: datetime | None
    hours: int
    readers: tuple[str, ...] = ()
    why: str | None = None

    @property
    def deletable(self) -> bool:
        return self.why is None

    def describe(self) -> str:
        written = self.last_write.strftime("%Y-%m-%d %H:%M UTC") if self.last_write else "never"
        verdict = "delete" if self.deletable else f"keep: {self.why}"
        return f"{self.table.ref}: retired, last written {written}, retention {self.hours} h: {verdict}"


def _last_write(location: str, registry: TableRegistry) -> datetime | None:
    table = open_table(location, registry.s3)
    if table is None:
        return None
    history = table.history(1)
    stamp = history[0].get("timestamp") if history else None
    return None if stamp is None else datetime.fromtimestamp(stamp / 1000, UTC)


def retired_tables(
    graph: MeshGraph,
    outputs: list[Table],
    registry: TableRegistry,
    settings: MaintenanceSettings,
    now: datetime | None = None,
) -> list[RetiredTable]:
    """Every retired output among ``outputs`` that has a table, each deletable or kept with the reason."""
    now = now or datetime.now(UTC)
    found = []
    for table in outputs:
        if table.status is not Status.RETIRED:
            continue
        location = registry.location(table.domain, table.name)
        last = _last_write(location, registry)
        if last is None:
            continue
        hours = retention_hours(table.tier.value, settings)
        readers = tuple(t.ref for t in graph.readers(table.domain, table.name))
        why = None
        if readers:
            why = f"read by {', '.join(readers)}"
        elif (now - last).total_seconds() < hours * 3600:
            why = f"written {int((now - last).total_seconds() // 3600)} h ago, within the retention"
        elif is_object_store(location):
            why = "on an object store: delete its prefix with the store's tools"
        found.append(RetiredTable(table, location, last, hours, readers, why))
    return found


def delete(location: str) -> None:
    """Delete a local table's directory, log and data alike."""
    shutil.rmtree(local_path(location))
