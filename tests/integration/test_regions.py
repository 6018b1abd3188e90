"""Date-by-region products over UTC data: a region's run writes exactly its (local date, region) partition, over
the UTC hours of that region's local day, in one commit; a reader of every region of a date waits for all of them.

The fixture (``tests/fixtures/regions/domains/central``): hourly ``raw_events`` landed in UTC hours,
``region_hours`` partitioned by date and region (eu: Europe/Madrid, latam: America/Sao_Paulo, apac:
Asia/Singapore) holding one row per hour of each local day, and two readers: ``hours_per_date`` (every region of
a date) and ``eu_hours`` (``region: eu``). The process runs under ``TZ=America/New_York``: nothing follows it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from zones import local_time_zone

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observer import observe
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.grain import Grain
from mesh_assets.storage.delta import snapshot_keys
from mesh_assets.storage.lake import open_table

WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "regions" / "domains"
REGION_HOURS = ["central", "region_hours"]
FIRST_HOUR = datetime(2024, 3, 29, tzinfo=UTC)
HOURS = [FIRST_HOUR + timedelta(hours=n) for n in range(4 * 24)]  # 2024-03-29..04-01 UTC


def snapshot(world: World) -> tuple[int, set[str]]:
    """The version of ``region_hours`` and the files of its snapshot."""
    table = open_table(world.mesh.registry.location(*REGION_HOURS), world.mesh.registry.s3, files=True)
    assert table is not None
    return table.version(), set(table.get_add_actions(flatten=True).column("path").to_pylist())


def failure(result: dg.ExecuteInProcessResult) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


@dataclass
class World:
    mesh: MeshResource
    instance: dg.DagsterInstance

    def materialize(self, key: list[str], partition: str, raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            executable_assets(mesh_definitions(FIXTURE)),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(key)],
            partition_key=partition,
            raise_on_error=raise_on_error,
        )

    def table(self, key: list[str]) -> DataFrame:
        return self.mesh.spark.read.format("delta").load(self.mesh.registry.location(*key))

    def rows(self, key: list[str]) -> set[tuple]:
        """Every row with its hour as a UTC key (collected timestamps would be New York's wall-clock times)."""
        df = self.table(key).select("p_date", "region", F.date_format("hour", "yyyy-MM-dd HH:mm").alias("h"))
        return {(str(r["p_date"]), r["region"], r["h"]) for r in df.collect()}


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Four UTC days of hourly events landed and observed, one event per hour."""
    mesh = MeshResource(warehouse=str(tmp_path_factory.mktemp("regions") / f"wh-{uuid.uuid4().hex[:8]}"))
    world = World(mesh, dg.DagsterInstance.ephemeral())
    with local_time_zone("America/New_York"):
        rows = spark.createDataFrame([(h, h.strftime("%Y%m%d%H")) for h in HOURS], "p_hour timestamp, event_id string")
        location = mesh.registry.location("central", "raw_events")
        rows.write.format("delta").mode("overwrite").partitionBy("p_hour").save(location)
        products = load_all(FIXTURE)["central"].products
        events, _ = observe([t for p in products for t in tables_of(p) if t.external], mesh.registry, {})
        for event in events:
            world.instance.report_runless_asset_event(event)
        yield world


def test_a_region_s_run_writes_its_local_day_alone_and_readers_of_every_region_wait(world: World) -> None:
    for other in ("2024-03-31|latam", "2024-03-31|apac", "2024-03-30|eu"):
        world.materialize(REGION_HOURS, other)
    refused = world.materialize(["central", "hours_per_date"], "2024-03-31", raise_on_error=False)
    assert not refused.success
    assert "central.region_hours 2024-03-31|eu (not published)" in failure(refused)
    before = world.rows(REGION_HOURS)
    version, files = snapshot(world)

    result = world.materialize(REGION_HOURS, "2024-03-31|eu")

    recorded = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert recorded == {"2024-03-31|eu"}
    after, kept = snapshot(world)
    assert after == version + 1  # one commit
    written = open_table(world.mesh.registry.location(*REGION_HOURS), world.mesh.registry.s3).history(1)[0]
    assert written["operationParameters"]["predicate"].endswith("AND `region` = 'eu'")  # replaceWhere on both
    assert files <= kept  # every file of another partition is still there
    location = world.mesh.registry.location(*REGION_HOURS)
    assert snapshot_keys(location, world.mesh.registry.s3, Grain.DAILY, "p_date", "region") == {
        "2024-03-30|eu",
        "2024-03-31|eu",
        "2024-03-31|latam",
        "2024-03-31|apac",
    }
    rows = world.rows(REGION_HOURS)
    eu = sorted(h for d, r, h in rows if (d, r) == ("2024-03-31", "eu"))
    assert len(eu) == 23  # Madrid's clocks went forward: 2024-03-30 23:00 UTC to 2024-03-31 22:00 UTC
    assert (eu[0], eu[-1]) == ("2024-03-30 23:00", "2024-03-31 21:00")
    bounds = (
        world.table(REGION_HOURS)
        .where((F.col("region") == "eu") & (F.col("p_date") == F.lit("2024-03-31").cast("date")))
        .select(*(F.date_format(c, "yyyy-MM-dd HH:mm").alias(c) for c in ("starts_at", "ends_at")))
        .distinct()
        .collect()
    )
    assert [tuple(r) for r in bounds] == [("2024-03-30 23:00", "2024-03-31 22:00")]  # bound :starts_at, :ends_at
    regions = world.table(REGION_HOURS).select("region", "bound_region").distinct().collect()
    assert all(r["region"] == r["bound_region"] for r in regions)  # :region is the run's region
    assert rows - {(d, r, h) for d, r, h in rows if (d, r) == ("2024-03-31", "eu")} == before
    latam = sorted(h for d, r, h in rows if (d, r) == ("2024-03-31", "latam"))
    apac = sorted(h for d, r, h in rows if (d, r) == ("2024-03-31", "apac"))
    assert (latam[0], latam[-1], len(latam)) == ("2024-03-31 03:00", "2024-04-01 02:00", 24)
    assert (apac[0], apac[-1], len(apac)) == ("2024-03-30 16:00", "2024-03-31 15:00", 24)

    world.materialize(["central", "hours_per_date"], "2024-03-31")
    per_region = world.table(["central", "hours_per_date"]).collect()
    assert sorted((r["region"], r["hours"]) for r in per_region) == [("apac", 24), ("eu", 23), ("latam", 24)]


def test_a_reader_of_one_region_waits_for_that_region_alone(world: World) -> None:
    world.materialize(REGION_HOURS, "2024-03-30|eu")  # latam's and apac's 2024-03-30 are not published

    world.materialize(["central", "eu_hours"], "2024-03-30")

    rows = world.table(["central", "eu_hours"]).collect()
    assert [(str(r["p_date"]), r["hours"]) for r in rows] == [("2024-03-30", 24)]


def test_one_run_over_several_regions_commits_each_region_s_dates_alone(world: World) -> None:
    """A range of (date, region) keys in one run, as a single-run backfill from the UI's partition dialog
    launches it: each region's dates are replaced by a commit of their own."""
    version, _ = snapshot(world)
    before = world.rows(REGION_HOURS)
    tags = {
        "dagster/asset_partition_range_start": "2024-03-30|latam",
        "dagster/asset_partition_range_end": "2024-03-30|apac",
    }

    result = dg.materialize(
        executable_assets(mesh_definitions(FIXTURE)),
        instance=world.instance,
        resources={"mesh": world.mesh},
        selection=[dg.AssetKey(REGION_HOURS)],
        tags=tags,
    )

    recorded = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert recorded == {"2024-03-30|latam", "2024-03-30|apac"}
    assert snapshot(world)[0] == version + 2
    added = world.rows(REGION_HOURS) - before
    assert {(d, r) for d, r, _ in added} == {("2024-03-30", "latam"), ("2024-03-30", "apac")}
    assert len(added) == 48


def test_checks_on_their_own_judge_one_region_s_published_dates(world: World) -> None:
    world.materialize(REGION_HOURS, "2024-03-31|eu")
    checks = mesh_definitions(FIXTURE).resolve_job_def("central__checks")
    config = {"table": "region_hours", "start": "2024-03-30|eu", "end": "2024-03-31|eu"}

    run = checks.execute_in_process(
        {"ops": {"central__run_checks": {"config": config}}}, instance=world.instance, resources={"mesh": world.mesh}
    )

    judged = {(r.check_name, r.partition, r.passed) for r in run.get_asset_check_evaluations()}
    assert judged == {("not_null_event_id", "2024-03-30|eu", True), ("not_null_event_id", "2024-03-31|eu", True)}


def test_a_rebuild_of_a_regional_table_is_refused_and_writes_nothing(world: World) -> None:
    world.materialize(REGION_HOURS, "2024-03-30|eu")
    version, files = snapshot(world)

    refused = dg.materialize(
        executable_assets(mesh_definitions(FIXTURE)),
        instance=world.instance,
        resources={"mesh": world.mesh},
        selection=[dg.AssetKey(REGION_HOURS)],
        partition_key="2024-03-30|eu",
        tags={"mesh/rebuild": "true"},
        raise_on_error=False,
    )

    assert not refused.success
    assert "a rebuild would rewrite the whole table one region at a time" in failure(refused)
    assert snapshot(world) == (version, files)
