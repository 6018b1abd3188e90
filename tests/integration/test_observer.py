"""The external-table observer against a real Delta table: each commit's partitions, once."""

from __future__ import annotations

import json
from datetime import datetime

import dagster as dg
import pytest

from mesh_assets import MeshResource
from mesh_assets.automation.observer import build_observer, observe
from mesh_assets.compat import DATA_VERSION_TAG
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.product import DataProduct, ExternalTable
from mesh_assets.settings import get_settings
from mesh_examples.landing import ingest_hours, land_raw_order_events

pytestmark = pytest.mark.spark

EVENTS = dg.AssetKey(["central", "raw_order_events"])
PRODUCT = DataProduct(
    domain="central",
    name="order_events",
    owner="team:central",
    contacts=[{"kind": "chat", "value": "#central"}],
    start_date="2021-06-01",
    external=(ExternalTable(table="raw_order_events", partitioning="hourly", partition_column="p_hour"),),
)


def _tick(
    sensor: dg.SensorDefinition,
    mesh: MeshResource,
    cursor: str | None,
    asset: dg.AssetKey = EVENTS,
) -> tuple[list[str], str | None]:
    with dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(), cursor=cursor, resources={"mesh": mesh}
    ) as context:
        result = sensor(context)
    assert all(e.asset_key == asset for e in result.asset_events)
    events = result.asset_events
    reported = [e for e in events if isinstance(e, dg.AssetMaterialization)]
    observed = events[: len(events) - len(reported)]
    # each reported partition is observed first (what Dagster's staleness reads), with the same data version:
    # the newest commit that changed it
    assert all(isinstance(e, dg.AssetObservation) for e in observed)
    assert [(e.partition, e.tags) for e in observed] == [(e.partition, e.tags) for e in reported]
    versions = [e.tags[DATA_VERSION_TAG] for e in reported]
    assert versions == [f"delta-v{e.metadata['delta_version'].value}" for e in reported]
    return [e.partition for e in reported], result.cursor


def test_observer_reports_exactly_the_partitions_each_commit_touched(spark, tmp_path) -> None:
    mesh = MeshResource(warehouse=str(tmp_path / "wh"))
    sensor = build_observer("central", list(tables_of(PRODUCT)), get_settings().automation)
    assert sensor is not None

    assert _tick(sensor, mesh, None) == ([], "{}")  # no table yet: nothing, and nothing remembered

    ingest_hours(spark, mesh.registry, datetime(2021, 6, 1, 0), 2)  # versions 0 and 1
    keys, cursor = _tick(sensor, mesh, "{}")
    assert keys == ["2021-06-01-00:00", "2021-06-01-01:00"]
    assert json.loads(cursor)["central.raw_order_events"]["version"] == 1

    assert _tick(sensor, mesh, cursor) == ([], cursor)  # no new commit: nothing reported, cursor unchanged

    ingest_hours(spark, mesh.registry, datetime(2021, 6, 1, 1), 1)  # a re-published hour (version 2)
    keys, cursor = _tick(sensor, mesh, cursor)
    assert keys == ["2021-06-01-01:00"]

    from mesh_examples import generator

    hours = [datetime(2021, 6, 1, h) for h in (2, 3, 4)]
    rows = [row for hour in hours for row in generator.raw_order_events(hour, 7)]
    land_raw_order_events(spark, mesh.registry, hours[0], hours[-1], rows)  # one commit, three hours
    keys, cursor = _tick(sensor, mesh, cursor)
    assert keys == ["2021-06-01-02:00", "2021-06-01-03:00", "2021-06-01-04:00"]
    assert json.loads(cursor)["central.raw_order_events"]["version"] == 3
    assert _tick(sensor, mesh, cursor) == ([], cursor)


def test_regional_commits_are_reported_per_day_and_region(spark, tmp_path) -> None:
    product = DataProduct(
        domain="courier",
        name="shifts",
        owner="team:courier",
        contacts=[{"kind": "chat", "value": "#courier"}],
        start_date="2021-06-01",
        external=(ExternalTable(table="raw_shifts", regions=("apac", "eu", "latam")),),
    )
    mesh = MeshResource(warehouse=str(tmp_path / "wh"))
    sensor = build_observer("courier", list(tables_of(product)), get_settings().automation)
    location = mesh.registry.location("courier", "raw_shifts")

    def land(rows: list[tuple]) -> None:
        df = spark.createDataFrame(rows, "courier_id long, region string, p_date date")
        df.write.format("delta").mode("append").partitionBy("p_date", "region").save(location)

    day = datetime(2021, 6, 1).date()
    land([(1, "eu", day), (2, "latam", day), (3, "mars", day)])  # Europe's and LatAm's midnights
    keys, cursor = _tick(sensor, mesh, None, dg.AssetKey(["courier", "raw_shifts"]))
    assert keys == ["2021-06-01|eu", "2021-06-01|latam"]  # an undeclared region is no partition
    land([(4, "apac", day)])
    assert _tick(sensor, mesh, cursor, dg.AssetKey(["courier", "raw_shifts"]))[0] == ["2021-06-01|apac"]
    warnings: list[str] = []
    observe(list(tables_of(product)), mesh.registry, {}, warnings.append)  # a first observation: the snapshot
    assert len(warnings) == 1
    assert warnings[0].startswith("courier.raw_shifts version 1: partition value '2021-06-01' of p_date")
    assert warnings[0].endswith("region 'mars' is not one of apac, eu, latam; skipped")
