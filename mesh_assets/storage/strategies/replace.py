"""Kinds ``partitions`` and ``full``: the run's rows replace its partitions (or the whole table) in one commit.

A write of days D1..Dn is one Delta commit with ``replaceWhere`` on the partition column, so a reader
sees either the old partitions or the new ones, never a mix; rerunning with the same input gives the same
rows (idempotent); an empty result leaves those partitions empty; other partitions are untouched.
Two first writes of a new table into different partitions both commit, though Delta fails the second.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as F

from mesh_assets.engine.session import scoped_conf
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import committed_rows, committed_version, version_or_none
from mesh_assets.storage.schema import ADDITIVE, SchemaRule, schema_options
from mesh_assets.storage.strategies.merging import creating_with, declared_properties
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import (
    CREATED_FIRST,
    WriteResult,
    partition_counts,
    replace_predicate,
    write_failed,
)


class Replace:
    """``partitions`` and ``full``: what :func:`commit` does with a target."""

    def commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        declared_properties(spark, target)
        with scoped_conf(spark, creating_with(target.properties)):
            return self._commit(spark, staged, target)

    def _commit(self, spark: SparkSession, staged: DataFrame, target: Target) -> WriteResult:
        return commit(
            spark,
            staged,
            target.location,
            partition_column=target.partition_column,
            partitions=target.partitions,
            region_column=target.region_column,
            publish=target.publish,
            commit_info=target.commit_info,
            name=target.name,
            counts=target.counts,
            rows_from_log=target.rows_from_log,
            schema=target.schema,
            s3=target.s3,
        )


def _into_table_created_meanwhile(
    spark: SparkSession,
    s3: S3Settings,
    writer: DataFrameWriter,
    exc: Exception,
    location: str,
    name: str,
    keys: Sequence[str],
    where: str | None,
) -> int | None:
    """Write once more into the table another writer created while this write tried to; the version it found.

    Both first writes of a table start from no table: the first commit creates it and Delta fails the other
    with a protocol or metadata conflict even when they wrote different partitions. When the other writer left
    no rows in this write's partitions (``where``), nothing conflicts and the same write commits into its table.
    """
    created = version_or_none(location, s3)
    if where is None or not spark.read.format("delta").load(location).where(where).isEmpty():
        rows = "" if where is None else " with rows of the same partitions"
        cause = f"another writer created the table{rows} first ({type(exc).__name__}); re-run to publish"
        raise write_failed(s3, exc, name, location, keys, None, cause) from exc
    try:
        writer.save(location)
    except Exception as again:
        raise write_failed(s3, again, name, location, keys, created) from again
    return created


def _by_partition(data: DataFrame, column: str, partitions: int) -> DataFrame:
    """``data`` rebalanced on its partition column when it spans several partitions.

    Staged rows keep the layout of the transformation's last shuffle, so every task holds rows of every
    partition and writes a small file into each: a year's backfill on four tasks wrote four files per day and
    took twice as long as with one. Rebalancing sends each partition's rows to one task, which Spark's adaptive
    execution splits into files of its advisory size when a partition is large. One partition is written as
    it is: its files are at most one per task, and a shuffle would only add a stage."""
    return data.hint("rebalance", column) if partitions > 1 else data


def commit(
    spark: SparkSession,
    staged: DataFrame,
    location: str,
    *,
    partition_column: str | None,
    partitions: PartitionRange | None,
    region_column: str | None = None,
    publish: Sequence[datetime] | None = None,
    commit_info: dict[str, str] | None = None,
    name: str | None = None,
    counts: Mapping[str, int] | None = None,
    rows_from_log: bool = False,
    schema: SchemaRule = ADDITIVE,
    s3: S3Settings,
) -> WriteResult:
    """Publish staged rows in one Delta commit (an object store's reached with ``s3``).

    With ``partitions`` the commit replaces exactly ``publish`` (default: the whole range) and drops staged
    rows of other partitions; without, it replaces the whole table. ``counts`` are the staged rows per
    partition key (the whole table's under any one key when unpartitioned), when the caller already has them;
    with ``rows_from_log`` and no ``counts`` they are read after the commit from the files it added (the write
    computes the rows once), else a job counts them before it.
    A region's range (``partitions.region``) is partitioned and replaced by ``region_column`` as well: its dates of
    that region alone, in the same commit.
    A failed commit raises :class:`WriteFailed` naming ``name`` (default: the location) and the partitions.
    A schema change ``schema`` does not allow raises :class:`SchemaChangeRefused` before anything is written;
    a rebuild (``schema.rebuild``) replaces the whole table, and its schema, with the published partitions.
    """
    published: dict[str, int] = {}
    keys: list[str] = []
    if partitions is not None and partition_column is not None:
        chosen = list(publish) if publish is not None else partitions.values()
        keys = sorted(partitions.grain.key(v) for v in chosen)
        known = counts
        if known is None and not rows_from_log:
            known = partition_counts(staged, partition_column, partitions)
        published = {k: known.get(k, 0) for k in keys} if known is not None else {}
        if not chosen:
            return WriteResult(location, None, 0, {}, staged.schema)
        data = staged
        if publish is not None:
            literals = [partitions.literal(v) for v in chosen]
            data = staged.where(F.col(partition_column).isin(literals))
        writer = (
            _by_partition(data, partition_column, len(chosen))
            .write.format("delta")
            .mode("overwrite")
            .partitionBy(partition_column, *([region_column] if region_column else []))
        )
        if not schema.rebuild:  # a rebuild replaces the whole table: the others would be dropped (checked below)
            where = replace_predicate(partition_column, partitions, chosen, region_column=region_column)
            writer = writer.option("replaceWhere", where)
        rows = sum(published.values())
    else:
        writer = staged.write.format("delta").mode("overwrite")
        rows = sum(counts.values()) if counts is not None else 0 if rows_from_log else staged.count()
    metadata = json.dumps(commit_info, sort_keys=True) if commit_info else None
    if metadata:
        writer = writer.option("userMetadata", metadata)
    before = version_or_none(location, s3)
    if before is not None:  # the published schema decides what this write may change in it
        options = schema_options(
            spark,
            staged.schema,
            location,
            name or location,
            schema,
            partition_column=partition_column,
            partitions=partitions,
        )
        writer = writer.options(**options)
    again = None
    try:
        writer.save(location)
    except Exception as exc:
        if before is not None or not isinstance(exc, CREATED_FIRST):
            raise write_failed(s3, exc, name or location, location, keys, before) from exc
        ours = (
            replace_predicate(partition_column, partitions, publish, region_column=region_column)
            if partitions is not None and partition_column
            else None
        )
        before = _into_table_created_meanwhile(spark, s3, writer, exc, location, name or location, keys, ours)
        again = type(exc).__name__
    version = committed_version(location, metadata, s3, before)
    if rows_from_log and counts is None:
        logged = logged_rows(spark, location, version, s3, partition_column, partitions)
        published = {k: logged.get(k, 0) for k in keys}
        rows = sum(published.values()) if keys else sum(logged.values())
    return WriteResult(location, version, rows, published, staged.schema, written_again_after=again)


def logged_rows(
    spark: SparkSession,
    location: str,
    version: int,
    s3: S3Settings,
    column: str | None,
    partitions: PartitionRange | None,
) -> dict[str, int]:
    """Rows per partition key of ``partitions`` at ``version``: the log's record counts, else a query of that
    version (a writer that kept no stats)."""
    counts = committed_rows(location, version, s3, column, partitions)
    if counts is not None:
        return counts
    table = spark.read.format("delta").option("versionAsOf", version).load(location)
    if partitions is None or column is None:
        return {"*": table.count()}
    after = partitions.literal(partitions.end_excluded())
    value = F.col(column)
    within = table.where((value >= F.lit(partitions.literal(partitions.start))) & (value < F.lit(after)))
    return partition_counts(within, column, partitions)
