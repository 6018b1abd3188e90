"""Kind ``append``: events inserted once, never updated or deleted.

The commit is an insert-only ``MERGE``: a row the table already holds (by ``unique_key``, else by every column)
is left alone, so a re-run of a range inserts nothing it inserted before (and commits nothing), while late
events of an earlier partition are added. A partitioned table is matched within the run's partitions only, so
a run reads no other partition's files."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from mesh_assets.model.kinds import Append
from mesh_assets.storage.strategies.merging import keys_match, merge_commit
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import WriteResult, replace_predicate


class AppendRows:
    def __init__(self, kind: Append) -> None:
        self.kind = kind

    def commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        on = keys_match(self.kind.unique_key or staged.columns)
        if target.partitions is not None and target.partition_column is not None and target.chosen():
            on += " AND " + replace_predicate(target.partition_column, target.partitions, target.chosen(), "t")

        def statement(table: str, view: str) -> str:
            return f"MERGE INTO {table} AS t USING {view} AS s ON {on} WHEN NOT MATCHED THEN INSERT *"

        return merge_commit(
            spark, staged, target, create=lambda rows: rows, statement=statement, partition_by=target.partition_column
        )
