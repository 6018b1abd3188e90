"""The commit the keyed kinds share: a table's first write creates it, every later run is one ``MERGE``.

Keyed tables keep deletion vectors on (``delta.enableDeletionVectors``): a ``MERGE`` then marks the rows it
replaces instead of rewriting their files, and a ``MERGE`` that changes nothing commits nothing, so a re-run of
the same input leaves the table at its version. The ``MERGE`` is SQL over a temporary view of the source rows,
which every engine runs (Delta's Python ``DeltaTable`` has no Spark Connect client for Spark 4.2). Mesh finds
its commit in the log by the commit's ``userMetadata``, set for the statement alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mesh_assets.engine.session import scoped_conf
from mesh_assets.storage.delta import path_identifier, version_or_none
from mesh_assets.storage.lake import history, open_table
from mesh_assets.storage.schema import schema_options
from mesh_assets.storage.strategies.target import Target
from mesh_assets.storage.writer import CREATED_FIRST, WriteResult, partition_counts, write_failed

KEYED_PROPERTIES = {"delta.enableDeletionVectors": "true"}
"""Table properties of every keyed table, set by its first write."""
METRICS = {
    "inserted": ("numTargetRowsInserted", "numOutputRows"),
    "updated": ("numTargetRowsUpdated",),
    "deleted": ("numTargetRowsDeleted",),
}
"""Each change count and the ``operationMetrics`` of a ``MERGE`` (or of the first write) that hold it."""

Statement = Callable[[str, str], str]
"""The ``MERGE`` statement into a table (its SQL identifier) from a view (its name)."""


def commit_of(location: str, target: Target, after: int | None) -> dict[str, Any] | None:
    """This write's commit in the table's log, found by its metadata among the commits after ``after``."""
    table = open_table(location, target.s3)
    if table is None or target.metadata is None:
        return None
    latest = table.version()
    oldest = -1 if after is None else after
    for info in history(table, max(latest - oldest, 1)):
        if info["version"] > oldest and info.get("userMetadata") == target.metadata:
            return info
    return None


def change_counts(info: Mapping[str, Any] | None) -> dict[str, int]:
    """Rows inserted, updated and deleted by a commit, from its ``operationMetrics``."""
    metrics = (info or {}).get("operationMetrics") or {}
    out = {}
    for name, keys in METRICS.items():
        found = next((metrics[k] for k in keys if k in metrics), None)
        out[name] = int(found) if found is not None else 0
    return out


def declared_properties(spark: SparkSession, target: Target) -> None:
    """Set the output's declared table properties (its change feed) on its existing table when it lacks them:
    one ``ALTER TABLE`` commit, made once, when the output turned them on after the table's first write."""
    if not target.properties:
        return
    table = open_table(target.location, target.s3)
    if table is None:
        return
    held = table.metadata().configuration
    missing = {k: v for k, v in target.properties.items() if held.get(k) != v}
    if missing:
        listed = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(missing.items()))
        spark.sql(f"ALTER TABLE {path_identifier(target.location)} SET TBLPROPERTIES ({listed})")


def creating_with(properties: Mapping[str, str]) -> dict[str, str]:
    """The session defaults that give a table created meanwhile ``properties`` (``delta.x``: its default)."""
    return {f"spark.databricks.delta.properties.defaults.{k.removeprefix('delta.')}": v for k, v in properties.items()}


def merge_commit(
    spark: SparkSession,
    staged: DataFrame,
    target: Target,
    *,
    create: Callable[[DataFrame], DataFrame],
    statement: Statement,
    source: Callable[[DataFrame], DataFrame] = lambda rows: rows,
    partition_by: str | None = None,
) -> WriteResult:
    """Publish ``staged`` (its partitions that passed) into the keyed table at ``target``.

    Without a table (or for a rebuild), ``create(rows)`` is written as the table (its files partitioned by
    ``partition_by``, when given); else ``statement`` merges ``source(rows)`` into it. At most one commit; none
    when the ``MERGE`` changed no row."""
    rows = target.rows_of_chosen(staged)
    keys = target.keys()
    location, name = target.location, target.name
    before = version_or_none(location, target.s3)
    created_by_other = False
    if before is None or target.schema.rebuild:
        writer = create(rows).write.format("delta").mode("overwrite").options(**KEYED_PROPERTIES, **target.properties)
        if partition_by is not None:
            writer = writer.partitionBy(partition_by)
        if target.metadata:
            writer = writer.option("userMetadata", target.metadata)
        if before is not None:
            writer = writer.option("overwriteSchema", "true")
        try:
            writer.save(location)
        except Exception as exc:
            if before is not None or not isinstance(exc, CREATED_FIRST):
                raise write_failed(target.s3, exc, name, location, keys, before) from exc
            created_by_other = True  # another writer created the table first: merge into it
            before = version_or_none(location, target.s3)
    if before is not None and (created_by_other or not target.schema.rebuild):
        declared_properties(spark, target)
        _merge(spark, rows, create(rows).schema, target, before, statement, source)
    info = commit_of(location, target, before)
    version = info["version"] if info is not None else before
    counts = target.counts
    if counts is None and target.partitions is not None and target.partition_column is not None:
        counts = partition_counts(rows, target.partition_column, target.partitions)
    published = {k: (counts or {}).get(k, 0) for k in keys}
    total = sum(published.values()) if keys else sum((counts or {}).values()) if counts else rows.count()
    return WriteResult(
        location,
        version,
        total,
        published,
        spark.read.format("delta").load(location).schema,
        written_again_after="created by another writer" if created_by_other else None,
        changes=change_counts(info),
        committed=info is not None,
    )


def _merge(
    spark: SparkSession,
    rows: DataFrame,
    shape: StructType,
    target: Target,
    before: int,
    statement: Statement,
    source: Callable[[DataFrame], DataFrame],
) -> None:
    """``shape``: the rows as the table stores them, compared with its schema before anything is written."""
    options = schema_options(
        spark, shape, target.location, target.name, target.schema, partition_column=None, partitions=None
    )
    conf = {"spark.databricks.delta.commitInfo.userMetadata": target.metadata or ""}
    if options.get("mergeSchema") == "true":
        conf["spark.databricks.delta.schema.autoMerge.enabled"] = "true"
    view = f"mesh_source_{uuid.uuid4().hex[:12]}"
    source(rows).createOrReplaceTempView(view)
    try:
        with scoped_conf(spark, conf):
            spark.sql(statement(path_identifier(target.location), view))
    except Exception as exc:
        raise write_failed(target.s3, exc, target.name, target.location, target.keys(), before) from exc
    finally:
        spark.catalog.dropTempView(view)


def quoted(column: str, alias: str | None = None) -> str:
    """``column`` as a SQL identifier (of ``alias``'s table when given), whatever characters it holds."""
    name = "`" + column.replace("`", "``") + "`"
    return f"{alias}.{name}" if alias else name


def same_row(columns: list[str]) -> str:
    """True where the table's row ``t`` and the source's ``s`` hold the same values (nulls equal)."""
    return " AND ".join(f"{quoted(c, 't')} <=> {quoted(c, 's')}" for c in columns) or "TRUE"


def keys_match(keys: tuple[str, ...] | list[str]) -> str:
    """The ``MERGE`` condition matching rows by ``keys`` (nulls equal: a null key is a key like any other)."""
    return " AND ".join(f"{quoted(c, 't')} <=> {quoted(c, 's')}" for c in keys)


def same_keys(lefts: list[Column], rights: list[Column]) -> Column:
    """A join condition: each column of ``lefts`` equals its column of ``rights`` (nulls equal)."""
    cond = F.lit(True)
    for a, b in zip(lefts, rights, strict=True):
        cond = cond & a.eqNullSafe(b)
    return cond
