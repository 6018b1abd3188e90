"""dbt models are automated like products: a published, checked upstream partition requests the model."""

from __future__ import annotations

import warnings
from datetime import datetime

import dagster as dg
import pytest
from runless import report_published

from mesh_assets import mesh_definitions
from mesh_assets.automation.pause import set_paused
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.settings import get_settings

ORDERS = dg.AssetKey(["food_delivery", "orders"])
STG_ORDERS = dg.AssetKey(["analytics", "stg_orders"])
DAY = "2021-06-20"  # within the example's history (June 2021), where its tables have partitions
NOW = datetime(2021, 6, 21, 2, 0)


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


def _blocking_checks() -> list[str]:
    info = MeshGraph(load_all(get_settings().domains_dir)).get("food_delivery", "orders")
    assert info is not None and info.blocking_checks
    return list(info.blocking_checks)


@pytest.mark.parametrize("checked", [True, False])
def test_a_published_upstream_day_requests_the_model_once_its_checks_passed(defs, checked: bool) -> None:
    if not any(k == STG_ORDERS for k in defs.resolve_asset_graph().get_all_asset_keys()):
        from mesh_assets.dbt.project import manifest_path

        settings = get_settings()
        pytest.fail(
            f"no {STG_ORDERS.to_user_string()} among the definitions: manifest {manifest_path()} "
            f"(exists: {manifest_path().exists()}), domains {settings.domains_dir}, "
            f"domains defined {sorted({k.path[0] for k in defs.resolve_asset_graph().get_all_asset_keys()})}"
        )
    instance = dg.DagsterInstance.ephemeral()
    _, cursor = _evaluate(defs, instance)
    report_published(instance, ORDERS, DAY, **dict.fromkeys(_blocking_checks(), checked))
    requested, cursor = _evaluate(defs, instance, cursor)
    assert requested == ({DAY} if checked else set())
    assert _evaluate(defs, instance, cursor)[0] == set()  # once per upstream state


def test_a_paused_upstream_product_holds_the_model_and_resuming_requests_it(defs) -> None:
    """``mesh pause`` of the product writing a model's source holds the model as it holds a product's reader;
    once resumed, the day that became due meanwhile is requested."""
    info = MeshGraph(load_all(get_settings().domains_dir)).get("food_delivery", "orders")
    assert info is not None
    instance = dg.DagsterInstance.ephemeral()
    _, cursor = _evaluate(defs, instance)
    set_paused(instance, "food_delivery", info.product, [ORDERS], "source migration")
    report_published(instance, ORDERS, DAY, **dict.fromkeys(_blocking_checks(), True))
    requested, cursor = _evaluate(defs, instance, cursor)
    assert requested == set()
    set_paused(instance, "food_delivery", info.product, [ORDERS], None)
    assert _evaluate(defs, instance, cursor)[0] == {DAY}
