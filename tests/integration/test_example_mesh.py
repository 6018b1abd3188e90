"""The example mesh's other domains on real Spark and Delta: declarative SQL, hourly -> daily, cross-domain."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from zones import in_utc

from mesh_assets.graph.discovery import load_domain
from mesh_assets.graph.revisions import sql_text
from mesh_assets.model.regions import local_day
from mesh_examples import generator
from mesh_examples.generator import days, raw_orders
from mesh_examples.landing import land_raw_orders

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


def failure(result: dg.ExecuteInProcessResult) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


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


def expected_city_sessions(day: date, region: str) -> dict[str, tuple]:
    """``central.city_daily_sessions`` of ``region``'s local ``day``, from the generator's 15-minute batches without
    Spark: per city, (sessions, events, checkouts, first and last event)."""
    start, end = local_day(day, generator.APP_REGIONS[region])
    events = {
        e[0]: e
        for batch in generator.batches(start, end - generator.BATCH)
        for e in generator.raw_app_events(batch)
        if e[2] == region
    }
    by_city: dict[str, list[tuple]] = {}
    for e in events.values():
        by_city.setdefault(e[3], []).append(e)
    return {
        city: (
            len({e[1] for e in evs}),
            len(evs),
            sum(e[4] == "checkout" for e in evs),
            min(e[5] for e in evs),
            max(e[5] for e in evs),
        )
        for city, evs in by_city.items()
    }


def test_a_region_s_daily_sessions_cover_its_local_day_of_15_minute_batches(world):
    """One run over two regions of 2021-06-02: São Paulo's day is 03:00 to 03:00 UTC, Singapore's 16:00 the day
    before to 16:00; each region's rows are exactly its own cities' events of its own local day."""
    sessions = ["central", "city_daily_sessions"]
    result = world.materialize([sessions], start="2021-06-02|latam", end="2021-06-02|apac")

    assert {e.materialization.partition for e in result.get_asset_materialization_events()} == {
        "2021-06-02|latam",
        "2021-06-02|apac",
    }
    columns = ["city", "sessions", "events", "checkouts", "first_event_at", "last_event_at"]
    utc_day = (datetime(2021, 6, 2, tzinfo=UTC), datetime(2021, 6, 3, tzinfo=UTC))
    for region, (start, end) in {
        "latam": (datetime(2021, 6, 2, 3, tzinfo=UTC), datetime(2021, 6, 3, 3, tzinfo=UTC)),
        "apac": (datetime(2021, 6, 1, 16, tzinfo=UTC), datetime(2021, 6, 2, 16, tzinfo=UTC)),
    }.items():
        rows = world.table(*sessions).where(f"p_date = DATE'2021-06-02' AND region = '{region}'").select(*columns)
        got = {r["city"]: in_utc(r)[1:] for r in rows.collect()}
        assert got == expected_city_sessions(date(2021, 6, 2), region)
        first, last = min(v[3] for v in got.values()), max(v[4] for v in got.values())
        assert start <= first and last < end
        # Events of the UTC day before (apac) or after (latam): a UTC day's batches would have left them out.
        assert first < utc_day[0] if region == "apac" else last >= utc_day[1]
    assert world.table(*sessions).where("region = 'eu'").count() == 0  # a region not run is not written


def test_the_weekly_rollup_waits_for_the_week_s_last_day_and_the_monthly_takes_part_of_june(world):
    """Orders of June 7-13 (the ISO week of 2021-06-07) landed; with six days published the week is refused naming
    the seventh; with all seven it holds each city's orders of the week. June, read with ``min_complete: 0.2``,
    is published from the 11 days there are, the 19 others recorded as missing."""
    week = [date(2021, 6, 7) + timedelta(days=n) for n in range(7)]
    land_raw_orders(world.mesh.spark, world.mesh.registry, week[0], week[-1], [r for d in week for r in raw_orders(d)])
    world.observe()
    orders, weekly = ["food_delivery", "orders"], ["food_delivery", "weekly_city_orders"]
    world.materialize([orders], start=week[0].isoformat(), end=week[-2].isoformat())

    waiting = world.materialize([weekly], "2021-06-07", raise_on_error=False)

    assert not waiting.success
    assert "food_delivery.orders 2021-06-13 (not published)" in failure(waiting)
    assert not Path(world.mesh.registry.location(*weekly)).exists()

    world.materialize([orders], week[-1].isoformat())
    world.materialize([weekly], "2021-06-07")

    deduped = {r[0]: r for d in week for r in raw_orders(d)}.values()
    expected: dict[str, list[int]] = {}
    for r in deduped:
        expected.setdefault(r[9], [0, 0])[0] += 1
        expected[r[9]][1] += r[12] == "delivered"
    rows = world.table(*weekly).collect()
    assert {r["city"]: [r["orders"], r["delivered"]] for r in rows} == expected
    assert {(r["p_week"], r["days"]) for r in rows} == {(date(2021, 6, 7), 7)}

    world.materialize([orders], start=world.days[0].isoformat(), end=world.days[-1].isoformat())
    monthly = world.materialize([["food_delivery", "monthly_city_orders"]], "2021-06-01")

    event = monthly.get_asset_materialization_events()[0].materialization
    published = {*world.days, *week}
    missing = [d.isoformat() for d in days(date(2021, 6, 1), 30) if d not in published]
    assert json.loads(json.dumps(event.metadata["incomplete_inputs"].value)) == {"food_delivery.orders": missing}
    rows = world.table("food_delivery", "monthly_city_orders").collect()
    assert sum(r["orders"] for r in rows) == len({r[0] for d in sorted(published) for r in raw_orders(d)})
    assert {(r["p_month"], r["days"]) for r in rows} == {(date(2021, 6, 1), len(published))}
