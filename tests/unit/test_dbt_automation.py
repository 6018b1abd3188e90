"""dbt models are automated like products: a published, checked upstream partition requests the model."""

from __future__ import annotations

import warnings
from datetime import datetime

import dagster as dg
import pytest
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationTargetMaterializationData

from mesh_assets import mesh_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.settings import get_settings

ORDERS = dg.AssetKey(["food_delivery", "orders"])
STG_ORDERS = dg.AssetKey(["analytics", "stg_orders"])
DAY = "2024-03-09"
NOW = datetime(2024, 3, 10, 2, 0)


@pytest.fixture(scope="module")
def defs() -> dg.Definitions:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mesh_definitions(dbt=True)


def _evaluate(defs: dg.Definitions, instance: dg.DagsterInstance, cursor=None):
    result = dg.evaluate_automation_conditions(
        defs=defs,
        instance=instance,
        asset_selection=dg.AssetSelection.assets(STG_ORDERS),
        cursor=cursor,
        evaluation_time=NOW,
    )
    return set(result.get_requested_partitions(STG_ORDERS)), result.cursor


def _checks(instance: dg.DagsterInstance, passed: bool) -> list[dg.AssetCheckEvaluation]:
    info = MeshGraph(load_all(get_settings().domains_dir)).get("food_delivery", "orders")
    assert info is not None and info.blocking_checks
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=ORDERS, asset_partitions=[DAY]), limit=1
    ).records
    target = AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )
    return [
        dg.AssetCheckEvaluation(
            asset_key=ORDERS,
            check_name=name,
            passed=passed,
            partition=DAY,
            blocking=True,
            severity=dg.AssetCheckSeverity.ERROR,
            target_materialization_data=target,
        )
        for name in info.blocking_checks
    ]


@pytest.mark.parametrize("checked", [True, False])
def test_a_published_upstream_day_requests_the_model_once_its_checks_passed(defs, checked: bool) -> None:
    if not any(k == STG_ORDERS for k in defs.resolve_asset_graph().get_all_asset_keys()):
        pytest.fail("the dbt manifest is not prepared (make setup prepares it)")
    instance = dg.DagsterInstance.ephemeral()
    _, cursor = _evaluate(defs, instance)
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=ORDERS, partition=DAY))
    for evaluation in _checks(instance, passed=checked):
        instance.report_runless_asset_event(evaluation)
    requested, cursor = _evaluate(defs, instance, cursor)
    assert requested == ({DAY} if checked else set())
    assert _evaluate(defs, instance, cursor)[0] == set()  # once per upstream state
