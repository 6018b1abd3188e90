"""What the instance last published of each table: per partition, the rows, the code version that computed them
and the product revision; per table, the columns of its newest commit. Read from Dagster's own records (each
materialization carries them), so a plan needs neither Spark nor the warehouse."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from mesh_assets.compat import CODE_VERSION_TAG
from mesh_assets.graph.revisions import REVISION_KEY

PAGE = 1000
ROWS = "dagster/row_count"
COLUMNS = "dagster/column_schema"


@dataclass(frozen=True)
class Published:
    """One partition (``None``: an unpartitioned table) as its latest materialization left it."""

    rows: int | None
    code_version: str | None
    revision: str | None


@dataclass(frozen=True)
class TableRecords:
    """A table's latest materialization per partition, and the columns of the newest one that recorded them."""

    partitions: dict[str | None, Published]
    columns: dict[str, str] | None

    def rows(self, partitions: list[str] | None) -> int | None:
        """The rows of ``partitions`` (``None``: the unpartitioned table) when each recorded its count."""
        counts = [self.partitions[p].rows if p in self.partitions else None for p in partitions or [None]]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def _value(metadata: dict, key: str) -> object:
    entry = metadata.get(key)
    return getattr(entry, "value", entry)


class InstanceRecords:
    """The instance's records of each table, read once per table (newest first, a page at a time)."""

    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance
        self._cache: dict[dg.AssetKey, TableRecords] = {}

    def of(self, key: dg.AssetKey) -> TableRecords:
        if key not in self._cache:
            self._cache[key] = self._read(key)
        return self._cache[key]

    def _read(self, key: dg.AssetKey) -> TableRecords:
        partitions: dict[str | None, Published] = {}
        columns: dict[str, str] | None = None
        cursor = None
        while True:
            page = self.instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), PAGE, cursor)
            for record in page.records:
                event = record.asset_materialization
                if event is None:
                    continue
                metadata = dict(event.metadata)
                schema = _value(metadata, COLUMNS)
                if columns is None and isinstance(schema, dg.TableSchema):
                    columns = {c.name: c.type for c in schema.columns}
                if event.partition in partitions:
                    continue
                rows = _value(metadata, ROWS)
                revision = _value(metadata, REVISION_KEY)
                partitions[event.partition] = Published(
                    int(rows) if isinstance(rows, int | float) else None,
                    event.tags.get(CODE_VERSION_TAG),
                    str(revision) if revision is not None else None,
                )
            if not page.has_more:
                return TableRecords(partitions, columns)
            cursor = page.cursor
