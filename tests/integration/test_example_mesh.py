"""The example mesh's other domains on real Spark and Delta: declarative SQL, hourly -> daily, cross-domain."""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from zones import in_utc

from mesh_assets.graph.discovery import load_domain
from mesh_assets.graph.revisions import sql_text
from mesh_examples import generator

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
# Four landed days (2021-06-01..04) keep the module fast and give DAY landed neighbours on both sides.
WORLD_DAYS = 4
DAY = date(2021, 6, 3)
DESCRIPTOR_COLUMNS = [
    "order_id",
    "city",
    "customer_id",
    "store_id",
    "courier_id",
    "placed_at",
    "status",
    "picked_up_at",
    "delivered_at",
    "cancelled_at",
    "last_event_at",
    "events",
    "pickup_lat",
    "pickup_lon",
    "dropoff_lat",
    "dropoff_lon",
]
COURIER_CHAIN = [
    ["courier", "courier_distances_points_intermediate"],
    ["courier", "courier_distances_order_level_attributes"],
]


def expected_descriptors(day: date) -> dict[int, tuple]:
    """``central.order_descriptors`` for ``day``, computed from the generator's hourly landings without Spark."""
    events = {e[0]: e for hour in generator.hours(day) for e in generator.raw_order_events(hour)}
    by_order: dict[int, list[tuple]] = {}
    for e in sorted(events.values(), key=lambda e: e[3]):
        by_order.setdefault(e[1], []).append(e)
    out = {}
    for order_id, evs in by_order.items():
        first, at = evs[0], {e[2]: e[3] for e in evs}
        couriers = [e[8] for e in evs if e[8] is not None]
        out[order_id] = (
            order_id,
            first[5],
            first[6],
            first[7],
            max(couriers, default=None),
            first[4],
            evs[-1][2],
            at.get("picked_up"),
            at.get("delivered"),
            at.get("cancelled"),
            evs[-1][3],
            len(evs),
            *first[9:13],
        )
    return out


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    a = (
        math.sin(math.radians(lat2 - lat1) / 2) ** 2
        + math.cos(math.radians(lat1)) * math.cos(math.radians(lat2)) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    )
    return 2 * 6371.0 * math.asin(math.sqrt(a))


def ensure_descriptors(world, day: date) -> None:
    """Materialize ``day``'s descriptors unless an earlier test of the module already did."""
    key = dg.AssetKey(["central", "order_descriptors"])
    if day.isoformat() not in world.instance.get_materialized_partitions(key):
        world.materialize([["central", "order_descriptors"]], day.isoformat())


def test_declarative_sql_product_equals_its_sql_run_on_the_landed_table(world, spark):
    world.materialize([["growth", "summary_gsc"]])

    product = next(p for p in load_domain(ROOT / "domains" / "growth").products if p.name == "summary_gsc")
    sql = sql_text(product.transformations[0], product)
    world.mesh.registry.register(spark, "growth", "google_search_console")
    direct = sorted(tuple(r) for r in spark.sql(sql).collect())

    got = sorted(tuple(r) for r in world.table("growth", "summary_gsc").collect())
    assert got == direct
    assert got == [(d, len(generator.google_search_console(d))) for d in world.days]


def test_the_change_export_applied_by_sequence_leaves_each_live_customer_once(world):
    """``growth.customers`` (kind changes) over the landed days, in one range run: late and out-of-order events
    ignored, deleted customers gone even after a late update older than their delete."""
    first, last = world.days[0].isoformat(), world.days[-1].isoformat()
    world.materialize([["growth", "customers"]], start=first, end=last)
    rows = world.table("growth", "customers").collect()
    assert {r["customer_id"]: (r["email"], r["plan"]) for r in rows} == generator.current_customers(world.days[-1])
    assert len(rows) == len(world.days) + 1


def test_daily_descriptors_read_exactly_their_days_24_hours(world):
    ensure_descriptors(world, DAY)

    rows = world.table("central", "order_descriptors").where(f"p_date = DATE'{DAY}'").select(*DESCRIPTOR_COLUMNS)
    got = {r["order_id"]: in_utc(r) for r in rows.collect()}
    expected = expected_descriptors(DAY)
    assert got == expected
    # The data has orders on both edges of the window, so the equality above checks both boundaries.
    assert any(row[5].date() < DAY for row in expected.values()), "no order placed the day before"
    assert any(e[-1].date() > DAY for e in generator.order_events(DAY)), "no order of DAY ends the next day"
    assert all(row[10].date() == DAY for row in got.values())


def test_courier_chain_materializes_across_domains(world):
    ensure_descriptors(world, DAY)

    result = world.materialize(COURIER_CHAIN, DAY.isoformat())

    assert result.success
    delivered = {k: v for k, v in expected_descriptors(DAY).items() if v[6] == "delivered"}
    points = world.table(*COURIER_CHAIN[0]).where(f"p_date = DATE'{DAY}'")
    assert points.count() == 2 * len(delivered)
    orders = {r["order_id"]: r for r in world.table(*COURIER_CHAIN[1]).where(f"p_date = DATE'{DAY}'").collect()}
    assert set(orders) == set(delivered)
    for order_id, d in delivered.items():
        row = orders[order_id]
        assert row["distance_km"] == pytest.approx(haversine_km(*d[12:16]), abs=1e-3)
        assert (row["route_minutes"] is None) == (d[7] is None)
    counts = {
        m.materialization.asset_key.path[-1]: m.materialization.metadata["dagster/row_count"].value
        for m in result.get_asset_materialization_events()
    }
    assert counts == {COURIER_CHAIN[0][1]: 2 * len(delivered), COURIER_CHAIN[1][1]: len(delivered)}


def expected_city_history(days: list[date]) -> list[tuple]:
    """``courier.courier_city_history`` after ``days`` applied in order, from the generator without Spark: per
    day each courier's city of their last delivery; a new version from the day's start when the city changed;
    a courier with no delivery keeps theirs (``deletes: keep``)."""
    current: dict[int, list] = {}
    closed: list[tuple] = []
    for day in days:
        last: dict[int, tuple] = {}
        for d in expected_descriptors(day).values():
            if d[6] == "delivered" and d[4] is not None and (d[4] not in last or d[8] > last[d[4]][0]):
                last[d[4]] = (d[8], d[1])
        for courier, (_, city) in last.items():
            version = current.get(courier)
            if version is not None and version[1] == city:
                continue
            if version is not None:
                closed.append((courier, version[1], version[2], day, False))
            current[courier] = [courier, city, day]
    return sorted(closed + [(c, city, since, None, True) for c, city, since in current.values()])


def test_courier_city_history_keeps_each_couriers_city_over_days(world):
    days = [date(2021, 6, d) for d in (1, 2, 3)]
    for day in days:
        ensure_descriptors(world, day)

    first, last = days[0].isoformat(), days[-1].isoformat()
    result = world.materialize([["courier", "courier_city_history"]], start=first, end=last)

    assert result.success
    table = world.table("courier", "courier_city_history")
    got = sorted(
        (r["courier_id"], r["city"], r["valid_from"], r["valid_to"], r["is_current"])
        for r in table.selectExpr(
            "courier_id", "city", "to_date(valid_from) AS valid_from", "to_date(valid_to) AS valid_to", "is_current"
        ).collect()
    )
    assert got == expected_city_history(days)
    assert any(not r[4] for r in got)  # some couriers moved city


def test_order_status_keeps_each_orders_latest_status_over_days(world, spark):
    """``central.order_status`` (kind merge on order_id by last_event_at) over three days in one range run: each
    order once, with the status of its newest descriptor; the same range again commits nothing."""
    days = [date(2021, 6, d) for d in (1, 2, 3)]
    for day in days:
        ensure_descriptors(world, day)
    newest: dict[int, tuple] = {}
    for day in days:
        for d in expected_descriptors(day).values():
            if d[0] not in newest or d[10] >= newest[d[0]][1]:
                newest[d[0]] = (d[6], d[10])

    first, last = days[0].isoformat(), days[-1].isoformat()
    assert world.materialize([["central", "order_status"]], start=first, end=last).success
    rows = world.table("central", "order_status").collect()
    assert len(rows) == len(newest)
    assert {r["order_id"]: r["status"] for r in rows} == {k: v[0] for k, v in newest.items()}

    location = world.mesh.registry.location("central", "order_status")
    version = DeltaTable.forPath(spark, location).history(1).first()["version"]
    again = world.materialize([["central", "order_status"]], start=first, end=last)
    event = again.get_asset_materialization_events()[0].materialization
    assert event.metadata["unchanged"].value is True
    assert DeltaTable.forPath(spark, location).history(1).first()["version"] == version
