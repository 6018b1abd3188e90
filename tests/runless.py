"""Events reported without a run, as a publishing run records them: for tests that drive automation by hand."""

from __future__ import annotations

import dagster as dg

from mesh_assets.compat import AssetCheckEvaluationTargetMaterializationData


def report_checks(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None, **checks: bool) -> None:
    """Each blocking check's verdict on ``key``'s latest materialization of ``partition`` (on none, if it has
    none), as the run that published it reports them."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=1
    ).records
    target = (
        AssetCheckEvaluationTargetMaterializationData(
            run_id=records[0].event_log_entry.run_id, storage_id=records[0].storage_id, timestamp=records[0].timestamp
        )
        if records
        else None
    )
    for name, passed in checks.items():
        instance.report_runless_asset_event(
            dg.AssetCheckEvaluation(
                asset_key=key,
                check_name=name,
                passed=passed,
                partition=partition,
                blocking=True,
                severity=dg.AssetCheckSeverity.ERROR,
                target_materialization_data=target,
            )
        )


def report_published(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None, **checks: bool) -> None:
    """A materialization of ``partition`` without a run, and each check's verdict on it."""
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=partition))
    report_checks(instance, key, partition, **checks)
