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
    from mesh_assets.checks.outcomes import CheckOutcome
    from mesh_assets.graph.resolve import Node
    from mesh_assets.lineage.capture import Reads
    from mesh_assets.storage.resource import MeshResource
    from mesh_assets.storage.writer import WriteResult


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

    def record(self, reads: Reads, outcomes: list[CheckOutcome], result: WriteResult | None) -> None:
        d = self.description
        d.reads = reads.locations
        d.undeclared = list(reads.undeclared)
        d.undeclared_names = list(reads.undeclared_names)
        d.assertions = [assertion(o) for o in outcomes]
        if result is not None:
            d.rows = result.rows
            d.schema = [(f.name, f.dataType.simpleString()) for f in result.schema.fields]


def describe_run(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> RunDescription:
    registry = mesh.registry
    declared = [registry.location(r.table.domain, r.table.name) for r in node.reads]
    partitions = None
    if context.has_partition_key or context.has_partition_key_range:
        rng = context.partition_key_range
        partitions = (node.table.grain.name, rng.start, rng.end, list(context.partition_keys))
    return RunDescription(
        domain=node.domain,
        table=node.table.name,
        dagster_run_id=context.run.run_id,
        dagster_job=context.run.job_name,
        output_location=registry.location(node.domain, node.table.name),
        declared_inputs=declared,
        sql=node.sql.strip() if node.sql is not None else None,
        partitions=partitions,
        engine_version=_spark_version(),
    )


def _spark_version() -> str | None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active.version if active is not None else None


@contextmanager
def product_lineage(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> Iterator[ProductLineage]:
    """Emit START now, COMPLETE when the block ends normally, FAIL (with the error) when it raises."""
    try:
        client = make_client(mesh.settings)
    except ValueError as exc:
        context.log.warning(f"OpenLineage disabled for this run: {exc}")
        client = None
    lineage = ProductLineage(describe_run(context, mesh, node))
    warn = context.log.warning
    emit(client, build_event("START", lineage.description), warn)
    try:
        yield lineage
    except BaseException as exc:
        emit(client, build_event("FAIL", lineage.description, error=exc), warn)
        raise
    emit(client, build_event("COMPLETE", lineage.description), warn)
