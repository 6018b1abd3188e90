"""What this instance already holds about an external table's partitions, read from its own reports.

The observer's events say how far the log was read (where a tick without a cursor starts) and each reported
partition's rows (``dagster/row_count``). A partition's rows are the snapshot a cleaned-up log is compared with:
the commits that said what changed are gone, and a rewrite (OPTIMIZE, ZORDER) keeps the rows it rewrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import dagster as dg

from mesh_assets.automation.delta_log import Seen
from mesh_assets.graph.resolve import Table

THROUGH_VERSION, THROUGH_MS, THROUGH_FILES_MS = "observed_through_version", "observed_through_ms", "observed_files_ms"
"""Event metadata: how far the log was read when the event was reported (where a later first tick starts)."""
ROWS = "dagster/row_count"
PAGE = 1000


class Reports(Protocol):
    """Earlier reports of a table: none (a bare tick) or an instance's (:class:`InstanceReports`)."""

    def through(self, table: Table) -> Seen | None:
        """How far the last report of ``table`` read its log; None when it was never reported."""
        ...

    def rows(self, table: Table, keys: Iterable[str | None]) -> dict[str | None, int | None]:
        """The rows each partition held when last reported (0: never reported; None: unknown)."""
        ...

    def reported(self, table: Table) -> dict[str | None, int | None] | None:
        """Every partition ever reported, with its rows then; None when nothing is known of earlier reports."""
        ...


class NoReports:
    """A tick that knows no earlier reports: every earlier row count is unknown."""

    def through(self, table: Table) -> Seen | None:
        return None

    def rows(self, table: Table, keys: Iterable[str | None]) -> dict[str | None, int | None]:
        return dict.fromkeys(keys)

    def reported(self, table: Table) -> dict[str | None, int | None] | None:
        return None


def _rows(record: dg.EventLogRecord) -> int | None:
    event = record.asset_materialization
    value = event.metadata.get(ROWS) if event else None
    return None if value is None else value.value


class InstanceReports:
    """The reports ``instance`` holds: one query per partition a tick reports, and a scan of the table's
    reports only when its log was cleaned up past the cursor."""

    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance

    def through(self, table: Table) -> Seen | None:
        event = self.instance.get_latest_materialization_event(table.key)
        metadata = event.asset_materialization.metadata if event and event.asset_materialization else {}
        if THROUGH_VERSION not in metadata:
            return None
        committed, files = metadata.get(THROUGH_MS), metadata.get(THROUGH_FILES_MS)
        return Seen(
            metadata[THROUGH_VERSION].value, committed.value if committed else None, files.value if files else None
        )

    def rows(self, table: Table, keys: Iterable[str | None]) -> dict[str | None, int | None]:
        out: dict[str | None, int | None] = {}
        for key in keys:
            where = table.key if key is None else dg.AssetRecordsFilter(table.key, asset_partitions=[key])
            records = self.instance.fetch_materializations(where, limit=1).records
            out[key] = _rows(records[0]) if records else 0
        return out

    def reported(self, table: Table) -> dict[str | None, int | None] | None:
        out: dict[str | None, int | None] = {}
        cursor = None
        while True:  # newest first: a partition's first record is its latest report
            page = self.instance.fetch_materializations(table.key, limit=PAGE, cursor=cursor)
            for record in page.records:
                out.setdefault(record.partition_key, _rows(record))
            if not page.has_more:
                return out
            cursor = page.cursor
