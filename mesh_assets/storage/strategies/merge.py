"""Kind ``merge``: an upsert by ``unique_key`` in one ``MERGE``.

The run's rows are first reduced to one per key: the greatest ``sequence_by``, then the row of the latest
partition of the run (rows of a key with no way to order them were refused by the kind's ``unique_key`` check
before).
A matched row is updated only where a value differs (and, with ``sequence_by``, only by a row at least as new
as the table's), deleted where ``delete`` holds, and a new key inserted unless it is a delete; a ``MERGE`` that
changes nothing commits nothing. ``within_last`` adds the table's partitions the run may touch to the match,
so Delta skips the files of older ones.

"Only where a value differs" is decided before the ``MERGE`` when the rows are small enough to broadcast: the
rows equal to the table's are taken out of the source by a join that broadcasts them over one scan of the
table (joined by the key, the values compared only where it matches), and the ``MERGE`` updates every row it
matches. As a condition of the ``MERGE`` itself it made Delta
read every column of the table to join it with the source, which Spark then shuffles and sorts whole (a
sort-merge join; 1.68x a ``MERGE`` without the condition at 2M rows, ``BENCHMARKS.md``); without it Delta reads
the table's keys alone and broadcasts them."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mesh_assets.model.kinds import Merge
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.strategies.merging import (
    broadcastable,
    keys_match,
    merge_commit,
    quoted,
    same_keys,
    same_row,
    same_values,
)
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import WriteResult

DELETE = "__mesh_delete"
"""The source's column that says a row deletes its key (the kind's ``delete`` condition, evaluated once)."""


def latest_per_key(rows: DataFrame, keys: tuple[str, ...], order: list[str]) -> DataFrame:
    """One row per key: the first by ``order`` (each column descending, nulls last)."""
    if not order:
        return rows
    ranked = Window.partitionBy(*[F.col(quoted(k)) for k in keys]).orderBy(
        *[F.col(quoted(c)).desc_nulls_last() for c in order]
    )
    return rows.withColumn("__mesh_rank", F.row_number().over(ranked)).where("__mesh_rank = 1").drop("__mesh_rank")


class MergeRows:
    def __init__(self, kind: Merge) -> None:
        self.kind = kind

    def order(self, target: Target) -> list[str]:
        """What decides between rows of one key: ``sequence_by``, then the later partition. The sequence comes
        first, so a range applies what its partitions applied one by one would (a late row landed with a later
        partition never wins over a newer one of an earlier partition)."""
        order = [target.partition_column] if target.partitions is not None and target.partition_column else []
        return ([self.kind.sequence_by] if self.kind.sequence_by else []) + order

    def source(self, rows: DataFrame, target: Target) -> DataFrame:
        latest = latest_per_key(rows, self.kind.unique_key, self.order(target))
        if self.kind.delete is None:
            return latest
        return latest.withColumn(DELETE, F.coalesce(F.expr(self.kind.delete), F.lit(False)))

    def create(self, rows: DataFrame, target: Target) -> DataFrame:
        source = self.source(rows, target)
        return source.where(~F.col(DELETE)).drop(DELETE) if self.kind.delete else source

    def commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        kind = self.kind
        stored = list(staged.columns)
        held = set(stored)
        if version_or_none(target.location, target.s3) is not None:
            held = set(spark.read.format("delta").load(target.location).columns)
        on = keys_match(kind.unique_key)
        if kind.within_last is not None and target.partitions is not None and target.partition_column:
            oldest = target.partitions.widen(kind.within_last).start
            on += f" AND {quoted(target.partition_column, 't')} >= {target.partitions.grain.sql_literal(oldest)}"
        newer = f" AND {quoted(kind.sequence_by, 's')} >= {quoted(kind.sequence_by, 't')}" if kind.sequence_by else ""
        differs = f"NOT ({same_row(stored)})" if set(stored) <= held else "TRUE"
        filtered = differs != "TRUE" and broadcastable(staged)
        if filtered:
            differs = "TRUE"  # the source holds only rows that differ from the table's (:meth:`differing`)
        if kind.delete is None:
            update, insert, keep, drop = "UPDATE SET *", "INSERT *", "", ""
        else:
            # A target column unqualified: Delta resolves ``t.<column>`` only for columns the table has, and
            # schema evolution adds a new one only when it is named alone.
            update = "UPDATE SET " + ", ".join(f"{quoted(c)} = {quoted(c, 's')}" for c in stored)
            insert = f"INSERT ({', '.join(map(quoted, stored))}) VALUES ({', '.join(quoted(c, 's') for c in stored)})"
            keep, drop = f" AND NOT s.{DELETE}", f"WHEN MATCHED AND s.{DELETE}{newer} THEN DELETE "

        def statement(table: str, view: str) -> str:
            return (
                f"MERGE INTO {table} AS t USING {view} AS s ON {on} {drop}"
                f"WHEN MATCHED AND {differs}{newer}{keep} THEN {update} "
                f"WHEN NOT MATCHED{keep} THEN {insert}"
            )

        return merge_commit(
            spark,
            staged,
            target,
            create=lambda rows: self.create(rows, target),
            statement=statement,
            source=lambda rows: (
                self.differing(spark, self.source(rows, target), target, stored)
                if filtered
                else self.source(rows, target)
            ),
        )

    def differing(self, spark: SparkSession, source: DataFrame, target: Target, stored: list[str]) -> DataFrame:
        """``source`` without its rows equal to the table's row of their key (nulls equal), deletes kept: the
        rows the ``MERGE`` would match and leave as they are. The table is read where the ``MERGE`` matches
        (``within_last``'s partitions), the source broadcast over it."""
        table = spark.read.format("delta").load(target.location)
        kind = self.kind
        if kind.within_last is not None and target.partitions is not None and target.partition_column:
            oldest = target.partitions.widen(kind.within_last).start
            table = table.where(f"{quoted(target.partition_column)} >= {target.partitions.grain.sql_literal(oldest)}")
        compared = [c for c in stored if c not in kind.unique_key]
        values = [F.col(quoted(c)).alias(f"__mesh_v{i}") for i, c in enumerate([*kind.unique_key, *compared])]
        rows = source.where(~F.col(DELETE)) if kind.delete else source
        width = len(kind.unique_key)
        equal = table.select(*[F.col(quoted(c)) for c in [*kind.unique_key, *compared]]).join(
            F.broadcast(rows.select(*values)),
            same_keys([F.col(quoted(k)) for k in kind.unique_key], [F.col(f"__mesh_v{i}") for i in range(width)])
            & same_values(
                [F.col(quoted(c)) for c in compared], [F.col(f"__mesh_v{width + i}") for i in range(len(compared))]
            ),
            "left_semi",
        )
        keys = [F.col(quoted(k)).alias(f"__mesh_k{i}") for i, k in enumerate(kind.unique_key)]
        found = same_keys(
            [F.col(quoted(k)) for k in kind.unique_key], [F.col(f"__mesh_k{i}") for i in range(len(kind.unique_key))]
        )
        if kind.delete:
            found = found & ~F.col(DELETE)
        return source.join(F.broadcast(equal.select(*keys)), found, "left_anti")
