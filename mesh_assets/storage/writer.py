"""Partition writes: stage, audit, then atomically replace exactly the partitions being written.

A write of days D1..Dn is one Delta commit with ``replaceWhere`` on the partition column, so a reader
sees either the old partitions or the new ones, never a mix; rerunning with the same input is a no-op in
effect (idempotent); an empty result leaves those partitions empty; other partitions are untouched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime

from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mesh_assets.spec.names import check_identifier
from mesh_assets.storage.partitions import PartitionRange


@dataclass(frozen=True)
class WriteResult:
    location: str
    version: int
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


def replace_predicate(column: str, partitions: PartitionRange) -> str:
    """The ``replaceWhere`` predicate for a partition range (Delta accepts only a SQL string here)."""
    col = check_identifier(column)
    lo, hi = partitions.literal(partitions.start), partitions.literal(partitions.end)
    return f"`{col}` >= {_sql_literal(lo)} AND `{col}` <= {_sql_literal(hi)}"


def latest_version(spark: SparkSession, location: str) -> int:
    return DeltaTable.forPath(spark, location).history(1).collect()[0]["version"]


def stage(df: DataFrame) -> DataFrame:
    """Compute ``df`` once into executor storage: invisible to readers, re-used by checks and the write."""
    staged = df.persist(StorageLevel.MEMORY_AND_DISK)
    staged.count()
    return staged


def publish(
    spark: SparkSession,
    df: DataFrame,
    location: str,
    *,
    partition_column: str | None,
    partitions: PartitionRange | None,
    audit: Callable[[DataFrame], None] | None = None,
    commit_info: dict[str, str] | None = None,
) -> WriteResult:
    """Stage ``df``, run ``audit`` on the staged data (it raises to stop the publish), then commit it.

    With ``partitions`` the commit replaces exactly that range; without, it replaces the whole table.
    """
    staged = stage(df)
    try:
        if audit is not None:
            audit(staged)
        writer = staged.write.format("delta").mode("overwrite")
        if commit_info:
            writer = writer.option("userMetadata", json.dumps(commit_info, sort_keys=True))
        if partitions is not None and partition_column is not None:
            writer = writer.partitionBy(partition_column).option(
                "replaceWhere", replace_predicate(partition_column, partitions)
            )
        writer.save(location)
        counts: dict[str, int] = {}
        if partitions is not None and partition_column is not None:
            counts = {k: 0 for k in partitions.keys()}
            fmt = "yyyy-MM-dd" if partitions.kind == "daily" else "yyyy-MM-dd-HH:mm"
            for row in staged.groupBy(F.date_format(partition_column, fmt).alias("k")).count().collect():
                counts[row["k"]] = row["count"]
            rows = sum(counts.values())
        else:
            rows = staged.count()
        return WriteResult(location, latest_version(spark, location), rows, counts, staged.schema)
    finally:
        staged.unpersist()
