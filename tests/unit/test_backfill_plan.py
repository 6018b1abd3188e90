"""Backfill plans through the asset graph, and the one backfill they launch (no Spark, no daemon)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import mesh_definitions
from mesh_assets.backfill import BackfillError, launch_backfill, plan_backfill
from mesh_assets.cli import commands, main

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "food_delivery/orders": ["2021-06-04..2021-06-06"],
    "food_delivery/delivery_times_7_days": ["2021-06-04..2021-06-12"],
    "food_delivery/orders_7_days": ["2021-06-04..2021-06-12"],
}


@pytest.fixture(scope="module")
def graph():
    return mesh_definitions(ROOT / "domains").resolve_asset_graph()


def test_plan_is_the_downstream_closure(graph):
    plan = plan_backfill(graph, "food_delivery.orders", "2021-06-04", "2021-06-06")
    assert plan.as_dict() == EXPECTED
    assert plan.assets[0].key == dg.AssetKey(["food_delivery", "orders"])
    only = plan_backfill(graph, "food_delivery/orders", "2021-06-04", "2021-06-06", downstream=False)
    assert only.as_dict() == {"food_delivery/orders": ["2021-06-04..2021-06-06"]}


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2021-02-30", "2021-06-06", "invalid daily partition key"),
        ("2021-06-06", "2021-06-04", "before it starts"),
        ("2020-01-01", "2020-01-02", "does not exist"),
        ("06/04/2021", "2021-06-06", "invalid daily partition key"),
    ],
)
def test_bad_partitions_are_refused(graph, start, end, message):
    with pytest.raises(BackfillError, match=message):
        plan_backfill(graph, "food_delivery.orders", start, end)


def test_launch_adds_one_asset_backfill(graph):
    instance = dg.DagsterInstance.ephemeral()
    plan = plan_backfill(graph, "food_delivery.orders", "2021-06-04", "2021-06-06")
    backfill_id = launch_backfill(instance, plan)
    [backfill] = instance.get_backfills()
    assert backfill.backfill_id == backfill_id and backfill.is_asset_backfill
    target = backfill.asset_backfill_data.target_subset
    got = {
        k.to_user_string(): [
            f"{r.start}..{r.end}"
            for r in target.get_partitions_subset(k).get_partition_key_ranges(graph.get(k).partitions_def)
        ]
        for k in target.asset_keys
    }
    assert got == EXPECTED


def published(instance: dg.DagsterInstance, table: str, days: int) -> None:
    """Report ``food_delivery.<table>`` published for the first ``days`` days of June 2021."""
    for day in range(1, days + 1):
        key = dg.AssetKey(["food_delivery", table])
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=f"2021-06-{day:02d}"))


def test_cli_dry_run_launches_nothing(monkeypatch, capsys, tmp_path):
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setattr(commands, "persistent_instance", lambda: dg.DagsterInstance.local_temp(str(home)))
    instance = dg.DagsterInstance.local_temp(str(home))
    args = ["backfill", "food_delivery.orders", "--start", "2021-06-04", "--end", "2021-06-06", "--downstream"]
    assert main.main([*args, "--dry-run"]) == 1  # nothing was ever materialized: nothing can be computed
    assert "food_delivery/orders 2021-06-04..2021-06-06 (3): food_delivery/raw_orders" in capsys.readouterr().out
    published(instance, "raw_orders", 12)
    for dimension in ("menus", "menu_items", "categories"):
        instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey(["food_delivery", dimension])))
    published(instance, "orders", 9)  # 06-01..06-09: the 7-day windows ending 06-10..12 cannot be computed
    assert main.main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "orders_7_days" in out and "2021-06-04..2021-06-09" in out
    assert (
        "food_delivery/orders_7_days 2021-06-10..2021-06-12 (3): food_delivery/orders 2021-06-10..2021-06-12 (3) "
        "never materialized" in " ".join(out.split())
    )
    assert instance.get_backfills() == []
    assert main.main(["backfill", "food_delivery.orders", "--start", "2021-06-31", "--end", "2021-07-01"]) == 2
    assert "invalid daily partition key" in capsys.readouterr().out
    assert instance.get_backfills() == []
    assert main.main(args) == 0
    assert len(instance.get_backfills()) == 1
