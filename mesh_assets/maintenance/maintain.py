"""One table's maintenance pass: compaction of its partitions that are due, then clean-up with its tier's
retention, each reported with the table's files after it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg
from pyspark.sql import SparkSession

from mesh_assets.graph.resolve import Node, Table
from mesh_assets.maintenance.compact import Compacted, compact
from mesh_assets.maintenance.feeds import held_by_feeds
from mesh_assets.maintenance.files import TableFiles, table_files
from mesh_assets.maintenance.vacuum import Cleaned, retention_hours, vacuum_unless_read
from mesh_assets.model.product import Output
from mesh_assets.settings import MaintenanceSettings
from mesh_assets.storage.tables import TableRegistry


@dataclass(frozen=True)
class Maintained:
    """What a pass did to one table, and its files after; ``missing``: no Delta table there yet."""

    ref: str
    compacted: Compacted | None = None
    cleaned: Cleaned | None = None
    files: TableFiles | None = None
    missing: bool = False

    def describe(self) -> str:
        if self.missing:
            return f"{self.ref}: not written yet, nothing to maintain"
        parts = []
        if self.compacted is not None:
            done = self.compacted
            parts.append(
                f"compacted {len(done.partitions)} partition(s), {done.files_removed} file(s) into {done.files_added}"
                if done.partitions
                else "no partition due for compaction"
            )
        if self.cleaned is not None:
            clean = self.cleaned
            if clean.skipped:
                parts.append(f"clean-up skipped: {clean.skipped}")
            else:
                known = clean.before is not None and clean.after is not None
                freed = f", {clean.before - clean.after} bytes freed" if known else ""
                kept = f", {clean.held}" if clean.held else ""
                parts.append(f"cleaned up (retention {clean.hours} h{kept}{freed})")
        if self.files is not None:
            parts.append(f"{self.files.files} file(s), {self.files.bytes} bytes")
        return f"{self.ref}: " + "; ".join(parts)


def zorder_of(table: Table) -> tuple[str, ...]:
    return table.spec.zorder if isinstance(table.spec, Output) else ()


def maintain(
    spark: SparkSession,
    instance: dg.DagsterInstance,
    registry: TableRegistry,
    table: Table,
    readers: list[dg.AssetKey],
    settings: MaintenanceSettings,
    *,
    compaction: bool = True,
    clean_up: bool = True,
    cloned_in: Sequence[str] = (),
    feed_readers: Sequence[Node] = (),
) -> Maintained:
    """Compact (when due) and clean up ``table``; ``readers``: the keys of the tables that read it; ``cloned_in``:
    the environments whose shallow clone of it reads production's files, which clean-up then leaves alone;
    ``feed_readers``: the outputs reading its change feed, whose unconsumed versions clean-up keeps."""
    location = registry.location(table.domain, table.name)
    column = table.partition_column if table.grain.partitioned else None
    files = table_files(location, registry.s3, settings.small_file_bytes, column)
    if files is None:
        return Maintained(table.ref, missing=True)
    compacted = cleaned = None
    if compaction:
        compacted = compact(spark, location, files, column, settings.small_files, zorder_of(table))
    if clean_up:
        hours = retention_hours(table.tier.value, settings)
        if cloned_in:
            envs = ", ".join(cloned_in)
            cleaned = Cleaned(hours, skipped=f"shallow clone in environment(s) {envs} reads its files: mesh env drop")
        else:
            found = held_by_feeds(registry, table, list(feed_readers))
            held = (found.hours, found.why) if found is not None else None
            keys = [table.key, *readers]
            cleaned = vacuum_unless_read(spark, instance, location, hours, registry.s3, keys, held)
    after = table_files(location, registry.s3, settings.small_file_bytes, column)
    return Maintained(table.ref, compacted, cleaned, after)
