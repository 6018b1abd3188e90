"""Partition writes: stage, audit, then atomically replace exactly the partitions being published.

A write of days D1..Dn is one Delta commit with ``replaceWhere`` on the partition column, so a reader
sees either the old partitions or the new ones, never a mix; rerunning with the same input gives the same
rows (idempotent); an empty result leaves those partitions empty; other partitions are untouched.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mesh_assets.spec.names import check_identifier
from mesh_assets.storage.delta import latest_version
from mesh_assets.storage.partitions import PartitionRange, format_key, step


@dataclass(frozen=True)
class WriteResult:
    location: str
    version: int | None
    rows: int
    partition_rows: dict[str, int]
    schema: StructType


def _sql_literal(value: date | datetime) -> str:
    """A validated date/timestamp as a SQL literal; only typed values reach here, never user text."""
    if isinstance(value, datetime):
        return f"TIMESTAMP'{value:%Y-%m-%d %H:%M:%S}'"
    if isinstance(value, date):
        return f"DATE'{value:%Y-%m-%d}'"
    raise TypeError(f"partition bound must be a date or datetime, got {type(value).__name__}")


def replace_predicate(column: str, partitions: PartitionRange, only: Sequence[datetime] | None = None) -> str:
    """The ``replaceWhere`` predicate (Delta accepts only a SQL string here) for a range or a subset of it."""
    col = check_identifier(column)
    values = sorted(only) if only is not None else partitions.values()
    contiguous = all(b - a == step(partitions.kind) for a, b in itertools.pairwise(values))
    if contiguous and values:
        lo, hi = partitions.literal(values[0]), partitions.literal(values[-1])
        return f"`{col}` >= {_sql_literal(lo)} AND `{col}` <= {_sql_literal(hi)}"
    return f"`{col}` IN ({', '.join(_sql_literal(partitions.literal(v)) for v in values)})"


def stage(df: DataFrame) -> DataFrame:
    """Compute ``df`` once into executor storage: invisible to readers, re-used by checks and the write."""
    staged = df.persist(StorageLevel.MEMORY_AND_DISK)
    staged.count()
    return staged


def partition_counts(staged: DataFrame, column: str, partitions: PartitionRange) -> dict[str, int]:
    counts = {k: 0 for k in partitions.keys()}
    fmt = "yyyy-MM-dd" if partitions.kind == "daily" else "yyyy-MM-dd-HH:mm"
    for row in staged.groupBy(F.date_format(column, fmt).alias("k")).count().collect():
        counts[row["k"]] = row["count"]
    return counts


def commit(
    spark: SparkSession,
    staged: DataFrame,
    location: str,
    *,
    partition_column: str | None,
    partitions: PartitionRange | None,
    publish: Sequence[datetime] | None = None,
    commit_info: dict[str, str] | None = None,
) -> WriteResult:
    """Publish staged rows in one Delta commit.

    With ``partitions`` the commit replaces exactly ``publish`` (default: the whole range) and drops staged
    rows of other partitions; without, it replaces the whole table.
    """
    counts: dict[str, int] = {}
    if partitions is not None and partition_column is not None:
        chosen = list(publish) if publish is not None else partitions.values()
        keys = {format_key(v, partitions.kind) for v in chosen}
        counts = {k: n for k, n in partition_counts(staged, partition_column, partitions).items() if k in keys}
        if not chosen:
            return WriteResult(location, None, 0, {}, staged.schema)
        data = staged
        if publish is not None:
            literals = [partitions.literal(v) for v in chosen]
            data = staged.where(F.col(partition_column).isin(literals))
        writer = (
            data.write.format("delta")
            .mode("overwrite")
            .partitionBy(partition_column)
            .option("replaceWhere", replace_predicate(partition_column, partitions, chosen))
        )
        rows = sum(counts.values())
    else:
        writer = staged.write.format("delta").mode("overwrite")
        rows = staged.count()
    if commit_info:
        writer = writer.option("userMetadata", json.dumps(commit_info, sort_keys=True))
    writer.save(location)
    return WriteResult(location, latest_version(spark, location), rows, counts, staged.schema)
