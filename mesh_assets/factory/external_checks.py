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
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from mesh_assets.checks.results import check_specs, evaluation
from mesh_assets.checks.spec import checks_of
from mesh_assets.engine.resource import MeshResource
from mesh_assets.factory.partitions import partitions_def, region_key
from mesh_assets.spec.model import DataProduct, ExternalTable
from mesh_assets.storage.partitions import PartitionRange, parse_key

RESOURCE_KEY = "mesh"


def external_check_specs(product: DataProduct, ext: ExternalTable) -> list[dg.AssetCheckSpec]:
    key = dg.AssetKey([product.domain, ext.table])
    return check_specs(key, ext, partitions_def(ext.partitioning, product.start_date, ext.regions))


def checks_job_name(domain: str, table: str) -> str:
    return f"{domain}__{table}__checks"


def checks_op_name(domain: str, table: str) -> str:
    return f"check_{domain}__{table}"


def checks_run_config(domain: str, table: str, partitions: list[str]) -> dict[str, Any]:
    """The run config that points one check run at the landed partitions it judges."""
    return {"ops": {checks_op_name(domain, table): {"config": {"partitions": partitions}}}}


def build_checks_job(product: DataProduct, ext: ExternalTable) -> UnresolvedAssetJobDefinition | None:
    """A job over the table's checks alone, for the observer (and operators) to check landed partitions."""
    specs = external_check_specs(product, ext)
    if not specs:
        return None
    return dg.define_asset_job(
        checks_job_name(product.domain, ext.table),
        selection=dg.AssetSelection.checks(*(s.key for s in specs)),
        description=f"Runs the checks of the external table {product.domain}.{ext.table} on landed partitions.",
    )


def _target(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The observed materialization a result judges, so it counts as current for that partition."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    if not records:
        return None
    record = records[0]
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )


def _by_region(ext: ExternalTable, wanted: list[str | None]) -> dict[str | None, list[str | None]]:
    """Requested partitions grouped by region (``None`` for a table without regions), validated."""
    grouped: dict[str | None, list[str | None]] = {}
    for key in wanted:
        region = None
        if key is not None and ext.regions:
            key, _, region = key.partition("|")
            if region not in ext.regions:
                raise dg.Failure(description=f"{key}|{region}: {region!r} is not a region of {ext.table}")
        if key is not None:
            parse_key(key, ext.partitioning)
        grouped.setdefault(region, []).append(key)
    return grouped


def build_external_checks(product: DataProduct, ext: ExternalTable) -> dg.AssetChecksDefinition | None:
    """The executable checks of one external table; None when it declares none.

    Partitions come from run config rather than a partition key: a checks-only run has no partitions
    definition of its own, and one run can judge every partition one observer tick reported.
    """
    specs = external_check_specs(product, ext)
    if not specs:
        return None
    key = dg.AssetKey([product.domain, ext.table])

    @dg.multi_asset_check(
        name=checks_op_name(product.domain, ext.table),
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
        location = mesh.registry.location(product.domain, ext.table)
        selected = {k.name for k in context.selected_asset_check_keys}
        checks = [c for c in checks_of(ext) if c.check_name in selected]
        table = spark.read.format("delta").load(location)
        wanted: list[str | None] = [None]
        if ext.partitioning != "none":
            wanted = sorted(context.op_execution_context.op_config["partitions"])
            if not wanted:
                raise dg.Failure(description=f"no partitions of {product.domain}.{ext.table} to check")
        for region, keys in _by_region(ext, wanted).items():
            df = table if region is None else table.where(F.col(ext.region_column) == F.lit(region))
            part = None
            if ext.partitioning != "none":
                part = PartitionRange.from_keys(ext.partitioning, min(keys), max(keys))
                values = [part.literal(parse_key(k, ext.partitioning)) for k in keys]
                df = df.where(F.col(ext.partition_column).isin(values))
            for outcome in evaluate(spark, ext, df, part, location, checks):
                if outcome.partition not in keys:
                    continue
                partition = region_key(outcome.partition, region) if region else outcome.partition
                target = _target(context.instance, key, partition)
                context.op_execution_context.log_event(evaluation(key, replace(outcome, partition=partition), target))
        yield from ()

    return _checks
