"""Seed-002: days of orders land wrong, are fixed, and the planned backfill makes the 7-day tables right."""

from __future__ import annotations

from datetime import date

import dagster as dg
import pytest
from rich.console import Console

from mesh_assets.backfill import plan_backfill
from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings
from mesh_examples import generator
from mesh_examples.landing import land_raw_orders

pytestmark = pytest.mark.spark

WORLD_DAYS = 9  # 2021-06-01..09: every 7-day window containing the fixed 06-02..03 ends by 06-09
WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events
WORLD_ON_DISK = True  # the CLI reads the world's instance
ORDERS = ["food_delivery", "orders"]
WEEKLY = [["food_delivery", "orders_7_days"], ["food_delivery", "delivery_times_7_days"]]
FIXED = (date(2021, 6, 2), date(2021, 6, 3))


def snapshot(world, key: list[str]) -> list[tuple]:
    """The rows of ``key`` from the first fixed day on."""
    return sorted(tuple(r) for r in world.table(*key).where(f"p_date >= '{FIXED[0]}'").collect())


def land(world, seed: int) -> None:
    """Raw orders of the fixed days, exported again from ``seed``."""
    rows = [r for d in generator.days(FIXED[0], 2) for r in generator.raw_orders(d, seed)]
    land_raw_orders(world.mesh.spark, world.mesh.registry, *FIXED, rows)


def test_a_downstream_backfill_through_a_window_recomputes_every_stale_partition_and_plans_no_other(
    world, monkeypatch, capsys
):
    """Six days materialized, two of them fixed: the plan holds the windows that can be computed (06-02..06-06)
    and leaves out those past the last materialized day, whose other inputs never existed, and ``mesh backfill
    --downstream --dry-run`` prints both; running it writes every planned partition again and leaves no
    partition computed from the old data."""
    six = [ORDERS, *WEEKLY]
    world.materialize(six, start="2021-06-01", end="2021-06-06")
    right = {tuple(k): snapshot(world, k) for k in WEEKLY}
    land(world, seed=99)  # the wrong export, and everything downstream computed from it
    world.observe()
    world.materialize(six, start="2021-06-02", end="2021-06-06")
    assert all(snapshot(world, k) != right[tuple(k)] for k in WEEKLY)

    land(world, seed=7)  # the fix
    world.observe()
    graph = world.defs.resolve_asset_graph()
    plan = plan_backfill(graph, "food_delivery/orders", "2021-06-02", "2021-06-03", instance=world.instance)

    assert plan.as_dict() == {
        "food_delivery/orders": ["2021-06-02..2021-06-03"],
        "food_delivery/delivery_times_7_days": ["2021-06-02..2021-06-06"],
        "food_delivery/orders_7_days": ["2021-06-02..2021-06-06"],
        "food_delivery/monthly_city_orders": ["2021-06-01"],  # June to date: 6 of its 30 days meet min_complete 0.2
    }
    left_out = {
        f"food_delivery/{table} 2021-06-07..2021-06-09 (3): food_delivery/orders 2021-06-07..2021-06-09 (3) "
        "never materialized"
        for table in ("delivery_times_7_days", "orders_7_days")
    }
    assert {item.describe() for item in plan.left_out} == left_out
    printed = dry_run(world, monkeypatch, capsys, "food_delivery.orders", "2021-06-02", "2021-06-03")
    assert all(f"  {line}" in printed for line in left_out) and "Dry run: nothing launched." in printed
    assert "│ food_delivery/orders_7_days" in printed and "2021-06-02..2021-06-06" in printed
    before = {tuple(k): delta_versions(world, k) for k in WEEKLY}

    for key, rng in plan.runs():
        assert world.materialize([list(key.path)], start=rng.start, end=rng.end).success

    assert {tuple(k): snapshot(world, k) for k in WEEKLY} == right
    for key in WEEKLY:
        assert max(world.instance.get_materialized_partitions(dg.AssetKey(key))) == "2021-06-06"
        after, old = delta_versions(world, key), before[tuple(key)]
        assert after["2021-06-01"] == old["2021-06-01"]  # its window ends before the fixed days
        assert all(after[day] > max(old.values()) for day in after if day != "2021-06-01")  # each written again


def delta_versions(world, key: list[str]) -> dict[str, int]:
    """The Delta version that last published each partition of ``key``, as its materializations record it."""
    asset = dg.AssetKey(key)
    out = {}
    for day in sorted(world.instance.get_materialized_partitions(asset)):
        [record] = world.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[day]), limit=1
        ).records
        out[day] = record.asset_materialization.metadata["delta_version"].value
    return out


def dry_run(world, monkeypatch, capsys, asset: str, start: str, end: str) -> str:
    """``mesh backfill <asset> --start .. --end .. --downstream --dry-run`` on the world's instance: what it prints."""
    monkeypatch.setenv("DAGSTER_HOME", world.instance.root_directory)
    monkeypatch.setenv("MESH_DBT_PROJECT_DIR", f"{world.instance.root_directory}/no-dbt")  # the world has none
    monkeypatch.setattr(cli, "console", Console(width=250, no_color=True, highlight=False))
    get_settings.cache_clear()
    try:
        assert cli.main(["backfill", asset, "--start", start, "--end", end, "--downstream", "--dry-run"]) == 0
    finally:
        get_settings.cache_clear()
    return capsys.readouterr().out
