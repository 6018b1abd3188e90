"""dbt models as Mesh products, in-process on the shared SparkSession: exact rows, idempotent partition
replacement, single-run backfills, blocking dbt tests, and one asset graph across Python, SQL and dbt."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from lineage_runs import validate
from pyspark.sql import functions as F

from mesh_assets import executable_assets
from mesh_assets.dbt import build_dbt_assets, dbt_resource, dbt_tables, mesh_dbt_project, prepare
from mesh_assets.dbt.project import load_manifest
from mesh_assets.graph.defaults import domains_defaults
from mesh_assets.lineage.graph import read_events
from mesh_assets.model.grain import Grain
from mesh_assets.settings import get_settings
from mesh_examples import generator

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORLD_DAYS = 3  # the world fixture lands 2021-06-01 .. 2021-06-03
WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events
ROOT = Path(__file__).resolve().parents[2]
DAY = date(2021, 6, 3)
STG = dg.AssetKey(["analytics", "stg_orders"])
KPIS = dg.AssetKey(["analytics", "city_daily_kpis"])
ORDERS = dg.AssetKey(["food_delivery", "orders"])
DELIVERY_TIMES = dg.AssetKey(["food_delivery", "delivery_times_7_days"])


@pytest.fixture(scope="module")
def dbt_assets_def() -> dg.AssetsDefinition:
    project = mesh_dbt_project()
    if not project.manifest_path.exists():
        prepare(get_settings().warehouse_uri)
    [models] = build_dbt_assets("analytics", domains_defaults(ROOT / "domains"), project)  # the analytics models
    return models


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
    tables = {(t.domain, t.name): t for t in dbt_tables()}
    assert tables[("analytics", "city_daily_kpis")].published
    assert tables[("analytics", "city_daily_kpis")].grain is Grain.DAILY
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
    assert_lineage_events(mesh_world, result.run_id)


def assert_lineage_events(world, run_id: str) -> None:
    """Each model's run reports, as products do, its window, version, owner, name and column lineage."""
    location = world.mesh.registry.location
    events = {
        e["job"]["name"]: e
        for e in read_events(get_settings().lineage_dir)
        if e["eventType"] == "COMPLETE" and e["run"]["facets"]["parent"]["run"]["runId"] == run_id
    }
    assert set(events) == {"analytics.stg_orders", "analytics.city_daily_kpis"}
    for name, event in events.items():
        validate(event)
        out = event["outputs"][0]["facets"]
        version = DeltaTable.forPath(world.mesh.spark, location(*name.split("."))).history(1).collect()[0]["version"]
        assert out["version"]["datasetVersion"] == str(version)
        assert out["ownership"]["owners"] == [{"name": "user:analytics@example.com"}]
        assert out["symlinks"]["identifiers"][0]["name"] == name
        assert event["run"]["facets"]["nominalTime"]["nominalStartTime"] == f"{DAY.isoformat()}T00:00:00Z"
        assert event["job"]["facets"]["jobType"]["integration"] == "DBT"
        tests = event["run"]["facets"]["test"]["tests"]  # the spec's run facet for test results
        assert tests and all(t["status"] == "pass" for t in tests)

    def inputs(name: str, column: str) -> list[tuple[str, str]]:
        fields = events[name]["outputs"][0]["facets"]["columnLineage"]["fields"][column]["inputFields"]
        return [(f["name"], f["field"]) for f in fields]

    assert inputs("analytics.stg_orders", "order_id") == [(location("food_delivery", "orders"), "id")]
    assert inputs("analytics.city_daily_kpis", "items") == [(location("analytics", "stg_orders"), "quantity")]
    weekly = location("food_delivery", "delivery_times_7_days")
    assert inputs("analytics.city_daily_kpis", "avg_delivery_minutes_7_days") == [
        (weekly, "avg_delivery_minutes"),
        (weekly, "delivered_orders"),
    ]


def test_single_run_backfill_and_idempotent_rerun(mesh_world, dbt_assets_def):
    result = run(mesh_world, dbt_assets_def, [STG, KPIS], start="2021-06-02", end=DAY.isoformat())
    assert len({r.run_id for r in [result]}) == 1
    mats = result.get_asset_materialization_events()
    assert {(e.asset_key, e.partition) for e in mats} == {
        (k, d) for k in (STG, KPIS) for d in ("2021-06-02", "2021-06-03")
    }
    stg = mesh_world.table("analytics", "stg_orders")
    assert {e.partition: e.materialization.metadata["dagster/row_count"].value for e in mats if e.asset_key == STG} == {
        d: stg.where(F.col("p_date") == F.lit(d)).count() for d in ("2021-06-02", "2021-06-03")
    }
    other = kpi_rows(mesh_world, date(2021, 6, 2))
    before = kpi_rows(mesh_world, DAY)
    location = mesh_world.mesh.registry.location("analytics", "city_daily_kpis")
    version = DeltaTable.forPath(mesh_world.mesh.spark, location).history(1).collect()[0]["version"]

    rerun = run(mesh_world, dbt_assets_def, [STG, KPIS], DAY.isoformat())

    # another window, the same parse: the window reaches dbt in the environment, not as --vars
    messages = [entry.user_message for entry in mesh_world.instance.all_logs(rerun.run_id)]
    assert any("dbt" in m.lower() for m in messages)
    assert not [m for m in messages if "Unable to do partial parsing" in m]
    assert kpi_rows(mesh_world, DAY) == before
    assert kpi_rows(mesh_world, date(2021, 6, 2)) == other, "only the run's partition is replaced"
    history = DeltaTable.forPath(mesh_world.mesh.spark, location).history(1).collect()[0]
    assert history["version"] == version + 1 and history["operation"] == "WRITE"
    assert mesh_world.table("analytics", "stg_orders").where(F.col("p_date") == F.lit(DAY)).count() == sum(
        v["orders"] for v in expected_kpis(mesh_world, DAY).values()
    )


def day_files(world, table: str, day: date) -> set[tuple]:
    """The day's rows of ``analytics.<table>`` with the Delta data file holding each: equal sets mean untouched."""
    rows = world.table("analytics", table).where(F.col("p_date") == F.lit(day)).select("*", "_metadata.file_path")
    return {tuple(r) for r in rows.collect()}


def version(world, table: str) -> int:
    location = world.mesh.registry.location("analytics", table)
    return DeltaTable.forPath(world.mesh.spark, location).history(1).collect()[0]["version"]


@pytest.fixture(scope="module")
def refused_run(mesh_world, dbt_assets_def):
    """A range run of 2021-06-02..03 over orders with a bad status on 06-03 (stg_orders' blocking
    accepted_values) and an unknown city on 06-02 (city_daily_kpis' warn-only accepted_values), with a
    consumer of the mart selected too; the day before publishing and what the run did."""
    first = date(2021, 6, 2)
    if not {"2021-06-02", "2021-06-03"} <= mesh_world.instance.get_materialized_partitions(KPIS):
        run(mesh_world, dbt_assets_def, [STG, KPIS], start=first.isoformat(), end=DAY.isoformat())
    orders_location = mesh_world.mesh.registry.location("food_delivery", "orders")
    orders = mesh_world.table("food_delivery", "orders")
    lost = orders.where(F.col("p_date") == F.lit(DAY)).limit(1).withColumn("status", F.lit("lost"))
    paris = orders.where((F.col("p_date") == F.lit(first)) & (F.col("status") == "delivered")).limit(1)
    bad = lost.withColumn("id", F.lit(-1).cast("long")).unionByName(
        paris.withColumn("id", F.lit(-2).cast("long")).withColumn("city", F.lit("paris"))
    )
    bad.write.format("delta").mode("append").save(orders_location)
    before = {t: (day_files(mesh_world, t, DAY), version(mesh_world, t)) for t in ("stg_orders", "city_daily_kpis")}
    ran = []

    @dg.asset(key=["probe", "kpi_consumer"], deps=[KPIS], partitions_def=dbt_assets_def.partitions_def)
    def kpi_consumer() -> None:
        ran.append(True)

    try:
        result = run(
            mesh_world,
            dbt_assets_def,
            [STG, KPIS, kpi_consumer.key],
            start=first.isoformat(),
            end=DAY.isoformat(),
            extra=[kpi_consumer],
            raise_on_error=False,
        )
    finally:
        DeltaTable.forPath(mesh_world.mesh.spark, orders_location).delete("id < 0")
    return result, before, ran, kpi_consumer.key


def test_a_failing_blocking_dbt_test_refuses_its_day_and_publishes_the_others(mesh_world, refused_run):
    result, before, _, _ = refused_run
    assert not result.success
    [failure] = result.get_step_failure_events()
    message = failure.step_failure_data.user_failure_data.description
    assert (
        "analytics.stg_orders: dbt test accepted_values_stg_orders_status__delivered__cancelled on partition "
        "2021-06-03 failed (1 failing rows)"
    ) in message
    assert "analytics.city_daily_kpis 2021-06-03: not computed, its input analytics.stg_orders 2021-06-03" in message

    for table in ("stg_orders", "city_daily_kpis"):
        files, old_version = before[table]
        assert day_files(mesh_world, table, DAY) == files, f"{table} 2021-06-03 is untouched"
        assert version(mesh_world, table) == old_version + 1, f"one commit to {table}, for 2021-06-02 only"
    stg = mesh_world.table("analytics", "stg_orders")
    assert stg.where(F.col("order_id") == -1).count() == 0
    assert stg.where((F.col("order_id") == -2) & (F.col("p_date") == F.lit(date(2021, 6, 2)))).count() == 1

    materialized = {(e.asset_key, e.partition): e for e in result.get_asset_materialization_events()}
    assert set(materialized) == {(STG, "2021-06-02"), (KPIS, "2021-06-02")}
    for (key, day), event in materialized.items():
        rows = mesh_world.table(*key.path).where(F.col("p_date") == F.lit(date.fromisoformat(day))).count()
        assert event.materialization.metadata["dagster/row_count"].value == rows
        checksum = load_manifest()["nodes"][f"model.mesh_dbt.{key.path[-1]}"]["checksum"]["checksum"]
        assert event.materialization.metadata["mesh/revision"].value == checksum[:16]  # the model's revision
    evaluations = {(c.asset_key, c.check_name, c.partition): c for c in result.get_asset_check_evaluations()}
    refused = {(k, n, p) for (k, n, p), c in evaluations.items() if not c.passed and c.blocking}
    assert refused == {(STG, "accepted_values_stg_orders_status__delivered__cancelled", "2021-06-03")}
    assert {p for k, _, p in evaluations if k == KPIS} == {"2021-06-02"}, "the refused day was not tested"
    assert len([p for k, _, p in evaluations if k == STG]) == 6 * 2, "every stg_orders test, on both days"


def test_a_failing_warn_dbt_test_reports_and_publishes(mesh_world, refused_run):
    result = refused_run[0]
    [warned] = [c for c in result.get_asset_check_evaluations() if not c.passed and not c.blocking]
    assert (warned.asset_key, warned.partition) == (KPIS, "2021-06-02")
    assert warned.check_name == "accepted_values_city_daily_kpis_city__barcelona__madrid__milan__lisbon"
    assert warned.severity == dg.AssetCheckSeverity.WARN
    assert "paris" in kpi_rows(mesh_world, date(2021, 6, 2)), "a warning does not hold the day back"


def test_failing_dbt_test_blocks_downstream(mesh_world, refused_run):
    result, _, ran, consumer = refused_run
    materialized = {(e.asset_key, e.partition) for e in result.get_asset_materialization_events()}
    assert (KPIS, DAY.isoformat()) not in materialized and not any(k == consumer for k, _ in materialized)
    assert not ran, "the downstream asset must not run after a blocking check failed"


def test_a_model_is_not_computed_for_days_its_sources_have_not_published(mesh_world, dbt_assets_def):
    """orders is published for 06-01..03 only: a run of 06-03..04 publishes 06-03 and refuses 06-04 by name.
    dbt-spark turns ANSI mode off on the session it shares: the step gives it back as it was."""
    ansi = mesh_world.mesh.spark.conf.get("spark.sql.ansi.enabled")
    result = run(mesh_world, dbt_assets_def, [STG], start="2021-06-03", end="2021-06-04", raise_on_error=False)

    assert not result.success
    message = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data
    assert "analytics.stg_orders 2021-06-04: not computed, food_delivery.orders 2021-06-04 (not published)" in (
        message.error.message
    )
    written = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert written == {"2021-06-03"}
    days = {r["p_date"] for r in mesh_world.table(*STG.path).select("p_date").distinct().collect()}
    assert date(2021, 6, 4) not in days
    assert mesh_world.mesh.spark.conf.get("spark.sql.ansi.enabled") == ansi == "true"


def test_a_full_refresh_replaces_the_whole_table_only_when_every_day_passed(mesh_world, dbt_assets_def):
    """``full_refresh: true`` in run config recreates the model from the run's window in one commit: a row of a
    day outside the window goes; while one day of the window fails a blocking test, nothing is published."""
    days = ("2021-06-02", DAY.isoformat())
    full = {"ops": {dbt_assets_def.node_def.name: {"config": {"full_refresh": True}}}}
    if not set(days) <= mesh_world.instance.get_materialized_partitions(STG):
        run(mesh_world, dbt_assets_def, [STG], start=days[0], end=days[1])
    stg = mesh_world.mesh.registry.location(*STG.path)
    outside = mesh_world.table(*STG.path).where(F.col("p_date") == F.lit(DAY)).limit(1)
    outside.withColumn("order_id", F.lit(-3).cast("long")).withColumn("p_date", F.lit(date(2021, 6, 1))).write.format(
        "delta"
    ).mode("append").save(stg)
    orders_location = mesh_world.mesh.registry.location(*ORDERS.path)
    lost = mesh_world.table(*ORDERS.path).where(F.col("p_date") == F.lit(DAY)).limit(1)
    lost.withColumn("id", F.lit(-1).cast("long")).withColumn("status", F.lit("lost")).write.format("delta").mode(
        "append"
    ).save(orders_location)
    kept = version(mesh_world, "stg_orders")
    try:
        refused = run(
            mesh_world, dbt_assets_def, [STG], start=days[0], end=days[1], run_config=full, raise_on_error=False
        )
    finally:
        DeltaTable.forPath(mesh_world.mesh.spark, orders_location).delete("id < 0")
    assert not refused.success and not refused.get_asset_materialization_events()
    assert version(mesh_world, "stg_orders") == kept, "a refused day holds back the whole table"
    assert mesh_world.table(*STG.path).where(F.col("order_id") == -3).count() == 1

    rebuilt = run(mesh_world, dbt_assets_def, [STG], start=days[0], end=days[1], run_config=full)
    assert {e.partition for e in rebuilt.get_asset_materialization_events()} == set(days)
    history = DeltaTable.forPath(mesh_world.mesh.spark, stg).history(1).collect()[0]
    assert history["version"] == kept + 1 and history["operationParameters"]["mode"] == "Overwrite"
    orders = mesh_world.table(*ORDERS.path)
    per_day = {str(r["p_date"]): r["count"] for r in mesh_world.table(*STG.path).groupBy("p_date").count().collect()}
    assert per_day == {d: orders.where(F.col("p_date") == F.lit(date.fromisoformat(d))).count() for d in days}
