"""What one Mesh asset does when it runs: check readiness, read windows, transform, stage, audit, publish."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import dagster as dg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.backfill.rebuild import rebuild_requested
from mesh_assets.checks.evaluate import CheckOutcome, audit, failed_partitions
from mesh_assets.engine.resource import MeshResource
from mesh_assets.engine.session import is_connect
from mesh_assets.factory.context import ProductContext
from mesh_assets.factory.readiness import input_range, unready_partitions
from mesh_assets.factory.sql import bind_parameters, rewrite_tables, view_name
from mesh_assets.lineage.capture import read_locations, table_name, undeclared_reads
from mesh_assets.spec.catalog import Catalog, TableInfo
from mesh_assets.spec.discovery import sql_text
from mesh_assets.spec.model import DataProduct, PySparkTransformation, SqlTransformation
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
    """Partitions not computed because an input partition they read is not published or not checked."""


class RowsOutsidePartitions(dg.Failure):
    """The computation returned rows of partitions the run does not write: nothing is committed."""


def refuse_rows_outside(name: str, column: str, part: PartitionRange, counts: dict[str | None, int]) -> None:
    """Refuse the run when staged rows fall outside its partitions (or have no partition value).

    Delta enforces ``replaceWhere`` only on a table that exists: the write that creates a table would commit
    rows of other days into those days. Checking the staged counts catches every write the same way.
    """
    keys = part.keys()
    own, span = set(keys), keys[0] if len(keys) == 1 else f"{keys[0]}..{keys[-1]}"
    outside = {k: n for k, n in counts.items() if n and k not in own}
    if not outside:
        return
    listed = ", ".join(
        f"{k if k is not None else f'no {column}'} ({n} rows)"
        for k, n in sorted(outside.items(), key=lambda item: item[0] or "")
    )
    raise RowsOutsidePartitions(
        description=f"{name}: rows outside the run's partitions {span} were refused, nothing was written: {listed}",
        metadata={"partitions_outside_the_run": sorted(k or "-" for k in outside)},
    )


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
    blocked = unready_partitions(context.instance, product, t, catalog, part)
    runnable = [v for v in part.values() if format_key(v, part.kind) not in blocked] if part else []
    if blocked and not runnable:
        return RunOutcome(None, part, [], {}, blocked=blocked)
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
        if part is not None:
            refuse_rows_outside(info.ref, t.output.partition_column, part, audited.counts)
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
