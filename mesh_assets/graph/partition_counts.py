"""Partition counts the Dagster UI can show: a warning, not an error, for tables that outgrow it.

Dagster lists every partition of an asset on its pages and in its backfill dialog; past a few tens of
thousands the asset page and the partition picker load slowly. An hourly table that goes back years gets there
(2021-06-01 to 2026 is about 48,000 hours), so ``mesh validate`` warns before a team ships one, naming the
table, its file and line, its count and the start date that would keep it under the threshold. A table whose
partitions stop (``end_date``: a retired feed, a fixed history) counts only up to its end.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from mesh_assets.graph.resolve import Table
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.grain import midnight

MAX_PARTITIONS = 25_000
"""Partitions per asset above which ``mesh validate`` warns (about 2.8 years of hours, 68 years of days)."""


def partition_count(table: Table, now: datetime) -> int:
    """How many partitions Dagster shows for ``table`` at ``now``: each date (or hour) from its start date
    up to the last complete one (or its end date), times its regions."""
    if not table.grain.partitioned:
        return 0
    grain = table.grain
    last = grain.floor(now)
    if table.end_date is not None:
        last = min(last, midnight(table.end_date))
    first = grain.floor(midnight(table.start_date))
    first = first if first == midnight(table.start_date) else grain.next(first)  # Dagster's first full partition
    return grain.count_between(first, last) * max(1, len(table.regions))


def partition_count_warnings(
    tables: Iterable[Table], now: datetime | None = None, limit: int = MAX_PARTITIONS
) -> list[SpecError]:
    """A warning for each table with more than ``limit`` partitions at ``now`` (default: the current UTC time)."""
    now = now or datetime.now(UTC)
    warnings = []
    for table in tables:
        count = partition_count(table, now)
        if count <= limit:
            continue
        latest_start = table.grain.shift(now, -(limit // max(1, len(table.regions))))
        first_day = latest_start.date() + (latest_start != midnight(latest_start.date())) * timedelta(days=1)
        warnings.append(
            SpecError(
                relative(table.source_file),
                table.line,
                "start_date",
                f"{table.ref} has {count:,} {table.grain} partitions since {table.start_date}, more than the "
                f"{limit:,} Dagster's UI lists quickly; a start_date on or after {first_day} stays "
                "under it (a feed that has stopped can declare its end_date instead)",
            )
        )
    return sorted(warnings)
