"""The lineage of one product run: START before computing, then COMPLETE or FAIL with what happened."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
from openlineage.client.facet_v2 import test_run

from mesh_assets.engine.identity import run_identity
from mesh_assets.lineage.emit import emit, make_client
from mesh_assets.lineage.events import RunDescription, build_event
from mesh_assets.lineage.plan import normalize
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import PySparkTransformation

if TYPE_CHECKING:
    from mesh_assets.checks.outcomes import CheckOutcome
    from mesh_assets.graph.resolve import Node
    from mesh_assets.lineage.capture import Reads
    from mesh_assets.settings import MeshSettings
    from mesh_assets.storage.resource import MeshResource
    from mesh_assets.storage.writer import WriteResult


def test_execution(outcome: CheckOutcome) -> test_run.TestExecution:
    """A check's verdict on one partition as the spec's ``test`` run facet records a test."""
    column = getattr(outcome.check, "column", None)
    columns = getattr(outcome.check, "columns", None) or getattr(outcome.check, "keys", None)
    column = column or (",".join(columns) if columns else None)
    params = {"column": column, "partition": outcome.partition}
    return test_run.TestExecution(
        name=outcome.name,
        status="pass" if outcome.passed else "fail",
        severity=outcome.check.severity,
        type=outcome.check.kind,
        description=None if outcome.passed else outcome.describe(),
        actual=str(outcome.failing_rows),
        params={k: v for k, v in params.items() if v},
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
        d.table_names.update({normalize(p): n for p, n in zip(d.undeclared, d.undeclared_names, strict=True) if n != p})
        d.tests = [test_execution(o) for o in outcomes]
        if result is not None:
            d.rows = result.rows
            d.schema = [(f.name, f.dataType.simpleString()) for f in result.schema.fields]
            d.version = result.version
            d.changes, d.committed = (dict(result.changes) or None), result.committed
            d.null_counts = null_counts(outcomes)
        d.columns = reads.columns


def null_counts(outcomes: list[CheckOutcome]) -> dict[str, int]:
    """Null values per column, from the run's one-column ``not_null`` checks (summed over partitions)."""
    counts: dict[str, int] = {}
    for o in outcomes:
        columns = getattr(o.check, "columns", None) or [getattr(o.check, "column", None)]
        if o.check.kind == "not_null" and len(columns) == 1 and columns[0] and o.error is None:
            counts[columns[0]] = counts.get(columns[0], 0) + o.failing_rows
    return counts


def source_of(node: Node) -> tuple[tuple[str, str] | None, Path | None]:
    """The transformation's code and the file it lives in, where they can be read."""
    t = node.transformation
    if isinstance(t, PySparkTransformation):
        try:
            code, file = inspect.getsource(t.fn), inspect.getsourcefile(t.fn)
        except (OSError, TypeError):
            return None, node.product.source_file
        return ("python", code), Path(file) if file else node.product.source_file
    sql_file = getattr(t, "sql_file", None)
    folder = node.product.source_file.parent if node.product.source_file else None
    path = folder / sql_file if folder and sql_file else node.product.source_file
    return ("sql", node.sql) if node.sql else None, path


def window(grain: Grain, start: str, end: str) -> tuple[datetime, datetime] | None:
    """The run's partition window, end excluded; ``None`` when the keys are not the grain's own."""
    try:
        rng = PartitionRange.from_keys(grain, start, end)
    except ValueError:
        return None
    return rng.start, rng.end_excluded()


def describe_run(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> RunDescription:
    registry = mesh.registry
    declared = [registry.location(r.table.domain, r.table.name) for r in node.reads]
    partitions, span = None, None
    if context.has_partition_key or context.has_partition_key_range:
        rng = context.partition_key_range
        partitions = (node.table.grain.name, rng.start, rng.end, list(context.partition_keys))
        span = window(node.table.grain, rng.start, rng.end)
    source, source_file = source_of(node)
    kind = node.table.table_kind
    names = {normalize(registry.location(r.table.domain, r.table.name)): r.table.ref for r in node.reads}
    return RunDescription(
        domain=node.domain,
        table=node.table.name,
        dagster_run_id=context.run.run_id,
        dagster_job=context.run.job_name,
        output_location=registry.location(node.domain, node.table.name),
        declared_inputs=declared,
        sql=node.sql.strip() if node.sql is not None else None,
        partitions=partitions,
        engine_version=spark_version(),
        window=span,
        kind=(kind.name, kind.describe()),
        owner=node.table.owner,
        source=source,
        source_file=source_file,
        table_names=names,
    )


def spark_version() -> str | None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active.version if active is not None else None


@contextmanager
def run_events(log: Any, settings: MeshSettings, description: RunDescription) -> Iterator[RunDescription]:
    """Emit START now, COMPLETE when the block ends normally, FAIL (with the error) when it raises; the block
    fills ``description`` in with what the run did."""
    description.namespace_prefix = settings.lineage.namespace_prefix
    description.identity = description.identity or run_identity(settings, description.domain)
    try:
        client = make_client(settings)
    except ValueError as exc:
        log.warning(f"OpenLineage disabled for this run: {exc}")
        client = None
    emit(client, build_event("START", description), log.warning)
    try:
        yield description
    except BaseException as exc:
        emit(client, build_event("FAIL", description, error=exc), log.warning)
        raise
    emit(client, build_event("COMPLETE", description), log.warning)


@contextmanager
def product_lineage(context: dg.AssetExecutionContext, mesh: MeshResource, node: Node) -> Iterator[ProductLineage]:
    """A product run's events around the block (see :func:`run_events`)."""
    with run_events(context.log, mesh.settings, describe_run(context, mesh, node)) as description:
        yield ProductLineage(description)
