"""Time is UTC whatever the process's ``TZ``: landing, windows, hourly outputs and observed keys.

Each case runs with Python's local zone set to Europe/Madrid (clocks go forward at 01:00 UTC on 2023-03-26)
or Asia/Tokyo (UTC+9), over the days around that change. The fixture domain
(``tests/fixtures/time_zones/domains/central``) declares the ingestion's hourly ``raw_order_events``, a daily
product reading a day's 24 hours (``day_events``) and an hourly SQL product (``hour_counts``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from zones import local_time_zone

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observer import observe
from mesh_assets.cli import main as cli
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import tables_of
from mesh_assets.settings import get_settings
from mesh_examples import generator
from mesh_examples.landing import land_central

WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "time_zones" / "domains"
ZONES = ["Europe/Madrid", "Asia/Tokyo"]
DAYS = [date(2023, 3, 25), date(2023, 3, 26), date(2023, 3, 27)]
HOUR_COUNTS = dg.AssetKey(["central", "hour_counts"])
HOUR = "yyyy-MM-dd-HH:mm"


def hour_keys(df: DataFrame, column: str) -> list[str]:
    """``column``'s values as hourly partition keys, formatted by Spark (collected datetimes are local)."""
    return [r["k"] for r in df.select(F.date_format(column, HOUR).alias("k")).collect()]


def key_of(hour: datetime) -> str:
    return f"{hour:%Y-%m-%d-%H:%M}"


@dataclass
class World:
    zone: str
    mesh: MeshResource
    instance: dg.DagsterInstance
    observed: list[str] = field(default_factory=list)

    def observe(self) -> list[str]:
        """Report what the observer finds as materializations, as its sensor does; the keys it reported."""
        products = load_all(FIXTURE)["central"].products
        events, _ = observe([t for p in products for t in tables_of(p) if t.external], self.mesh.registry, {})
        for event in events:
            self.instance.report_runless_asset_event(event)
        return [e.partition for e in events]

    def materialize(self, key: list[str], start: str, end: str | None = None) -> dg.ExecuteInProcessResult:
        tags = {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end} if end else {}
        return dg.materialize(
            executable_assets(mesh_definitions(FIXTURE)),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(key)],
            partition_key=None if end else start,
            tags=tags,
        )

    def table(self, name: str) -> DataFrame:
        return self.mesh.spark.read.format("delta").load(self.mesh.registry.location("central", name))


@pytest.fixture(scope="module", params=ZONES)
def world(spark, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[World]:
    """The three days landed in one commit and observed; the module's tests run in the same zone."""
    zone = request.param
    mesh = MeshResource(warehouse=str(tmp_path_factory.mktemp("tz") / f"wh-{uuid.uuid4().hex[:8]}"))
    world = World(zone, mesh, dg.DagsterInstance.ephemeral())
    with local_time_zone(zone):
        land_central(spark, mesh.registry, DAYS)
        world.observed = world.observe()
        yield world


def test_landing_and_observation_name_the_utc_hours(world: World) -> None:
    hours = [h for day in DAYS for h in generator.hours(day)]
    landed = world.table("raw_order_events").groupBy(F.date_format("p_hour", HOUR).alias("k")).count().collect()
    assert {r["k"]: r["count"] for r in landed} == {key_of(h): len(generator.raw_order_events(h)) for h in hours}
    assert world.observed == [key_of(h) for h in hours]


def test_a_day_over_hourly_input_reads_its_24_utc_hours(world: World) -> None:
    world.materialize(["central", "day_events"], "2023-03-25", "2023-03-27")

    published = world.table("day_events")
    for day in DAYS:
        rows = published.where(F.col("p_date") == F.lit(day.isoformat()).cast("date"))
        expected = [(key_of(h), e[0]) for h in generator.hours(day) for e in generator.raw_order_events(h)]
        got = [
            (r["k"], r["event_id"])
            for r in rows.select(F.date_format("event_hour", HOUR).alias("k"), "event_id").collect()
        ]
        assert sorted(got) == sorted(expected), f"{day} in {world.zone}"
        assert len({k for k, _ in got}) == 24


def test_an_hourly_output_lands_in_the_hour_dagster_records(world: World) -> None:
    hours = generator.hours(DAYS[1])[:4]  # 00:00..03:00 UTC: Madrid's clocks jump from 02:00 to 03:00 at 01:00 UTC
    result = world.materialize(["central", "hour_counts"], key_of(hours[0]), key_of(hours[-1]))  # a new table
    world.materialize(["central", "hour_counts"], key_of(hours[1]))  # one hour again, on the existing table

    recorded = {e.materialization.partition for e in result.get_asset_materialization_events()}
    counted = {
        e.materialization.partition: e.materialization.metadata["dagster/row_count"].value
        for e in result.get_asset_materialization_events()
    }
    assert counted == {key_of(h): 1 for h in hours}  # each hour's rows, from the commit's own files
    rows = (
        world.table("hour_counts")
        .select(
            *(F.date_format(c, HOUR).alias(c) for c in ("p_hour", "first_hour", "last_hour", "bound_start")), "events"
        )
        .collect()
    )
    assert sorted(tuple(r) for r in rows) == [(key_of(h),) * 4 + (len(generator.raw_order_events(h)),) for h in hours]
    assert recorded == {key_of(h) for h in hours} == world.instance.get_materialized_partitions(HOUR_COUNTS)


def test_mesh_ingest_lands_the_hours_it_names(world: World, tmp_path: Path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("MESH_WAREHOUSE", str(tmp_path / "warehouse"))
    get_settings.cache_clear()
    try:
        assert cli.main(["ingest", "--start", "2023-03-26T01", "--hours", "2"]) == 0  # 02:00 does not exist in Madrid
        mesh = MeshResource()
        ingested = World(world.zone, mesh, dg.DagsterInstance.ephemeral())
        table = ingested.table("raw_order_events")
        observed = ingested.observe()
    finally:
        get_settings.cache_clear()

    hours = generator.hours(DAYS[1])[1:3]
    printed = [line for line in capfd.readouterr().out.splitlines() if line.startswith("landed")]
    assert printed == [f"landed central.raw_order_events {h:%Y-%m-%d %H}:00 UTC" for h in hours]
    assert sorted(hour_keys(table, "p_hour")) == sorted(key_of(h) for h in hours for _ in generator.raw_order_events(h))
    assert observed == [key_of(h) for h in hours]


def test_a_driver_started_under_madrid_time_writes_the_utc_hours(tmp_path: Path) -> None:
    """The JVM takes its default zone from ``TZ`` when it starts and Mesh does not pin it: a driver process
    started under Europe/Madrid has a Madrid JVM, a UTC Spark session, and writes each hour around the clock
    change at its UTC instant, in the partition Dagster records."""
    env = {**os.environ, "TZ": "Europe/Madrid"}
    done = subprocess.run(
        [sys.executable, str(FIXTURE.parent / "driver.py"), str(tmp_path / "warehouse")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert (said["session_zone"], said["user_timezone"]) == ("UTC", "Europe/Madrid")
    hours = generator.hours(DAYS[1])[:4]
    assert said["recorded"] == [key_of(h) for h in hours]
    assert said["rows"] == [
        [key_of(h), int(h.timestamp()), int(h.timestamp()), len(generator.raw_order_events(h))] for h in hours
    ]
