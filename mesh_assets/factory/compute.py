"""What one Mesh asset does when it runs: check readiness, read windows, transform, stage, audit, publish."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from typing import Any

import dagster as dg
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.backfill.rebuild import rebuild_requested
from mesh_assets.checks.evaluate import CheckOutcome, audit, failed_partitions
from mesh_assets.engine.resource import MeshResource
from mesh_assets.engine.session import is_connect
from mesh_assets.factory.context import ProductContext
from mesh_assets.factory.partitions import region_key
from mesh_assets.factory.sql import bind_parameters, rewrite_tables, view_name
from mesh_assets.lineage.capture import read_locations, table_name, undeclared_reads
from mesh_assets.spec.catalog import Catalog, TableInfo
from mesh_assets.spec.discovery import sql_text
from mesh_assets.spec.model import DataProduct, Input, PySparkTransformation, SqlTransformation
from mesh_assets.storage.partitions import PartitionRange, format_key
from mesh_assets.storage.schema import SchemaRule
from mesh_assets.storage.tables import TableNotFoundError, TableRegistry
from mesh_assets.storage.writer import WriteResult, commit, stage


def partition_range(context: dg.AssetExecutionContext, info: TableInfo) -> PartitionRange | None:
    """The partitions this run writes: one key, or a range for a single-run backfill."""
    if info.partitioning == "none":
        return None
    keys = context.partition_key_range
    return PartitionRange.from_keys(info.partitioning, keys.start, keys.end)


def input_range(inp: Input, upstream: TableInfo, part: PartitionRange | None) -> PartitionRange | None:
    """The upstream partitions one output range reads, or None for the whole table."""
    if part is None or upstream.partitioning == "none" or inp.window.kind == "all":
        return None
    return part.widen(inp.window.lookback).as_kind(upstream.partitioning)


def missing_upstream(
    instance: dg.DagsterInstance, product: DataProduct, t: Any, catalog: Catalog, part: PartitionRange | None
) -> list[str]:
    """Upstream partitions the window needs that were never published (external tables are observed)."""
    missing = []
    for inp in t.inputs.values():
        upstream = catalog.get(*inp.ref(product.domain))
        needed = input_range(inp, upstream, part) if upstream else None
        if upstream is None or upstream.external or needed is None:
            continue
        first = datetime.combine(upstream.start_date, datetime.min.time())
        now = datetime.now()
        keys = [format_key(v, needed.kind) for v in needed.values() if first <= v <= now]
        done = instance.get_materialized_partitions(dg.AssetKey([upstream.domain, upstream.table]))
        missing += [f"{upstream.ref} {k}" for k in keys if k not in done]
    return missing


def _read(spark: SparkSession, registry: TableRegistry, upstream: TableInfo, rng: PartitionRange | None) -> DataFrame:
    try:
        df = spark.table(registry.register(spark, upstream.domain, upstream.table))
    except TableNotFoundError as exc:
        raise dg.Failure(description=f"input {upstream.ref} has never been published: {exc}") from None
    if rng is None:
        return df
    col = F.col(upstream.partition_column)
    return df.where(col.between(F.lit(rng.literal(rng.start)), F.lit(rng.literal(rng.end))))


def _with_partition_column(df: DataFrame, column: str, part: PartitionRange, fill: bool) -> DataFrame:
    kind = "date" if part.kind == "daily" else "timestamp"
    if column in df.columns:
        return df.withColumn(column, F.col(column).cast(kind))
    if not fill:
        raise dg.Failure(description=f"a range-aware transformation must return the partition column {column!r}")
    return df.withColumn(column, F.lit(part.literal(part.start)).cast(kind))


def transform(
    spark: SparkSession,
    registry: TableRegistry,
    product: DataProduct,
    t: PySparkTransformation | SqlTransformation,
    catalog: Catalog,
    part: PartitionRange | None,
    log: dg.DagsterLogManager,
    run_id: str,
) -> DataFrame:
    """The transformation's output for ``part`` (one partition, or the range when range-aware)."""
    frames: dict[str, DataFrame] = {}
    refs: dict[str, TableInfo] = {}
    for name, inp in t.inputs.items():
        upstream = catalog.get(*inp.ref(product.domain))
        if upstream is None:
            raise dg.Failure(
                description=f"input {inp.table} of {product.domain}.{t.output.table} is not in the catalog"
            )
        refs[name] = upstream
        frames[name] = _read(spark, registry, upstream, input_range(inp, upstream, part))
    if isinstance(t, PySparkTransformation):
        kwargs: dict[str, Any] = dict(frames)
        if "context" in inspect.signature(t.fn).parameters:
            kwargs["context"] = ProductContext(spark, part, log, run_id)
        df = t.fn(**kwargs)
        if not isinstance(df, DataFrame):
            raise dg.Failure(description=f"{t.fn.__name__}() returned {type(df).__name__}, not a DataFrame")
    else:
        views = {}
        for name, upstream in refs.items():
            views[(upstream.domain, upstream.table)] = view_name(upstream.domain, upstream.table)
            frames[name].createOrReplaceTempView(views[(upstream.domain, upstream.table)])
        args = {}
        if part is not None:
            args = {"partition_start": part.literal(part.start), "partition_end": part.literal(part.end)}
        query = rewrite_tables(sql_text(t, product), views)
        df = spark.sql(bind_parameters(query, args)) if is_connect(spark) else spark.sql(query, args=args)
    if part is not None:
        df = _with_partition_column(df, t.output.partition_column, part, fill=not t.range_aware)
    return df


@dataclass(frozen=True)
class RunOutcome:
    """What a run of one output did: what it published and what its checks found."""

    result: WriteResult | None
    part: PartitionRange | None
    outcomes: list[CheckOutcome]
    failed: dict[str | None, list[CheckOutcome]]
    reads: list[str] | None = None
    """Locations the computation actually read (from Spark's plan); ``None`` when not observable."""
    undeclared_reads: tuple[str, ...] = ()
    undeclared_names: tuple[str, ...] = ()
    blocked: dict[str | None, list[str]] = field(default_factory=dict)
    """Partitions not computed because an input partition they read failed a blocking check."""


def blocked_upstream(
    instance: dg.DagsterInstance, product: DataProduct, t: Any, catalog: Catalog, part: PartitionRange | None
) -> dict[str | None, list[str]]:
    """Output partitions (``None`` when unpartitioned) whose input partitions failed a blocking check.

    Inputs with ``ignore_quality`` skip this. Each output partition is judged by its own window, so a range
    run refuses only the partitions that would read refused data.
    """
    blocked: dict[str | None, list[str]] = {}
    for inp in t.inputs.values():
        upstream = catalog.get(*inp.ref(product.domain))
        if upstream is None or inp.ignore_quality or not upstream.blocking_checks:
            continue
        needed = input_range(inp, upstream, part)
        keys = [format_key(v, needed.kind) for v in needed.values()] if needed else None
        if keys and upstream.regions:
            keys = [region_key(k, r) for k in keys for r in upstream.regions]
        asset = dg.AssetKey([upstream.domain, upstream.table])
        infos = instance.event_log_storage.get_asset_check_partition_info(
            [dg.AssetCheckKey(asset, name) for name in upstream.blocking_checks], partition_keys=keys
        )
        failed = {
            info.partition_key: f"{upstream.ref}{f' {info.partition_key}' if info.partition_key else ''} "
            f"(check {info.check_key.name} failed)"
            for info in infos
            if info.latest_execution_status == AssetCheckExecutionRecordStatus.FAILED
        }
        if not failed:
            continue
        outputs = [None] if part is None else part.values()
        for value in outputs:
            window = input_range(inp, upstream, part.single(value)) if part is not None and value else None
            reads = {format_key(v, window.kind) for v in window.values()} if window else None
            reasons = [why for key, why in failed.items() if reads is None or key is None or key.split("|")[0] in reads]
            if reasons:
                blocked.setdefault(format_key(value, part.kind) if part and value else None, []).extend(reasons)
    return {k: sorted(set(v)) for k, v in blocked.items()}


def run_output(
    context: dg.AssetExecutionContext,
    mesh: MeshResource,
    product: DataProduct,
    t: PySparkTransformation | SqlTransformation,
    catalog: Catalog,
) -> RunOutcome:
    """Compute, stage, check and publish one output for the run's partition(s)."""
    info = catalog.get(product.domain, t.output.table)
    assert info is not None
    part = partition_range(context, info)
    missing = missing_upstream(context.instance, product, t, catalog, part)
    if missing:
        raise dg.Failure(
            description=f"{info.ref}: upstream partitions not published: {', '.join(missing)}",
            metadata={"missing_upstream_partitions": missing},
        )
    blocked = blocked_upstream(context.instance, product, t, catalog, part)
    runnable = [v for v in part.values() if format_key(v, part.kind) not in blocked] if part else []
    if blocked and not runnable:
        reasons = sorted({why for whys in blocked.values() for why in whys})
        raise dg.Failure(
            description=f"{info.ref}: upstream partitions failed blocking checks: {', '.join(reasons)}",
            metadata={"blocked_upstream_partitions": reasons},
        )
    spark, registry = mesh.spark, mesh.registry
    run_id = context.run.run_id
    if part is None or t.range_aware:
        df = transform(spark, registry, product, t, catalog, part, context.log, run_id)
    else:
        parts = [transform(spark, registry, product, t, catalog, part.single(v), context.log, run_id) for v in runnable]
        df = reduce(lambda a, b: a.unionByName(b), parts)
    location = registry.location(product.domain, t.output.table)
    reads = read_locations(df)
    declared = [registry.location(*inp.ref(product.domain)) for inp in t.inputs.values()]
    undeclared = tuple(undeclared_reads(reads, declared, location))
    names = tuple(table_name(p, registry.warehouse) for p in undeclared)
    if undeclared:
        context.log.warning(f"{info.ref} read tables it does not declare as inputs: {', '.join(names)}")
    seen = {"reads": reads, "undeclared_reads": undeclared, "undeclared_names": names}
    staged = stage(df)
    try:
        audited = audit(spark, t.output, staged, part, location)
        outcomes = [o for o in audited.outcomes if o.partition not in blocked]
        failed = failed_partitions(outcomes)
        if part is None and None in failed:
            return RunOutcome(None, part, outcomes, failed, blocked=blocked, **seen)
        publish = [v for v in runnable if format_key(v, part.kind) not in failed] if part else None
        if publish == []:
            return RunOutcome(None, part, outcomes, failed, blocked=blocked, **seen)
        result = commit(
            spark,
            staged,
            location,
            partition_column=t.output.partition_column if part else None,
            partitions=part,
            publish=publish if failed or blocked else None,
            commit_info={"dagster_run_id": run_id, "asset": info.ref},
            name=info.ref,
            counts=audited.counts,
            schema=SchemaRule(
                t.output.schema_policy, rebuild_requested(context.run.tags), catalog.consumers(info.domain, info.table)
            ),
        )
    finally:
        staged.unpersist()
    registry.register(spark, product.domain, t.output.table)
    return RunOutcome(result, part, outcomes, failed, blocked=blocked, **seen)
