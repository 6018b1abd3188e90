"""The lineage of one product run: START before computing, then COMPLETE or FAIL with what happened."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import dagster as dg
from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq

from mesh_assets.lineage.emit import emit, make_client
from mesh_assets.lineage.events import RunDescription, build_event

if TYPE_CHECKING:
    from mesh_assets.checks.evaluate import CheckOutcome
    from mesh_assets.engine.resource import MeshResource
    from mesh_assets.factory.compute import RunOutcome
    from mesh_assets.spec.catalog import Catalog
    from mesh_assets.spec.model import DataProduct, PySparkTransformation, SqlTransformation


def assertion(outcome: CheckOutcome) -> dq.Assertion:
    column = getattr(outcome.check, "column", None)
    columns = getattr(outcome.check, "columns", None) or getattr(outcome.check, "keys", None)
    return dq.Assertion(
        assertion=outcome.check.kind,
        success=outcome.passed,
        column=column or (",".join(columns) if columns else None),
        severity=outcome.check.severity,
        name=outcome.name,
        description=None if outcome.passed else outcome.describe(),
        actual=str(outcome.failing_rows),
        params={"partition": outcome.partition} if outcome.partition else {},
    )


class ProductLineage:
    """Collects what the run did; the context manager turns it into the closing event."""

    def __init__(self, description: RunDescription):
        self.description = description

    def record(self, outcome: RunOutcome) -> None:
        d = self.description
        d.reads = outcome.reads
        d.undeclared = list(outcome.undeclared_reads)
        d.undeclared_names = list(outcome.undeclared_names)
        d.assertions = [assertion(o) for o in outcome.outcomes]
        if outcome.result is not None:
            d.rows = outcome.result.rows
            d.schema = [(f.name, f.dataType.simpleString()) for f in outcome.result.schema.fields]


def describe_run(
    context: dg.AssetExecutionContext,
    mesh: MeshResource,
    product: DataProduct,
    t: PySparkTransformation | SqlTransformation,
    catalog: Catalog,
    sql: str | None,
) -> RunDescription:
    registry = mesh.registry
    declared = [
        registry.location(*inp.ref(product.domain))
        for inp in t.inputs.values()
        if catalog.get(*inp.ref(product.domain))
    ]
    partitions = None
    if context.has_partition_key or context.has_partition_key_range:
        rng = context.partition_key_range
        kind = "hourly" if len(rng.start) > 10 else "daily"
        partitions = (kind, rng.start, rng.end, list(context.partition_keys))
    return RunDescription(
        domain=product.domain,
        table=t.output.table,
        dagster_run_id=context.run.run_id,
        dagster_job=context.run.job_name,
        output_location=registry.location(product.domain, t.output.table),
        declared_inputs=declared,
        sql=sql,
        partitions=partitions,
        engine_version=_spark_version(),
    )


def _spark_version() -> str | None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active.version if active is not None else None


@contextmanager
def product_lineage(
    context: dg.AssetExecutionContext,
    mesh: MeshResource,
    product: DataProduct,
    t: PySparkTransformation | SqlTransformation,
    catalog: Catalog,
    sql: str | None = None,
) -> Iterator[ProductLineage]:
    """Emit START now, COMPLETE when the block ends normally, FAIL (with the error) when it raises."""
    try:
        client = make_client()
    except ValueError as exc:
        context.log.warning(f"OpenLineage disabled for this run: {exc}")
        client = None
    lineage = ProductLineage(describe_run(context, mesh, product, t, catalog, sql))
    warn = context.log.warning
    emit(client, build_event("START", lineage.description), warn)
    try:
        yield lineage
    except BaseException as exc:
        emit(client, build_event("FAIL", lineage.description, error=exc), warn)
        raise
    emit(client, build_event("COMPLETE", lineage.description), warn)
