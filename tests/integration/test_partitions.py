"""Partition writes on real Spark and Delta: exact rows, idempotence, output invalidation, windows."""

from __future__ import annotations

from datetime import date, timedelta

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from mesh_assets.change.records import InstanceRecords
from mesh_examples import generator
from mesh_examples.landing import land_raw_orders

pytestmark = pytest.mark.spark

WORLD_DAYS = 13  # 2021-06-01..13: the latest day a test materializes (06-20 is missing on purpose)
WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events


def expected_orders(day: date) -> dict[int, tuple]:
    """``food_delivery.orders`` for ``day``, computed from the generator without Spark."""
    out = {}
    for row in generator.raw_orders(day):
        order_id, placed, _, _, _, _, _, _, _, city, _, delivered, status, _ = row
        minutes = (delivered - placed).total_seconds() / 60 if delivered else None
        out.setdefault(order_id, (city, status, minutes))
    return out


def rows_of(world, table: str, day: date) -> list:
    return world.table("food_delivery", table).where(f"p_date = DATE'{day}'").collect()


def test_partition_rows_equal_the_generator(world):
    day = date(2021, 6, 3)
    world.materialize([["food_delivery", "orders"]], day.isoformat())
    rows = rows_of(world, "orders", day)
    got = {r["id"]: (r["city"], r["status"], r["delivery_minutes"]) for r in rows}
    assert got == expected_orders(day)
    assert len(rows) == len(got), "duplicate order ids were published"


def test_rerun_is_idempotent(world):
    day = date(2021, 6, 3)
    world.materialize([["food_delivery", "orders"]], day.isoformat())
    before = sorted(tuple(r) for r in rows_of(world, "orders", day))
    world.materialize([["food_delivery", "orders"]], day.isoformat())
    after = sorted(tuple(r) for r in rows_of(world, "orders", day))
    assert after == before
    assert len({r[0] for r in after}) == len(after)


def test_changed_input_replaces_only_its_partition(world):
    world.materialize([["food_delivery", "orders"]], start="2021-06-01", end="2021-06-05")
    orders = world.table("food_delivery", "orders")
    untouched = {
        d: sorted(tuple(r) for r in orders.where(f"p_date = DATE'{d}'").collect())
        for d in ("2021-06-01", "2021-06-02", "2021-06-04", "2021-06-05")
    }
    day = date(2021, 6, 3)
    corrected = [r for r in generator.raw_orders(day) if r[9] == "madrid"]
    land_raw_orders(world.mesh.spark, world.mesh.registry, day, day, corrected)

    world.materialize([["food_delivery", "orders"]], day.isoformat())

    orders = world.table("food_delivery", "orders")
    assert {r["city"] for r in rows_of(world, "orders", day)} == {"madrid"}
    assert {r["id"] for r in rows_of(world, "orders", day)} == {r[0] for r in corrected}
    for d, rows in untouched.items():
        assert sorted(tuple(r) for r in orders.where(f"p_date = DATE'{d}'").collect()) == rows


def test_empty_result_leaves_the_partition_empty(world):
    day = date(2021, 6, 9)
    world.materialize([["food_delivery", "orders"]], day.isoformat())
    assert rows_of(world, "orders", day)
    land_raw_orders(world.mesh.spark, world.mesh.registry, day, day, [])
    result = world.materialize([["food_delivery", "orders"]], day.isoformat())
    assert rows_of(world, "orders", day) == []
    mat = result.get_asset_materialization_events()[0].materialization
    assert mat.metadata["dagster/row_count"].value == 0


def test_seven_day_window_reads_exactly_seven_partitions(world):
    world.materialize([["food_delivery", "orders"]], start="2021-06-01", end="2021-06-07")
    end = date(2021, 6, 7)
    world.materialize([["food_delivery", "orders_7_days"]], end.isoformat())
    rows = rows_of(world, "orders_7_days", end)
    placed_on = {r["placed_on"] for r in rows}
    assert placed_on == {end - timedelta(days=i) for i in range(7)}
    orders = world.table("food_delivery", "orders")
    delivered = (
        orders.where(f"status = 'delivered' AND p_date BETWEEN DATE'{end - timedelta(days=6)}' AND DATE'{end}'")
        .select("id")
        .collect()
    )
    assert sorted(r["order_id"] for r in rows) == sorted(r["id"] for r in delivered)


def test_missing_upstream_partition_is_named(world):
    result = world.materialize([["food_delivery", "orders_7_days"]], "2021-06-20", raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.event_specific_data.error.message
    assert "food_delivery.orders 2021-06-20" in message
    assert "food_delivery.orders 2021-06-14" in message or "2021-06-15" in message


def test_materialization_records_rows_schema_version_and_location(world):
    day = date(2021, 6, 4)
    result = world.materialize([["food_delivery", "orders"]], day.isoformat())
    metadata = result.get_asset_materialization_events()[0].materialization.metadata
    location = world.mesh.registry.location("food_delivery", "orders")
    assert metadata["dagster/row_count"].value == len(expected_orders(day))
    columns = [c.name for c in metadata["dagster/column_schema"].value.columns]
    assert columns[0] == "id" and "p_date" in columns and "delivery_minutes" in columns
    assert metadata["location"].value == location
    history = DeltaTable.forPath(world.mesh.spark, location).history(1).collect()[0]
    assert metadata["delta_version"].value == history["version"]
    definition = world.defs.resolve_asset_graph().get(dg.AssetKey(["food_delivery", "orders"]))
    assert metadata["mesh/revision"].value == definition.metadata["mesh/revision"]  # what the UI shows, recorded


def test_a_range_run_records_each_partitions_rows_and_its_columns_on_the_newest(world):
    """A single-run backfill records each partition's rows; the table's columns (one commit's, the same for every
    partition) only on its newest materialization, which the UI and ``mesh plan`` read them from."""
    days = [date(2021, 6, 10) + timedelta(days=i) for i in range(3)]
    key = dg.AssetKey(["food_delivery", "orders"])
    result = world.materialize([key.path], start=days[0].isoformat(), end=days[-1].isoformat())
    events = result.get_asset_materialization_events()
    rows = {e.partition: e.materialization.metadata["dagster/row_count"].value for e in events}
    assert rows == {d.isoformat(): len(expected_orders(d)) for d in days}
    assert [e.partition for e in events if "dagster/column_schema" in e.materialization.metadata] == ["2021-06-12"]
    [newest] = world.instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1).records
    assert newest.partition_key == "2021-06-12"
    columns = InstanceRecords(world.instance).of(key).columns
    assert columns is not None and {"id", "p_date", "delivery_minutes"} <= set(columns)


def test_a_range_write_puts_each_small_partition_in_one_file(world):
    world.materialize([["food_delivery", "orders"]], start="2021-06-10", end="2021-06-13")
    files = (
        world.table("food_delivery", "orders")
        .where("p_date BETWEEN DATE'2021-06-10' AND DATE'2021-06-13'")
        .groupBy("p_date")
        .agg(F.count_distinct("_metadata.file_path").alias("files"))
        .collect()
    )
    assert len(files) == 4
    assert {r["files"] for r in files} == {1}, "a small partition was split into one file per task"


def test_full_mode_replaces_the_whole_table(world):
    spark = world.mesh.spark
    registry = world.mesh.registry
    spark.createDataFrame([(1, 1, "only menu", "milan")], generator.MENUS_SCHEMA).write.format("delta").mode(
        "overwrite"
    ).save(registry.location("food_delivery", "raw_menus"))
    world.materialize([["food_delivery", "menus"]])
    assert [tuple(r) for r in world.table("food_delivery", "menus").collect()] == [(1, 1, "only menu", "milan")]
    cat = generator.catalogue()
    spark.createDataFrame(cat.menus, generator.MENUS_SCHEMA).write.format("delta").mode("overwrite").save(
        registry.location("food_delivery", "raw_menus")
    )
    world.materialize([["food_delivery", "menus"]])
    assert world.table("food_delivery", "menus").count() == len(cat.menus)


def test_registered_names_resolve_in_spark_sql(world):
    world.materialize([["food_delivery", "orders"]], "2021-06-02")
    spark = world.mesh.spark
    world.mesh.registry.register(spark, "food_delivery", "orders")
    count = spark.sql(
        "SELECT COUNT(*) AS n FROM food_delivery.orders WHERE p_date = :d", args={"d": date(2021, 6, 2)}
    ).collect()[0]["n"]
    assert count == len(expected_orders(date(2021, 6, 2)))
