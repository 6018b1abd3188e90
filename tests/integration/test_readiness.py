"""Readiness on every path: a run computes a partition only from published, checked input partitions, and
writes only its own partitions, also when it creates the table."""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import functions as F
from trust import DAILY, DOMAINS, Sales
from webserver import BIN

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate
from mesh_examples import generator
from mesh_examples.landing import land_raw_order_events, land_raw_orders

pytestmark = pytest.mark.spark

WORLD_DAYS = 2  # 2021-06-01..02 landed and observed
WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events
DESCRIPTORS = ["central", "order_descriptors"]
ORDERS = ["food_delivery", "orders"]
RAW_ORDERS = dg.AssetKey(["food_delivery", "raw_orders"])
RELIABILITY = Path(__file__).resolve().parents[1] / "fixtures" / "reliability" / "domains"


def failure(result) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


def published(world, key: list[str]) -> set[str]:
    return world.instance.get_materialized_partitions(dg.AssetKey(key))


def test_a_day_with_23_of_its_24_hours_observed_is_refused_until_the_last_hour(world):
    day = date(2021, 6, 3)
    hours = generator.hours(day)
    early = [row for hour in hours[:23] for row in generator.raw_order_events(hour)]
    land_raw_order_events(world.mesh.spark, world.mesh.registry, hours[0], hours[22], early)
    world.observe()

    refused = world.materialize([DESCRIPTORS], day.isoformat(), raise_on_error=False)

    assert not refused.success
    message = failure(refused)
    assert "partition 2021-06-03 not computed" in message
    assert "central.raw_order_events 2021-06-03-23:00 (not landed)" in message
    assert "2021-06-03-22:00" not in message
    assert day.isoformat() not in published(world, DESCRIPTORS)
    assert not Path(world.mesh.registry.location(*DESCRIPTORS)).exists()  # nothing was written

    late = generator.raw_order_events(hours[23])
    land_raw_order_events(world.mesh.spark, world.mesh.registry, hours[23], hours[23], late)
    world.observe()
    assert world.materialize([DESCRIPTORS], day.isoformat()).success
    events = {row[0] for hour in hours for row in generator.raw_order_events(hour)}
    total = world.table(*DESCRIPTORS).where(F.col("p_date") == F.lit(day)).agg(F.sum("events")).first()[0]
    assert total == len(events)  # all 24 hours, each event once


def test_a_range_over_days_that_never_landed_publishes_only_the_landed_days(world):
    result = world.materialize([ORDERS], start="2021-06-01", end="2021-06-04", raise_on_error=False)

    assert not result.success
    message = failure(result)
    assert "partition 2021-06-03 not computed: food_delivery.raw_orders 2021-06-03 (not landed)" in message
    assert "partition 2021-06-04 not computed: food_delivery.raw_orders 2021-06-04 (not landed)" in message
    written = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert written == {"2021-06-01", "2021-06-02"}
    days = {r["p_date"] for r in world.table(*ORDERS).select("p_date").distinct().collect()}
    assert days == {date(2021, 6, 1), date(2021, 6, 2)}


def test_a_landed_day_whose_blocking_checks_have_not_run_is_refused(world):
    day = date(2021, 6, 5)
    land_raw_orders(world.mesh.spark, world.mesh.registry, day, day, generator.raw_orders(day))
    # reported as the observer does, before its check run has judged the new day
    world.instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=RAW_ORDERS, partition=day.isoformat()))

    result = world.materialize([ORDERS], day.isoformat(), raise_on_error=False)

    assert not result.success
    assert "food_delivery.raw_orders 2021-06-05 (check row_count not run)" in failure(result)
    assert day.isoformat() not in published(world, ORDERS)

    world.observe()  # the check run passes the day
    assert world.materialize([ORDERS], day.isoformat()).success


class Shifted:
    """The ``rel`` fixture domain in a throwaway warehouse; ``shifted_events`` moves rows marked ``next``."""

    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.defs = mesh_definitions(RELIABILITY)
        self.instance = dg.DagsterInstance.ephemeral()

    def land(self, day: str, payloads: list[str], observe: bool = True) -> None:
        d = date.fromisoformat(day)
        rows = [(i, p, d) for i, p in enumerate(payloads)]
        self.spark.createDataFrame(rows, "id bigint, payload string, p_date date").write.format("delta").mode(
            "overwrite"
        ).partitionBy("p_date").option(
            "replaceWhere", replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
        ).save(self.mesh.registry.location("rel", "raw_events"))
        if observe:
            observe_now(self.defs, self.instance, self.mesh)

    def run(self, day: str, table: str = "shifted_events"):
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(["rel", table])],
            partition_key=day,
            raise_on_error=False,
        )

    def location(self) -> str:
        return self.mesh.registry.location("rel", "shifted_events")


def test_every_write_refuses_rows_outside_its_partitions_also_the_first(spark, tmp_path):
    shifted = Shifted(spark, tmp_path)
    shifted.land("2021-06-01", ["ok", "next", "next"])

    first = shifted.run("2021-06-01")  # this write would create the table, where Delta checks no predicate

    assert not first.success
    assert (
        "rel.shifted_events: rows outside the run's partitions 2021-06-01 were refused, nothing was written: "
        "2021-06-02 (2 rows)" in failure(first)
    )
    assert not Path(shifted.location()).exists()
    assert shifted.instance.get_materialized_partitions(dg.AssetKey(["rel", "shifted_events"])) == set()

    shifted.land("2021-06-02", ["ok", "ok"])
    assert shifted.run("2021-06-02").success
    version = spark.sql(f"DESCRIBE HISTORY delta.`{shifted.location()}` LIMIT 1").first()["version"]
    shifted.land("2021-06-03", ["next"])

    later = shifted.run("2021-06-03")  # the table exists now: refused the same way, before Delta sees it

    assert not later.success
    assert "2021-06-04 (1 rows)" in failure(later)
    assert spark.sql(f"DESCRIBE HISTORY delta.`{shifted.location()}` LIMIT 1").first()["version"] == version
    rows = spark.read.format("delta").load(shifted.location()).collect()
    assert sorted((r["id"], r["p_date"]) for r in rows) == [(0, date(2021, 6, 2)), (1, date(2021, 6, 2))]
    assert date(2021, 6, 2) + timedelta(days=1) not in {r["p_date"] for r in rows}


def test_a_landed_partition_not_yet_observed_is_refused_saying_so_and_how_to_observe_it(spark, tmp_path):
    rel = Shifted(spark, tmp_path)
    rel.land("2021-06-01", ["ok"], observe=False)  # landed; the observer has not ticked since

    first = rel.run("2021-06-01", "events")

    assert not first.success
    unobserved = "rel.raw_events 2021-06-01 (landed, not observed yet by rel__observe_external_tables)"
    assert f"partition 2021-06-01 not computed: {unobserved}" in failure(first)
    assert "never published" not in failure(first)
    assert "observe_now(defs, instance, mesh)" in failure(first)

    observe_now(rel.defs, rel.instance, rel.mesh)
    assert rel.run("2021-06-01", "events").success
    rel.land("2021-06-02", ["ok"], observe=False)
    later = rel.run("2021-06-02", "events")
    assert "rel.raw_events 2021-06-02 (landed, not observed yet by rel__observe_external_tables)" in failure(later)

    missing = rel.run("2021-06-03", "events")
    assert "partition 2021-06-03 not computed: rel.raw_events 2021-06-03 (not landed)" in failure(missing)
    assert "observe_now" not in failure(missing)


def test_a_manual_cli_run_of_a_day_not_ready_fails_naming_the_input_and_writes_nothing(spark, tmp_path):
    """``dagster asset materialize --partition`` as an operator types it, in its own process, on the instance
    the observer reports to: raw sales landed for 2021-06-01 only, the daily total of 2021-06-02 asked for."""
    home = tmp_path / "dagster"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        sales = Sales(spark, tmp_path / "warehouse", instance)
        sales.land("2021-06-01", [1, 2])
    env = {**os.environ, "DAGSTER_HOME": str(home), "MESH_WAREHOUSE": str(tmp_path / "warehouse")}
    command = [str(BIN / "dagster"), "asset", "materialize", "-f", str(DOMAINS / "tr" / "definitions.py")]

    run = subprocess.run(
        [*command, "--select", "tr/daily_sales", "--partition", "2021-06-02"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert "partition 2021-06-02 not computed: tr.raw_sales 2021-06-02 (not landed)" in output
    assert "2021-06-01 (not" not in output
    assert not Path(sales.mesh.registry.location(*DAILY.path)).exists()  # nothing was written
    with dg.DagsterInstance.from_config(str(home)) as instance:
        [failed] = instance.get_runs()
        assert failed.status == dg.DagsterRunStatus.FAILURE
        assert instance.get_materialized_partitions(DAILY) == set()
