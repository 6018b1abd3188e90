"""Checks on external tables: Mesh never writes them, so their checks run on what the outside writer landed.

The domain's observer requests one check run for the partitions each tick reported. A run (not a runless
evaluation) because Dagster's check-execution storage keeps one runless result per check and partition
(``idx_asset_check_executions_unique`` over asset, check, run id and partition): a re-landed partition
could never be checked again. Each result targets the observed materialization it checked, so consumers
gate on it exactly as on a Mesh output's checks. Spark and the check evaluation are imported by the check
run, not when the definitions load.
"""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import dagster as dg

from mesh_assets.checks.results import check_specs, evaluation, target_of
from mesh_assets.graph.resolve import Table
from mesh_assets.model.grain import region_key
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.resource import MeshResource

RESOURCE_KEY = "mesh"


def external_check_specs(table: Table) -> list[dg.AssetCheckSpec]:
    return check_specs(table)


def checks_job_name(domain: str, table: str) -> str:
    return f"{domain}__{table}__checks"


def checks_op_name(domain: str, table: str) -> str:
    return f"check_{domain}__{table}"


def checks_run_config(domain: str, table: str, partitions: list[str]) -> dict[str, Any]:
    """The run config that points one check run at the landed partitions it judges."""
    return {"ops": {checks_op_name(domain, table): {"config": {"partitions": partitions}}}}


def build_checks_job(table: Table) -> dg.JobDefinition | Any | None:
    """A job over the table's checks alone, for the observer (and operators) to check landed partitions."""
    specs = external_check_specs(table)
    if not specs:
        return None
    return dg.define_asset_job(
        checks_job_name(table.domain, table.name),
        selection=dg.AssetSelection.checks(*(s.key for s in specs)),
        description=f"Runs the checks of the external table {table.ref} on landed partitions.",
    )


def _by_region(table: Table, wanted: list[str | None]) -> dict[str | None, list[str | None]]:
    """Requested partitions grouped by region (``None`` for a table without regions), validated."""
    grouped: dict[str | None, list[str | None]] = {}
    for key in wanted:
        region = None
        if key is not None and table.regions:
            key, _, region = key.partition("|")
            if region not in table.regions:
                raise dg.Failure(description=f"{key}|{region}: {region!r} is not a region of {table.name}")
        if key is not None:
            table.grain.parse(key)
        grouped.setdefault(region, []).append(key)
    return grouped


def build_external_checks(table: Table) -> dg.AssetChecksDefinition | None:
    """The executable checks of one external table; None when it declares none.

    Partitions come from run config rather than a partition key: a checks-only run has no partitions
    definition of its own, and one run can judge every partition one observer tick reported.
    """
    specs = external_check_specs(table)
    if not specs:
        return None
    key, grain = table.key, table.grain

    @dg.multi_asset_check(
        name=checks_op_name(table.domain, table.name),
        specs=specs,
        can_subset=True,
        required_resource_keys={RESOURCE_KEY},
        compute_kind="spark",
        config_schema={"partitions": dg.Field([str], default_value=[])},
    )
    def _checks(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        from pyspark.sql import functions as F

        from mesh_assets.checks.evaluate import evaluate

        mesh: MeshResource = getattr(context.resources, RESOURCE_KEY)
        spark = mesh.spark
        location = mesh.registry.location(table.domain, table.name)
        selected = {k.name for k in context.selected_asset_check_keys}
        checks = [c for c in table.checks if c.check_name in selected]
        rows = spark.read.format("delta").load(location)
        wanted: list[str | None] = [None]
        if grain.partitioned:
            wanted = sorted(context.op_execution_context.op_config["partitions"])
            if not wanted:
                raise dg.Failure(description=f"no partitions of {table.ref} to check")
        for region, keys in _by_region(table, wanted).items():
            df = rows if region is None else rows.where(F.col(table.region_column) == F.lit(region))
            part = None
            if grain.partitioned:
                part = PartitionRange.from_keys(grain, min(keys), max(keys))
                values = [grain.literal(grain.parse(k)) for k in keys]
                df = df.where(F.col(table.partition_column).isin(values))
            for outcome in evaluate(spark, table, df, part, location, checks):
                if outcome.partition not in keys:
                    continue
                partition = region_key(outcome.partition, region) if region else outcome.partition
                target = target_of(context.instance, key, partition)
                context.op_execution_context.log_event(evaluation(key, replace(outcome, partition=partition), target))
        yield from ()

    return _checks
