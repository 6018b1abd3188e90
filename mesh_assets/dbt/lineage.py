"""OpenLineage events for dbt models, as for every other product: one run per model and Dagster run.

A model's events carry the same facets as a product's: the partition window, the Delta version published,
the owner (its asset's: ``meta.owner``, else its domain's), its ``<domain>.<table>`` name, schema, row count,
its dbt tests as the run's ``test`` facet, its compiled SQL and file, and column lineage read from the compiled
SQL by sqlglot (with the input tables' columns from Spark's analysis of the same SQL).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
from openlineage.client.facet_v2 import test_run

from mesh_assets.dbt.audit import TestOutcome
from mesh_assets.dbt.compiled import DbtModel
from mesh_assets.dbt.gate import ModelRun
from mesh_assets.dbt.nodes import DBT_GRAIN
from mesh_assets.dbt.project import project_dir
from mesh_assets.graph.queries import parse_query, query_tables
from mesh_assets.lineage.capture import query_columns
from mesh_assets.lineage.events import RunDescription
from mesh_assets.lineage.plan import normalize
from mesh_assets.lineage.run import run_events, spark_version, window
from mesh_assets.storage.resource import MeshResource


def model_inputs(model: DbtModel, mesh: MeshResource) -> dict[str, str]:
    """``<domain>.<table>`` -> location of every table the model's compiled SQL reads."""
    if model.sql is None:
        return {}
    try:
        tables = query_tables(parse_query(model.sql))
    except Exception:  # a query Mesh cannot parse still runs; its inputs are just not listed
        return {}
    own = model.relation
    return {
        f"{domain}.{table}": mesh.registry.location(domain, table)
        for domain, table in sorted(tables, key=str)
        if domain is not None and (domain, table) != own
    }


def describe_model(
    context: dg.AssetExecutionContext, mesh: MeshResource, model: DbtModel, node: Mapping[str, Any]
) -> RunDescription:
    domain, table = model.key.path
    inputs = model_inputs(model, mesh)
    rng = context.partition_key_range
    path = node.get("original_file_path")
    return RunDescription(
        domain=domain,
        table=table,
        dagster_run_id=context.run.run_id,
        dagster_job=context.run.job_name,
        output_location=mesh.registry.location(domain, table),
        declared_inputs=list(inputs.values()),
        sql=model.sql,
        partitions=(DBT_GRAIN.name, rng.start, rng.end, list(context.partition_keys)),
        engine_version=spark_version(),
        window=window(DBT_GRAIN, rng.start, rng.end),
        owner=next(iter(context.assets_def.specs_by_key[model.key].owners), None),
        source=("sql", model.sql) if model.sql else None,
        source_file=project_dir() / path if path else None,
        table_names={normalize(loc): ref for ref, loc in inputs.items()},
        job_type=("DBT", "MODEL"),
        kind=(model.kind.name, model.kind.describe()),
    )


def test_execution(outcome: TestOutcome) -> test_run.TestExecution:
    """A dbt test's verdict on one partition as the spec's ``test`` run facet records a test."""
    return test_run.TestExecution(
        name=outcome.test.check.name,
        status="pass" if outcome.passed else "fail",
        severity=outcome.test.severity,
        type=outcome.test.check.name,
        description=None if outcome.passed else outcome.describe(),
        actual=str(outcome.failures),
        params={"partition": outcome.partition} if outcome.partition else {},
    )


@contextmanager
def model_lineage(
    context: dg.AssetExecutionContext, mesh: MeshResource, model: DbtModel, node: Mapping[str, Any]
) -> Iterator[Any]:
    """START now; COMPLETE (or FAIL) when the block ends, with what the ``ModelRun`` it records did."""
    description = describe_model(context, mesh, model, node)

    def record(run: ModelRun) -> None:
        description.tests = [test_execution(o) for o in run.outcomes]
        if run.result is not None:
            description.rows = run.result.rows
            description.version = run.result.version
            description.changes = dict(run.result.changes) or None
            description.committed = run.result.committed
            description.schema = [(f.name, f.dataType.simpleString()) for f in run.result.schema.fields]
        if model.sql is not None:
            try:
                df = mesh.spark.sql(model.sql)
            except Exception:  # lineage never fails a run
                return
            description.columns = query_columns(df, model.sql, model_inputs(model, mesh))

    with run_events(context.log, mesh.settings, description):
        yield record
