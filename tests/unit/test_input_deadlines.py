"""Input freshness and timeout: late inputs flag the consumer partition and tell its owner, once."""

from __future__ import annotations

import json
import logging
import logging.handlers
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
from zones import local_time_zone

from mesh_assets.automation.deadlines import TIMED_OUT_TAG, build_deadline_sensor, evaluate_deadlines
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph, Node
from mesh_assets.graph.validate import validate
from mesh_assets.settings import get_settings

DOMAINS = Path(__file__).resolve().parents[2] / "domains"
HOURLY = Path(__file__).resolve().parents[1] / "fixtures" / "time_zones" / "domains"
CONSUMER = dg.AssetKey(["courier", "courier_distances_points_intermediate"])


def courier() -> tuple[dg.DagsterInstance, list[Node]]:
    """The courier domain, whose input central.order_descriptors was published for 2021-06-01 only."""
    domains = load_all(DOMAINS)
    instance = dg.DagsterInstance.ephemeral()
    instance.report_runless_asset_event(
        dg.AssetMaterialization(dg.AssetKey(["central", "order_descriptors"]), partition="2021-06-01")
    )
    return instance, MeshGraph(domains, []).nodes_of("courier")


def test_late_input_flags_the_partition_once_and_alerts_the_owner(webhook):
    receiver, point = webhook
    point("courier")
    instance, nodes = courier()

    early = evaluate_deadlines(instance, nodes, None, datetime(2021, 6, 3, 7))
    flagged = {(e.asset_key, e.partition, e.metadata["input_deadline"].value) for e in early.asset_events}
    assert flagged == set()

    tick = evaluate_deadlines(instance, nodes, early.cursor, datetime(2021, 6, 3, 9))
    flagged = {(e.asset_key, e.partition, e.metadata["input_deadline"].value) for e in tick.asset_events}
    assert flagged == {(CONSUMER, "2021-06-02", "late"), (CONSUMER, "2021-06-02", "timed_out")}
    event = tick.asset_events[0]
    assert event.metadata["late_input"].value == "central.order_descriptors"
    assert event.metadata["missing_input_partitions"].value == ["2021-06-02"]
    assert len(receiver) == 2
    alert = receiver[0]["mesh"]
    assert (alert["domain"], alert["table"], alert["partitions"]) == (
        "courier",
        "courier_distances_points_intermediate",
        ["2021-06-02"],
    )
    assert "central.order_descriptors" in alert["message"]

    again = evaluate_deadlines(instance, nodes, tick.cursor, datetime(2021, 6, 3, 10))
    assert again.asset_events == [] and len(receiver) == 2


def test_nothing_is_late_after_the_consumers_end_date(webhook):
    """courier's example history stops with June 2021 (``end_date: 2021-07-01``): days after it are not its
    partitions, so a daemon running today flags and alerts nothing, while June's last days still count."""
    receiver, point = webhook
    point("courier")
    instance, nodes = courier()
    tick = evaluate_deadlines(instance, nodes, None, datetime(2021, 7, 3, 9))
    june = {"2021-06-26", "2021-06-27", "2021-06-28", "2021-06-29", "2021-06-30"}  # 07-01 and 07-02 are not
    assert {e.partition for e in tick.asset_events} == june
    alerts = len(receiver)
    assert evaluate_deadlines(instance, nodes, None, datetime(2026, 11, 25, 9)).asset_events == []
    assert len(receiver) == alerts


def test_the_sensor_flags_only_hours_that_have_passed_in_utc():
    # hour_counts' input is 1 h late when an hour is unpublished 1 h after it closed; nothing is ever published
    domains = load_all(HOURLY)
    sensor = build_deadline_sensor("central", MeshGraph(domains, []).nodes_of("central"), get_settings().automation)
    assert sensor is not None

    with local_time_zone("Asia/Tokyo"), dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral()) as context:
        before = datetime.now(UTC)
        result = sensor(context)
        after = datetime.now(UTC)

    def overdue(now: datetime) -> list[str]:
        closed = now.replace(minute=0, second=0, microsecond=0)
        return [f"{closed - timedelta(hours=back):%Y-%m-%d-%H:%M}" for back in range(7, 1, -1)]

    flagged = sorted(e.partition for e in result.asset_events)
    assert flagged in (overdue(before), overdue(after))
    assert {e.metadata["input_deadline"].value for e in result.asset_events} == {"late"}


def test_an_unreachable_webhook_never_stops_the_flags(monkeypatch):
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_COURIER", "http://127.0.0.1:1/hook?token=secret")
    instance, nodes = courier()
    handler = logging.handlers.BufferingHandler(capacity=100)
    logger = logging.getLogger("mesh_assets.automation.deadlines")
    logger.addHandler(handler)
    try:
        tick = evaluate_deadlines(instance, nodes, None, datetime(2021, 6, 3, 9))
    finally:
        logger.removeHandler(handler)

    flagged = {(e.asset_key, e.partition, e.metadata["input_deadline"].value) for e in tick.asset_events}
    assert flagged == {(CONSUMER, "2021-06-02", "late"), (CONSUMER, "2021-06-02", "timed_out")}
    assert len(json.loads(tick.cursor)) == 2
    warnings = [r.getMessage() for r in handler.buffer if r.levelno == logging.WARNING]
    refused = "the webhook in MESH_ALERT_WEBHOOK_COURIER is unreachable ([Errno 111] Connection refused)"
    assert warnings == [f"alert to courier's channel failed: {refused}; it will be retried"] * 2  # never the URL


def test_a_timed_out_input_alerts_its_own_owners_as_well_as_the_readers(webhook):
    """``timeout_hours`` tells the product waiting and the input's producer, each on their domain's channel."""
    receiver, point = webhook
    point("courier")
    point("central")
    instance, nodes = courier()

    evaluate_deadlines(instance, nodes, None, datetime(2021, 6, 3, 9))

    alerts = [r["mesh"] for r in receiver]
    producer = [a for a in alerts if a["domain"] == "central"]
    assert len(producer) == 1  # the timeout only, not the earlier freshness flag
    assert (producer[0]["table"], producer[0]["partitions"]) == ("order_descriptors", ["2021-06-02"])
    assert "read by courier.courier_distances_points_intermediate" in producer[0]["message"]
    assert {a["domain"] for a in alerts} == {"courier", "central"} and len(alerts) == 3


OPS = """\
name: ops
owner: ops@example.com
contacts: [{kind: chat, value: "#ops"}]
start_date: 2021-01-01
external:
  - {table: raw_shifts, regions: [eu, latam]}
  - {table: raw_clicks, partitioning: hourly}
tables:
  - table: shifts_daily
    inputs: [{table: raw_shifts, freshness_hours: 2}]
    sql: SELECT * FROM ops.raw_shifts
  - table: shifts_3_days
    inputs: [{table: raw_shifts, window: last_3, freshness_hours: 2}]
    sql: SELECT * FROM ops.raw_shifts
  - table: clicks_hourly
    partitioning: hourly
    inputs: [{table: raw_clicks, freshness_hours: 1}]
    sql: SELECT * FROM ops.raw_clicks
"""


def ops(tmp_path: Path) -> tuple[dg.DagsterInstance, list[Node]]:
    """A domain reading a regional daily table and an hourly one, each published for a long history."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "ops.yaml").write_text(OPS)
    instance = dg.DagsterInstance.ephemeral()
    shifts, clicks = dg.AssetKey(["ops", "raw_shifts"]), dg.AssetKey(["ops", "raw_clicks"])
    day = datetime(2021, 1, 1)
    while day < datetime(2021, 6, 10):  # both regions every day to June 9th; June 10th eu only
        for region in ("eu", "latam"):
            key = dg.MultiPartitionKey({"date": f"{day:%Y-%m-%d}", "region": region})
            instance.report_runless_asset_event(dg.AssetMaterialization(shifts, partition=key))
        day += timedelta(days=1)
    key = dg.MultiPartitionKey({"date": "2021-06-10", "region": "eu"})
    instance.report_runless_asset_event(dg.AssetMaterialization(shifts, partition=key))
    hour = datetime(2021, 6, 9)
    while hour < datetime(2021, 6, 11, 9):  # every hour from June 9th except 06:00 on June 11th
        if hour != datetime(2021, 6, 11, 6):
            instance.report_runless_asset_event(dg.AssetMaterialization(clicks, partition=f"{hour:%Y-%m-%d-%H:%M}"))
        hour += timedelta(hours=1)
    domains = load_all(tmp_path)
    return instance, MeshGraph(domains, []).nodes_of("ops")


def test_a_tick_flags_exactly_the_recent_partitions_whose_inputs_are_missing(tmp_path):
    """A regional day counts only with every region, a window needs each of its days, an hour its own hour;
    the months published before the lookback neither hide nor add a flag."""
    instance, nodes = ops(tmp_path)

    tick = evaluate_deadlines(instance, nodes, None, datetime(2021, 6, 11, 9, 30))

    flagged = {
        (e.asset_key.path[-1], e.partition, tuple(e.metadata["missing_input_partitions"].value))
        for e in tick.asset_events
    }
    assert flagged == {
        ("shifts_daily", "2021-06-10", ("2021-06-10",)),  # latam's June 10th is missing
        ("shifts_3_days", "2021-06-10", ("2021-06-10",)),
        ("clicks_hourly", "2021-06-11-06:00", ("2021-06-11-06:00",)),
    }
    assert {e.metadata["input_deadline"].value for e in tick.asset_events} == {"late"}


def test_a_tick_asks_the_instance_only_for_the_partitions_it_needs(tmp_path):
    """Reading every partition a table ever published grows with its history (three years of hours: 26,280
    partitions per input per tick); the tick asks for the few partitions its lookback needs instead."""
    instance, nodes = ops(tmp_path)
    asked: list[set[str] | None] = []
    latest = instance.get_latest_storage_id_by_partition

    def spy(key, event_type, partitions=None, **kwargs):
        asked.append(partitions)
        return latest(key, event_type, partitions, **kwargs)

    instance.get_latest_storage_id_by_partition = spy  # type: ignore[method-assign]
    instance.get_materialized_partitions = None  # type: ignore[assignment]  # reading them all would fail

    evaluate_deadlines(instance, nodes, None, datetime(2021, 6, 11, 9, 30))

    assert asked and all(partitions for partitions in asked)
    assert max(len(partitions) for partitions in asked) <= 2 * (7 + 2)  # 7 days and a 3-day window, 2 regions


DAEMON = Path(__file__).resolve().parents[1] / "fixtures" / "daemon" / "domains"


def test_a_stale_dimension_flags_the_waiting_partitions_and_alerts_both_owners_once_per_publication(webhook):
    receiver, point = webhook
    point("sales")
    point("feeds")
    instance = dg.DagsterInstance.ephemeral()
    menu = dg.AssetKey(["feeds", "menu"])
    instance.report_runless_asset_event(dg.AssetMaterialization(menu))
    nodes = MeshGraph(load_all(DAEMON), []).nodes_of("sales")
    later = datetime.now(UTC) + timedelta(hours=1)  # strict_totals allows the menu 0.0005 h, totals 24 h

    tick = evaluate_deadlines(instance, nodes, None, later)

    flagged = {(e.asset_key.path[-1], e.metadata["input_deadline"].value) for e in tick.asset_events}
    assert flagged == {("strict_totals", "stale")}
    days = sorted(e.partition for e in tick.asset_events)
    assert days == [(later - timedelta(days=back)).date().isoformat() for back in range(7, 0, -1)]
    consumer, producer = (r["mesh"] for r in receiver)
    assert (consumer["domain"], consumer["table"], consumer["partitions"]) == ("sales", "strict_totals", days)
    assert "input feeds.menu stale for sales.strict_totals: feeds.menu (stale: last updated" in consumer["message"]
    assert "freshness_hours is 0.0005 h)" in consumer["message"]
    assert (producer["domain"], producer["table"]) == ("feeds", "menu")

    again = evaluate_deadlines(instance, nodes, tick.cursor, later + timedelta(hours=1))
    assert again.asset_events == [] and len(receiver) == 2  # the same breach is told once

    instance.report_runless_asset_event(dg.AssetMaterialization(menu))  # published again, then stale again
    anew = evaluate_deadlines(instance, nodes, again.cursor, later + timedelta(hours=2))
    assert len(anew.asset_events) == 7 and len(receiver) == 4


FAILING = """\
name: ops
owner: ops@example.com
contacts: [{kind: chat, value: "#ops"}]
start_date: 2021-06-01
end_date: 2021-07-01
external:
  - {table: raw_orders}
tables:
  - table: orders_failing
    inputs: [{table: raw_orders, timeout_hours: 2, on_timeout: fail}]
    sql: SELECT * FROM ops.raw_orders
  - table: orders_waiting
    inputs: [{table: raw_orders, timeout_hours: 2}]
    sql: SELECT * FROM ops.raw_orders
"""


def test_on_timeout_fail_launches_the_timed_out_partition_to_fail_it_and_wait_launches_nothing(tmp_path):
    """A partition whose input timed out runs once (``on_timeout: fail``), for readiness to refuse it and the
    partition to show failed; ``wait``, the default, keeps waiting for automation to run it once it lands."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "ops.yaml").write_text(FAILING)
    nodes = MeshGraph(load_all(tmp_path), []).nodes_of("ops")
    instance = dg.DagsterInstance.ephemeral()
    instance.report_runless_asset_event(
        dg.AssetMaterialization(dg.AssetKey(["ops", "raw_orders"]), partition="2021-06-01")
    )

    early = evaluate_deadlines(instance, nodes, None, datetime(2021, 6, 3, 1))  # 2021-06-02 closed 1 h ago
    assert early.run_requests == []
    tick = evaluate_deadlines(instance, nodes, early.cursor, datetime(2021, 6, 3, 3))
    failing = dg.AssetKey(["ops", "orders_failing"])
    launched = [(r.asset_selection, r.partition_key, r.tags[TIMED_OUT_TAG]) for r in tick.run_requests]
    assert launched == [([failing], "2021-06-02", "ops.raw_orders")]
    assert evaluate_deadlines(instance, nodes, tick.cursor, datetime(2021, 6, 3, 4)).run_requests == []

    sensor = build_deadline_sensor("ops", nodes, get_settings().automation)
    waiting = dg.AssetKey(["ops", "orders_waiting"])
    graph = dg.Definitions(assets=[dg.AssetSpec(failing), dg.AssetSpec(waiting)]).resolve_asset_graph()
    assert sensor is not None and sensor.asset_selection.resolve(graph) == {failing}  # what it may launch


def test_on_timeout_fail_without_a_timeout_is_refused_naming_the_field(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "ops.yaml").write_text(FAILING.replace("timeout_hours: 2, on_timeout", "on_timeout"))
    errors = validate(load_all(tmp_path))
    assert [(e.file.rsplit("/", 1)[-1], e.line, e.field) for e in errors] == [
        ("ops.yaml", 10, "tables.0.inputs.raw_orders.on_timeout")
    ]
    assert "on_timeout: fail needs timeout_hours" in errors[0].message
