"""Rollups with real Spark and Delta: a weekly product over a daily one, refused until all seven days are
published (their checks are judged as in tests/unit/test_rollup_readiness.py), then written as one partition;
a 15-minute input rolled up into hours with ``min_complete``, the missing quarter recorded on the hour's
materialization."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import UTC, Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "rollups" / "domains"
DAILY = dg.AssetKey(["roll", "daily_sales"])
WEEKLY = dg.AssetKey(["roll", "weekly_sales"])
HOURLY = dg.AssetKey(["roll", "hourly_clicks"])
OFF_GRID = dg.AssetKey(["roll", "weekly_off_grid"])
WEEK = [(date(2026, 11, 2) + timedelta(days=d)).isoformat() for d in range(7)]  # Monday to Sunday
QUARTER = Grain.minutes(15)


class Roll:
    """The ``roll`` fixture domain in a throwaway warehouse: land, observe, materialize."""

    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / "warehouse"))
        self.defs = mesh_definitions(DOMAINS)
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursors: dict[str, str | None] = {}

    def land(self, table: str, column: str, rng: PartitionRange, rows: list[tuple], schema: str) -> None:
        frame = self.spark.createDataFrame(rows, schema)
        frame.write.format("delta").mode("overwrite").partitionBy(column).option(
            "replaceWhere", replace_predicate(column, rng)
        ).save(self.mesh.registry.location("roll", table))
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def land_day(self, day: str, amount: int) -> None:
        rows = [(1, amount, date.fromisoformat(day))]
        self.land(
            "raw_sales",
            "p_date",
            PartitionRange.from_keys(Grain.DAILY, day, day),
            rows,
            "id bigint, amount bigint, p_date date",
        )

    def land_quarter(self, key: str, clicks: int) -> None:
        start = QUARTER.parse(key)
        rows = [(i, start) for i in range(clicks)]
        self.land("raw_clicks", "p_ts", PartitionRange(QUARTER, start, start), rows, "id bigint, p_ts timestamp")

    def materialize(self, key: dg.AssetKey, start: str, end: str | None = None):
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[key],
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start},
            raise_on_error=False,
        )

    def location(self, key: dg.AssetKey) -> str:
        return self.mesh.registry.location(*key.path)


def failure(result) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


def test_a_week_is_refused_until_its_seven_days_are_published_then_written_as_one_partition(spark, tmp_path):
    roll = Roll(spark, tmp_path)
    for i, day in enumerate(WEEK[:6], start=1):
        roll.land_day(day, i)
    assert roll.materialize(DAILY, WEEK[0], WEEK[5]).success

    refused = roll.materialize(WEEKLY, WEEK[0])

    assert not refused.success
    assert "roll.daily_sales 2026-11-08 (not published)" in failure(refused)
    assert not Path(roll.location(WEEKLY)).exists()

    roll.land_day(WEEK[6], 7)
    assert roll.materialize(DAILY, WEEK[6]).success
    assert roll.materialize(WEEKLY, WEEK[0]).success

    rows = spark.read.format("delta").load(roll.location(WEEKLY)).collect()
    assert [(r["p_week"], r["days"], r["amount"]) for r in rows] == [(date(2026, 11, 2), 7, 28)]
    assert DeltaTable.forPath(spark, roll.location(WEEKLY)).history().count() == 1
    assert roll.instance.get_materialized_partitions(WEEKLY) == {"2026-11-02"}

    off_grid = roll.materialize(OFF_GRID, WEEK[0])  # its rows say p_week is the Sunday: no week starts there

    assert not off_grid.success
    assert "rows outside the run's partitions 2026-11-02 were refused, nothing was written: 2026-11-08 (1 rows)" in (
        failure(off_grid)
    )
    assert not Path(roll.location(OFF_GRID)).exists()


def test_an_hour_of_quarters_runs_with_three_of_four_and_records_the_missing_one(spark, tmp_path):
    roll = Roll(spark, tmp_path)
    for key, clicks in (("2026-11-02-10:00", 1), ("2026-11-02-10:15", 2), ("2026-11-02-10:45", 4)):
        roll.land_quarter(key, clicks)
    roll.land_quarter("2026-11-02-11:00", 1)

    result = roll.materialize(HOURLY, "2026-11-02-10:00", "2026-11-02-11:00")

    assert not result.success  # 11:00 has one quarter of four: refused, 10:00 published
    assert "roll.raw_clicks (1 of 4 partitions ready; min_complete 0.75 needs 3)" in failure(result)
    rows = spark.read.format("delta").load(roll.location(HOURLY)).collect()
    assert [(r["p_hour"].astimezone(UTC), r["clicks"]) for r in rows] == [(datetime(2026, 11, 2, 10, tzinfo=UTC), 7)]
    event = roll.instance.get_latest_materialization_event(HOURLY)
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.partition == "2026-11-02-10:00"
    missing = event.asset_materialization.metadata["incomplete_inputs"].value
    assert json.loads(json.dumps(missing)) == {"roll.raw_clicks": ["2026-11-02-10:30"]}
