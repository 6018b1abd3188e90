"""Kind ``merge``: an upsert by ``unique_key`` in one ``MERGE``.

The run's rows are first reduced to one per key: the greatest ``sequence_by``, then the row of the latest
partition of the run (rows of a key with no way to order them were refused by the kind's ``unique_key`` check
before).
A matched row is updated only where a value differs (and, with ``sequence_by``, only by a row at least as new
as the table's), deleted where ``delete`` holds, and a new key inserted unless it is a delete; a ``MERGE`` that
changes nothing commits nothing. ``within_last`` adds the table's partitions the run may touch to the match,
so Delta skips the files of older ones.

"Only where a value differs" is the ``MERGE``'s own condition, so an equal row is neither rewritten nor counted,
and a re-run of the same input commits nothing. It makes Delta read the table's compared columns where a
``MERGE`` that updates every match reads its keys alone; measured at 20M rows, that costs less than taking the
equal rows out of the source first (one more read of the table) or broadcasting the source
(``bench/FINDINGS.md``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mesh_assets.model.kinds import Merge
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.strategies.merging import (
    keys_match,
    merge_commit,
    quoted,
    same_row,
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
        # Every column compared: the keys are equal where rows match, and a table of keys alone then updates none.
        differs = f" AND NOT ({same_row(stored)})" if set(stored) <= held else ""
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
                f"WHEN MATCHED{differs}{newer}{keep} THEN {update} "
                f"WHEN NOT MATCHED{keep} THEN {insert}"
            )

        return merge_commit(
            spark,
            staged,
            target,
            create=lambda rows: self.create(rows, target),
            statement=statement,
            source=lambda rows: self.source(rows, target),
        )
