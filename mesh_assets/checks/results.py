"""Checks as Dagster sees them (specs and evaluations), the same for Mesh outputs and external tables.

Loaded with the definitions, so it leaves the Spark-side evaluation module to the runs that need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

from mesh_assets.checks.spec import checks_of

if TYPE_CHECKING:
    from mesh_assets.checks.evaluate import CheckOutcome
    from mesh_assets.spec.model import ExternalTable, Output


def check_specs(
    key: dg.AssetKey, table: Output | ExternalTable, part_def: dg.PartitionsDefinition | None
) -> list[dg.AssetCheckSpec]:
    """One Dagster check per declared check, partitioned like its table, blocking when its severity is error."""
    return [
        dg.AssetCheckSpec(
            c.check_name,
            asset=key,
            blocking=c.blocking,
            partitions_def=part_def,
            description=f"{c.kind} ({c.severity})",
            metadata={"mesh/check": c.model_dump_json()},
        )
        for c in checks_of(table)
    ]


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
