"""Compute one node's rows: each input read through the session's catalog, restricted to its window, then the
transformation (a PySpark function, or a SQL query whose table names are swapped for the windows' views).

Each input is read at the version it had when the run started: a Delta DataFrame reads the latest snapshot
on every action, so without it the audit and the write of one run could read different data when a writer
commits to an input meanwhile. Pinned, the rows are the same however often they are computed."""

from __future__ import annotations

import inspect
import json
import logging
from contextlib import AbstractContextManager, nullcontext
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.engine.session import is_connect
from mesh_assets.graph import access
from mesh_assets.graph.queries import bind_parameters, rewrite_tables, view_name
from mesh_assets.graph.resolve import Node, Read
from mesh_assets.model.errors import Refused
from mesh_assets.model.partitions import PartitionRange, read_region, window_range
from mesh_assets.model.product import PySparkTransformation, SqlTransformation
from mesh_assets.run.context import ProductContext
from mesh_assets.run.enclosure import enclosed, masked
from mesh_assets.storage.delta import version_or_none
from mesh_assets.storage.lake import history, open_table
from mesh_assets.storage.tables import TableNotFoundError, TableRegistry

Versions = dict[tuple[str, str], int]
"""The version each input is read at, by ``(domain, table)``."""


def input_versions(registry: TableRegistry, node: Node) -> Versions:
    """Each existing input's latest version, read once when the run computes (from the Delta log, no job)."""
    tables = {(read.table.domain, read.table.name) for read in node.reads}
    return {t: v for t in sorted(tables) if (v := version_or_none(registry.location(*t), registry.s3)) is not None}


CHANGE_FEED = "change_feed"
"""The key of a commit's ``userMetadata`` holding the upstream versions whose changes the run applied."""
PREIMAGE = "update_preimage"
FEED_COLUMNS = ("change_type", "commit_version", "commit_timestamp")
"""The Change Data Feed's columns as a ``changes`` window gives them (Delta names them with a leading ``_``)."""


def feed_versions(node: Node, versions: Versions) -> dict[str, int]:
    """The version of each input read by window ``changes`` that this run reads the feed up to (by ``ref``)."""
    return {
        read.table.ref: versions[(read.table.domain, read.table.name)]
        for read in node.reads
        if read.input.window.kind == "changes" and (read.table.domain, read.table.name) in versions
    }


def consumed(registry: TableRegistry, node: Node) -> dict[str, int]:
    """The upstream versions the output's latest run that committed had read the change feeds up to."""
    table = open_table(registry.location(node.table.domain, node.table.name), registry.s3)
    if table is None:
        return {}
    for info in history(table, 1000):
        recorded = json.loads(info.get("userMetadata") or "{}").get(CHANGE_FEED)
        if recorded:
            return json.loads(recorded)
    return {}


def read_changes(spark: SparkSession, registry: TableRegistry, node: Node, read: Read, versions: Versions) -> DataFrame:
    """What ``read``'s upstream changed after the version the output's last run consumed, up to its pinned
    version: its Change Data Feed without update pre-images, Delta's ``_change_type``, ``_commit_version`` and
    ``_commit_timestamp`` named ``change_type``, ``commit_version`` and ``commit_timestamp`` (a column name of a
    spec starts with a letter). Nothing consumed yet: the whole table at its pinned version, each row an
    ``insert`` of that version."""
    upstream = read.table
    location = registry.location(upstream.domain, upstream.name)
    pinned = versions.get((upstream.domain, upstream.name))
    if pinned is None:
        raise Refused(f"input {upstream.ref} has never been published")
    since = consumed(registry, node).get(upstream.ref)
    if since is None:
        snapshot = spark.read.format("delta").option("versionAsOf", pinned).load(location)
        return snapshot.select(
            "*",
            F.lit("insert").alias("change_type"),
            F.lit(pinned).cast("long").alias("commit_version"),
            F.lit(None).cast("timestamp").alias("commit_timestamp"),
        )
    feed = spark.read.format("delta").option("readChangeFeed", "true")
    start = min(since + 1, pinned)
    rows = feed.option("startingVersion", start).option("endingVersion", pinned).load(location)
    rows = rows.where(F.col("_change_type") != PREIMAGE) if since < pinned else rows.limit(0)  # limit: none since
    return rows.withColumnsRenamed({f"_{c}": c for c in FEED_COLUMNS})


def read_window(
    spark: SparkSession, registry: TableRegistry, read: Read, part: PartitionRange | None, versions: Versions
) -> DataFrame | None:
    """The input's rows that ``part``'s window reads (the whole table for ``all`` or an unpartitioned input), at
    its version in ``versions``; None for a product's own past before its table's first write (its first
    partition reads nothing)."""
    upstream = read.table
    try:
        name = registry.register(spark, upstream.domain, upstream.name)
    except TableNotFoundError as exc:
        if read.input.window.skips_current:
            return None
        raise Refused(f"input {upstream.ref} has never been published: {exc}") from None
    version = versions.get((upstream.domain, upstream.name))
    df = spark.table(name) if version is None else spark.read.option("versionAsOf", version).table(name)
    region = read_region(read.input.region, upstream.regions, part)
    if region is not None:
        df = df.where(F.col(upstream.region_column) == F.lit(region))
    rng = window_range(read.input.window, upstream.grain, part, region)
    if rng is None:
        return df
    col = F.col(upstream.partition_column)
    return df.where(col.between(F.lit(rng.literal(rng.start)), F.lit(rng.literal(rng.end))))


def _masked(df: DataFrame | None, node: Node, read: Read) -> DataFrame | None:
    """``read``'s rows as ``node``'s product may see them: ``pii`` columns masked unless its grant clears them."""
    masks = access.masks(node.domain, node.product.name, read.table)
    return masked(df, masks) if df is not None and masks else df


def _with_partition_column(
    df: DataFrame, column: str, part: PartitionRange, fill: bool, region_column: str | None = None
) -> DataFrame:
    """``df`` with its partition column typed (filled with the partition when absent), and a region's range's
    region column set to its region: a run of one region writes that region's partitions alone."""
    spark_type = part.grain.spark_type
    if part.region is not None and region_column is not None:
        df = df.withColumn(region_column, F.lit(part.region))
    if column in df.columns:
        return df.withColumn(column, F.col(column).cast(spark_type))
    if not fill:
        raise Refused(f"a range-aware transformation must return the partition column {column!r}")
    return df.withColumn(column, F.lit(part.literal(part.start)).cast(spark_type))


def transform(
    spark: SparkSession,
    registry: TableRegistry,
    node: Node,
    part: PartitionRange | None,
    log: logging.Logger,
    run_id: str,
    versions: Versions,
    withheld: tuple[str, ...] = (),
) -> DataFrame:
    """The node's output for ``part`` (one partition, or the range when range-aware), its inputs at ``versions``
    (another domain's masked for this product), a PySpark function run inside the enclosure
    (:mod:`mesh_assets.run.enclosure`; ``withheld``: the tables it may not read undeclared)."""
    t = node.transformation
    frames = {
        read.name: _masked(
            read_changes(spark, registry, node, read, versions)
            if read.input.window.kind == "changes"
            else read_window(spark, registry, read, part, versions),
            node,
            read,
        )
        for read in node.reads
    }
    enclosure = enclosed(spark, node, registry, withheld)
    return apply_transformation(spark, node.product.domain, t, node.sql, frames, part, log, run_id, enclosure)


def apply_transformation(
    spark: SparkSession,
    domain: str,
    t: PySparkTransformation | SqlTransformation,
    sql: str | None,
    frames: dict[str, DataFrame | None],
    part: PartitionRange | None,
    log: logging.Logger,
    run_id: str,
    enclosure: AbstractContextManager[object] | None = None,
) -> DataFrame:
    """``t``'s output for ``part`` from ``frames``, its inputs' rows by input name: the call a run makes, and the
    one a product's unit test makes on the rows it gives. A run's PySpark function runs inside ``enclosure`` (the
    run's, :mod:`mesh_assets.run.enclosure`); a unit test's rows are not the warehouse's and need none."""
    if isinstance(t, PySparkTransformation):
        kwargs: dict[str, Any] = dict(frames)
        if "context" in inspect.signature(t.fn).parameters:
            kwargs["context"] = ProductContext(spark, part, log, run_id)
        with enclosure or nullcontext():
            df = t.fn(**kwargs)
        if not isinstance(df, DataFrame):
            raise Refused(f"{t.fn.__name__}() returned {type(df).__name__}, not a DataFrame")
    else:
        assert sql is not None
        views = {}
        for name, inp in t.inputs.items():
            if name not in frames:
                continue  # an input that resolves to no table: governance refuses the product
            # The query names the table as its input is written (``sales.orders``); the pinned version's rows
            # (``sales.orders_v2``) are what the view holds.
            views[inp.ref(domain)] = view = view_name(*inp.target(domain))
            frame = frames[name]
            assert frame is not None  # governance: a SQL product never reads its own past
            frame.createOrReplaceTempView(view)
        args: dict[str, Any] = {}
        if part is not None:
            args = {"partition_start": part.literal(part.start), "partition_end": part.literal(part.end)}
            args |= {"starts_at": part.bounds(part.start)[0], "ends_at": part.bounds(part.end)[1]}
            if part.region is not None:
                args["region"] = part.region
        query = rewrite_tables(sql, views)
        df = spark.sql(bind_parameters(query, args)) if is_connect(spark) else spark.sql(query, args=args)
    if part is not None:
        output = t.output
        df = _with_partition_column(df, output.partition_column, part, not t.range_aware, output.region_column)
    return df


def compute(
    spark: SparkSession,
    registry: TableRegistry,
    node: Node,
    part: PartitionRange | None,
    runnable: list[PartitionRange],
    log: logging.Logger,
    run_id: str,
    versions: Versions,
    withheld: tuple[str, ...] = (),
) -> DataFrame:
    """The rows of every runnable partition: one lazy plan per partition, unioned (a range-aware
    transformation gets the whole range at once), every input read at its version in ``versions``."""
    if part is None or node.transformation.range_aware:
        return transform(spark, registry, node, part, log, run_id, versions, withheld)
    plans = [transform(spark, registry, node, p, log, run_id, versions, withheld) for p in runnable]
    return reduce(lambda a, b: a.unionByName(b), plans)
