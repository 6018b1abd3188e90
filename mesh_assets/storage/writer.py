"""Partition writes: stage, audit, then atomically replace exactly the partitions being published.

A write of days D1..Dn is one Delta commit with ``replaceWhere`` on the partition column, so a reader
sees either the old partitions or the new ones, never a mix; rerunning with the same input gives the same
rows (idempotent); an empty result leaves those partitions empty; other partitions are untouched.
A write that fails (full disk, a concurrent commit to the same partitions, a killed job) commits nothing:
:class:`WriteFailed` names the table, the partitions, the underlying cause and the version readers still see.
Two first writes of a new table into different partitions both commit, though Delta fails the second.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from delta import exceptions as delta_errors
from pyspark import StorageLevel
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mesh_assets.model.names import check_identifier
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import committed_rows, committed_version, version_or_none
from mesh_assets.storage.schema import ADDITIVE, SchemaRule, schema_options

CONFLICTS = (
    delta_errors.ConcurrentAppendException,
    delta_errors.ConcurrentDeleteDeleteException,
    delta_errors.ConcurrentDeleteReadException,
    delta_errors.ConcurrentTransactionException,
    delta_errors.ConcurrentWriteException,
    delta_errors.DeltaConcurrentModificationException,
    delta_errors.MetadataChangedException,
    delta_errors.ProtocolChangedException,
)
"""Delta's commit conflicts: another transaction committed first to what this one read."""
CREATED_FIRST = (delta_errors.MetadataChangedException, delta_errors.ProtocolChangedException)
"""How Delta fails the second of two first writes of a table, whatever partitions each wrote."""


class WriteFailed(RuntimeError):
    """A Delta write that committed nothing; the message says why and which version readers still see.

    ``about_storage``: the cause is the storage's (the OS, the object store, a conflict in Delta's log), whose
    words name files and writers; otherwise it is the rows' (Spark failing to compute them), whose words may
    quote a value.
    """

    def __init__(self, what: str, cause: str, state: str, about_storage: bool):
        super().__init__(f"writing {what} failed: {cause}; {state}")
        self.what, self.state, self.about_storage = what, state, about_storage

    def with_cause(self, cause: str) -> str:
        """The message with another cause: a classified table's write names the error's class, not its text."""
        return f"writing {self.what} failed: {cause}; {self.state}"


@dataclass(frozen=True)
class WriteResult:
    location: str
    version: int | None
    rows: int
    partition_rows: dict[str, int]
    schema: StructType
    written_again_after: str | None = None
    """The conflict this write recovered from (another writer created the table first), when it did."""


def replace_predicate(column: str, partitions: PartitionRange, only: Sequence[datetime] | None = None) -> str:
    """The ``replaceWhere`` predicate (Delta accepts only a SQL string here) for a range or a subset of it."""
    col = check_identifier(column)
    values = sorted(only) if only is not None else partitions.values()
    grain = partitions.grain
    contiguous = all(b - a == grain.step for a, b in itertools.pairwise(values))
    if contiguous and values:
        return f"`{col}` >= {grain.sql_literal(values[0])} AND `{col}` <= {grain.sql_literal(values[-1])}"
    return f"`{col}` IN ({', '.join(grain.sql_literal(v) for v in values)})"


def _innermost(exc: BaseException) -> Any:
    """The innermost JVM cause of a Spark error (the OS's or Delta's); None for a Python error."""
    cause = getattr(exc, "java_exception", None)
    for _ in range(32):
        inner = cause.getCause() if cause is not None else None
        if inner is None:
            break
        cause = inner
    return cause


def failure_cause(exc: BaseException) -> str:
    """Why a write failed, in the words of its innermost cause (the OS or Delta), not Spark's wrappers."""
    if isinstance(exc, CONFLICTS):
        return f"another write committed to the same partitions first ({type(exc).__name__}); re-run to publish"
    cause = _innermost(exc)
    if cause is None:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return str(cause.toString())


def _about_storage(exc: BaseException) -> bool:
    """Whether a write failed for its storage: a conflict, or an I/O error (``java.io.IOException`` and its
    kind: a full disk, a denied bucket), rather than for rows Spark could not compute."""
    if isinstance(exc, CONFLICTS):
        return True
    cause = _innermost(exc)
    kind = cause.getClass() if cause is not None else None
    while kind is not None:
        if kind.getName() == "java.io.IOException":
            return True
        kind = kind.getSuperclass()
    return False


def _failed(
    s3: S3Settings,
    exc: Exception,
    name: str,
    location: str,
    keys: Sequence[str],
    before: int | None,
    cause: str | None = None,
) -> WriteFailed:
    listed = ", ".join(keys) if len(keys) <= 5 else f"{keys[0]}..{keys[-1]} ({len(keys)} partitions)"
    what = f"{name} partition{'s' if len(keys) > 1 else ''} {listed}" if keys else name
    try:
        after = version_or_none(location, s3)
    except Exception:
        after = before
    if after is None:
        state = "the table was not created"
    elif after == before:
        state = f"the table is unchanged at version {after}"
    else:
        state = f"nothing of this write was committed; the table is at version {after}, committed by another writer"
    return WriteFailed(what, cause or failure_cause(exc), state, cause is not None or _about_storage(exc))


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
        raise _failed(s3, exc, name, location, keys, None, cause) from exc
    try:
        writer.save(location)
    except Exception as again:
        raise _failed(s3, again, name, location, keys, created) from again
    return created


def stage(df: DataFrame, keep: bool = True) -> DataFrame:
    """Mark ``df`` to be computed once into executor storage (``keep``): invisible to readers, re-used by
    checks and the write. Its first action fills the cache; Mesh makes that the audit's tally, so staging costs
    no job. Blocks are kept as Spark's columnar batches in the heap's storage fraction, and those that do not fit
    spill to local disk, so a long range never has to fit in memory. ``_DESER``: PySpark's plain
    ``MEMORY_AND_DISK`` serializes the already encoded batches once more (a copy of every row) before keeping
    them. Without ``keep`` the rows are computed again by each reader (see :mod:`mesh_assets.run.staging`)."""
    return df.persist(StorageLevel.MEMORY_AND_DISK_DESER) if keep else df


def partition_counts(staged: DataFrame, column: str, partitions: PartitionRange) -> dict[str, int]:
    """Rows per partition key, every key of ``partitions`` included (a job; pass known counts to skip it)."""
    counts = {k: 0 for k in partitions.keys()}
    for row in staged.groupBy(F.date_format(column, partitions.grain.spark_pattern).alias("k")).count().collect():
        counts[row["k"]] = row["count"]
    return counts


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
            .partitionBy(partition_column)
        )
        if not schema.rebuild:  # a rebuild replaces the whole table: the others would be dropped (checked below)
            writer = writer.option("replaceWhere", replace_predicate(partition_column, partitions, chosen))
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
            raise _failed(s3, exc, name or location, location, keys, before) from exc
        ours = (
            replace_predicate(partition_column, partitions, publish)
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
    assert partitions.grain.step is not None
    after = partitions.literal(partitions.end + partitions.grain.step)
    value = F.col(column)
    within = table.where((value >= F.lit(partitions.literal(partitions.start))) & (value < F.lit(after)))
    return partition_counts(within, column, partitions)
