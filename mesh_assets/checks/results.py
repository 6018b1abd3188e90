"""Checks as Dagster sees them (specs and evaluations), the same for Mesh outputs and external tables.

Loaded with the definitions, so it leaves the Spark-side evaluation module to the runs that need it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.compat import AssetCheckEvaluationTargetMaterializationData
from mesh_assets.graph.resolve import Table

if TYPE_CHECKING:
    from mesh_assets.checks.outcomes import CheckOutcome


def check_specs(table: Table) -> list[dg.AssetCheckSpec]:
    """One Dagster check per declared check, partitioned like its table, blocking when its severity is error."""
    part_def = table.partitions_def
    return [
        dg.AssetCheckSpec(
            c.check_name,
            asset=table.key,
            blocking=c.blocking,
            partitions_def=part_def,
            description=f"{c.kind} ({c.severity})",
            metadata={"mesh/check": c.model_dump_json()},
        )
        for c in table.checks
    ]


def target_of(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The latest materialization of ``key``'s ``partition``: what a check result judged, so it counts as
    current for that partition (in the UI and for consumers)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    return _target(records[0]) if records else None


def run_targets(
    instance: dg.DagsterInstance, key: dg.AssetKey, run_id: str, partitions: Iterable[str | None]
) -> dict[str | None, AssetCheckEvaluationTargetMaterializationData]:
    """The materializations run ``run_id`` just recorded of ``partitions``, so its check results target them."""
    partitions = list(partitions)
    keyed = [p for p in partitions if p is not None]
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=keyed or None), limit=max(1, len(partitions))
    ).records
    out: dict[str | None, AssetCheckEvaluationTargetMaterializationData] = {}
    for record in records:
        if record.partition_key not in out and record.run_id == run_id:
            out[record.partition_key] = _target(record)
    return out


def _target(record: Any) -> AssetCheckEvaluationTargetMaterializationData:
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )


def evaluation(
    key: dg.AssetKey, outcome: CheckOutcome, target: AssetCheckEvaluationTargetMaterializationData | None = None
) -> dg.AssetCheckEvaluation:
    """Dagster's record of one outcome: failing count, a capped sample, drift or the check's error, tied to
    what it judged."""
    metadata: dict[str, Any] = {"failing_rows": outcome.failing_rows}
    if outcome.error:
        metadata["error"] = f"check {outcome.name}: {outcome.error}"
    if outcome.sample:
        metadata["failing_sample"] = dg.MetadataValue.json(outcome.sample)
    metadata.update({k: v for k, v in outcome.detail.items() if isinstance(v, int | float | str)})
    if outcome.detail.get("drift"):
        metadata["drift"] = dg.MetadataValue.json(outcome.detail["drift"])
    return dg.AssetCheckEvaluation(
        asset_key=key,
        check_name=outcome.name,
        passed=outcome.passed,
        metadata=metadata,
        severity=dg.AssetCheckSeverity.ERROR if outcome.check.blocking else dg.AssetCheckSeverity.WARN,
        blocking=outcome.check.blocking,
        partition=outcome.partition,
        description=None if outcome.passed else outcome.describe(),
        target_materialization_data=target,
    )
