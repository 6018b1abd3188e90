"""dbt models as Mesh products, in-process on the shared SparkSession: exact rows, idempotent partition
replacement, single-run backfills, blocking dbt tests, and one asset graph across Python, SQL and dbt."""

from __future__ import annotations

from collections import defaultdict
from datetime import date

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from mesh_assets.dbt import build_dbt_assets, dbt_resource, dbt_tables, mesh_dbt_project, prepare
from mesh_assets.demo import generator
from mesh_assets.demo.run import executable_assets

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORLD_DAYS = 3  # the world fixture lands 2021-06-01 .. 2021-06-03
DAY = date(2021, 6, 3)
STG = dg.AssetKey(["analytics", "stg_orders"])
KPIS = dg.AssetKey(["analytics", "city_daily_kpis"])
ORDERS = dg.AssetKey(["food_delivery", "orders"])
DELIVERY_TIMES = dg.AssetKey(["food_delivery", "delivery_times_7_days"])


@pytest.fixture(scope="module")
def dbt_assets_def() -> dg.AssetsDefinition:
    project = mesh_dbt_project()
    if not project.manifest_path.exists():
        prepare()
    return build_dbt_assets(project)


@pytest.fixture(scope="module")
def mesh_world(world, dbt_assets_def):
    """The world with food_delivery's orders (3 days) and delivery_times_7_days (2 days) published."""
    world.materialize([ORDERS.path], start="2021-06-01", end=DAY.isoformat())
    world.materialize([DELIVERY_TIMES.path], start="2021-06-02", end=DAY.isoformat())
    return world


def run(
    world, dbt_assets_def, keys, partition=None, *, start=None, end=None, extra=(), run_config=None, raise_on_error=True
):
    tags = {}
    if start:
        tags = {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start}
    return dg.materialize(
        [*executable_assets(world.defs), dbt_assets_def, *extra],
        instance=world.instance,
        resources={"mesh": world.mesh, "dbt": dbt_resource()},
        selection=keys,
        partition_key=partition,
        tags=tags,
        run_config=run_config,
        raise_on_error=raise_on_error,
    )


def kpi_rows(world, day: date) -> dict[str, tuple]:
    rows = world.table("analytics", "city_daily_kpis").where(F.col("p_date") == F.lit(day)).collect()
    assert len(rows) == len({r["city"] for r in rows}), "one row per city and day"
    return {r["city"]: tuple(r) for r in rows}


def expected_kpis(world, day: date) -> dict[str, dict]:
    """The day's KPIs from the generator (orders) and delivery_times_7_days, without Spark SQL."""
    orders = {}
    for row in generator.raw_orders(day):
        orders.setdefault(row[0], row)
    by_city: dict[str, list] = defaultdict(list)
    for _id, placed, _c, _r, _m, _i, quantity, _d, _co, city, _p, delivered, status, _day in orders.values():
        minutes = (delivered - placed).total_seconds() / 60 if delivered else None
        by_city[city].append((status, quantity, minutes))
    weekly: dict[str, list] = defaultdict(list)
    for r in world.table("food_delivery", "delivery_times_7_days").where(F.col("p_date") == F.lit(day)).collect():
        weekly[r["city"]].append((r["delivered_orders"], r["avg_delivery_minutes"]))
    out = {}
    for city, rows in by_city.items():
        delivered = [m for s, _, m in rows if s == "delivered"]
        week_n = sum(n for n, _ in weekly[city])
        out[city] = {
            "orders": len(rows),
            "delivered_orders": len(delivered),
            "cancelled_orders": sum(1 for s, _, _ in rows if s == "cancelled"),
            "items": sum(q for _, q, _ in rows),
            "avg_delivery_minutes": round(sum(delivered) / len(delivered), 3),
            "delivered_orders_7_days": week_n,
            "avg_delivery_minutes_7_days": round(sum(n * a for n, a in weekly[city]) / week_n, 3),
        }
    return out


def test_graph_joins_platform_and_dbt_assets(world, dbt_assets_def):
    defs = dg.Definitions(
        assets=[*executable_assets(world.defs), dbt_assets_def], resources={"mesh": world.mesh, "dbt": dbt_resource()}
    )
    graph = defs.resolve_asset_graph()
    assert ORDERS in graph.get(STG).parent_keys
    assert {STG, DELIVERY_TIMES} <= graph.get(KPIS).parent_keys
    assert STG in graph.get(ORDERS).child_keys, "the dbt source is the platform's own asset"
    spec = dbt_assets_def.specs_by_key[KPIS]
    assert spec.group_name == "city_kpis" and spec.owners == ["analytics@example.com"]
    assert set(spec.kinds) == {"dbt", "spark", "delta"}
    checks = {c.key.name: c.blocking for c in dbt_assets_def.check_specs if c.key.asset_key == STG}
    assert checks["accepted_values_stg_orders_status__delivered__cancelled"] is True
    assert not all(c.blocking for c in dbt_assets_def.check_specs), "severity warn tests do not block"
    tables = {(t.domain, t.table): t for t in dbt_tables()}
    assert tables[("analytics", "city_daily_kpis")].published
    assert tables[("analytics", "city_daily_kpis")].partitioning == "daily"
    assert not tables[("analytics", "stg_orders")].published


def test_partition_rows_equal_an_independent_computation(mesh_world, dbt_assets_def):
    result = run(mesh_world, dbt_assets_def, [STG, KPIS], DAY.isoformat())
    assert {e.asset_key for e in result.get_asset_materialization_events()} == {STG, KPIS}
    checks = result.get_asset_check_evaluations()
    assert checks and all(c.passed for c in checks)

    got = kpi_rows(mesh_world, DAY)
    expected = expected_kpis(mesh_world, DAY)
    assert set(got) == set(expected)
    columns = mesh_world.table("analytics", "city_daily_kpis").columns
    for city, want in expected.items():
        row = dict(zip(columns, got[city], strict=True))
        for name, value in want.items():
            assert row[name] == pytest.approx(value, abs=1e-3), (city, name)
        assert row["delivery_rate"] == pytest.approx(want["delivered_orders"] / want["orders"], abs=1e-4)
    stg = mesh_world.table("analytics", "stg_orders")
    assert {r["p_date"] for r in stg.select("p_date").distinct().collect()} == {DAY}


def test_single_run_backfill_and_idempotent_rerun(mesh_world, dbt_assets_def):
    result = run(mesh_world, dbt_assets_def, [STG, KPIS], start="2021-06-02", end=DAY.isoformat())
    assert len({r.run_id for r in [result]}) == 1
    mats = result.get_asset_materialization_events()
    assert {(e.asset_key, e.partition) for e in mats} == {
        (k, d) for k in (STG, KPIS) for d in ("2021-06-02", "2021-06-03")
    }
    other = kpi_rows(mesh_world, date(2021, 6, 2))
    before = kpi_rows(mesh_world, DAY)
    location = mesh_world.mesh.registry.location("analytics", "city_daily_kpis")
    version = DeltaTable.forPath(mesh_world.mesh.spark, location).history(1).collect()[0]["version"]

    run(mesh_world, dbt_assets_def, [STG, KPIS], DAY.isoformat())

    assert kpi_rows(mesh_world, DAY) == before
    assert kpi_rows(mesh_world, date(2021, 6, 2)) == other, "only the run's partition is replaced"
    history = DeltaTable.forPath(mesh_world.mesh.spark, location).history(1).collect()[0]
    assert history["version"] == version + 1 and history["operation"] == "WRITE"
    assert mesh_world.table("analytics", "stg_orders").where(F.col("p_date") == F.lit(DAY)).count() == sum(
        v["orders"] for v in expected_kpis(mesh_world, DAY).values()
    )


def test_failing_dbt_test_blocks_downstream(mesh_world, dbt_assets_def):
    spark, registry = mesh_world.mesh.spark, mesh_world.mesh.registry
    orders_location = registry.location("food_delivery", "orders")
    bad = (
        mesh_world.table("food_delivery", "orders")
        .where(F.col("p_date") == F.lit(DAY))
        .limit(1)
        .withColumn("id", F.lit(-1).cast("long"))
        .withColumn("status", F.lit("lost"))
    )
    bad.write.format("delta").mode("append").save(orders_location)
    before = kpi_rows(mesh_world, DAY)
    ran = []

    @dg.asset(key=["probe", "kpi_consumer"], deps=[KPIS], partitions_def=dbt_assets_def.partitions_def)
    def kpi_consumer() -> None:
        ran.append(True)

    try:
        result = run(
            mesh_world,
            dbt_assets_def,
            [STG, KPIS, kpi_consumer.key],
            DAY.isoformat(),
            extra=[kpi_consumer],
            raise_on_error=False,
        )
    finally:
        DeltaTable.forPath(spark, orders_location).delete("id = -1")

    assert not result.success
    failed = {c.check_name for c in result.get_asset_check_evaluations() if not c.passed}
    assert failed == {"accepted_values_stg_orders_status__delivered__cancelled"}
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    assert KPIS not in materialized and kpi_consumer.key not in materialized
    assert not ran, "the downstream asset must not run after a blocking check failed"
    assert kpi_rows(mesh_world, DAY) == before, "the mart keeps its last good partition"
