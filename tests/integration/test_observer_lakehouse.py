"""The observer against external Delta tables that live like production tables: maintenance commits, log
clean-up past its cursor, a corrupt commit file, partition values off the table's grid, a restarted instance."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest
from deltalake import DeltaTable

from mesh_assets import MeshResource
from mesh_assets.automation.observer import build_observer, observe
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.product import DataProduct, ExternalTable
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

EVENTS = dg.AssetKey(["central", "raw_events"])


def product(*tables: ExternalTable, end_date: str | None = None) -> DataProduct:
    return DataProduct(
        domain="central",
        name="events",
        owner="team:central",
        contacts=[{"kind": "chat", "value": "#central"}],
        start_date="2021-06-01",
        end_date=end_date,
        external=tables,
    )


HOURLY = product(ExternalTable(table="raw_events", partitioning="hourly", partition_column="p_hour"))


def land(spark, location: str, *hours: str) -> None:
    """One append commit with two rows in each hour (``p_hour`` values as given, UTC)."""
    rows = [(i, datetime.fromisoformat(h)) for h in hours for i in range(2)]
    df = spark.createDataFrame(rows, "id long, p_hour timestamp")
    df.write.format("delta").mode("append").partitionBy("p_hour").save(location)


def tick(
    sensor: dg.SensorDefinition, mesh: MeshResource, cursor: str | None, instance: dg.DagsterInstance | None = None
) -> tuple[list[str], dg.SensorResult]:
    with dg.build_sensor_context(
        instance=instance or dg.DagsterInstance.ephemeral(), cursor=cursor, resources={"mesh": mesh}
    ) as context:
        result = sensor(context)
    assert all(e.asset_key == EVENTS for e in result.asset_events)
    return [e.partition for e in reported(result)], result


def reported(result: dg.SensorResult) -> list[dg.AssetMaterialization]:
    """The tick's reports (each partition's observation of its data version comes before them)."""
    return [e for e in result.asset_events if isinstance(e, dg.AssetMaterialization)]


def observer(tmp_path: Path, spec: DataProduct = HOURLY) -> tuple[dg.SensorDefinition, MeshResource, str]:
    mesh = MeshResource(warehouse=str(tmp_path / "wh"))
    sensor = build_observer("central", list(tables_of(spec)), get_settings().automation)
    assert sensor is not None
    return sensor, mesh, mesh.registry.location("central", "raw_events")


def test_maintenance_commits_report_nothing_and_request_no_run_but_a_delete_is_reported(spark, tmp_path) -> None:
    """OPTIMIZE, ZORDER and VACUUM rewrite or delete files without changing the data: no partition is reported."""
    sensor, mesh, location = observer(tmp_path)
    land(spark, location, "2021-06-01 00:00", "2021-06-01 01:00")
    land(spark, location, "2021-06-01 00:00", "2021-06-01 01:00")  # two small files per hour
    keys, first = tick(sensor, mesh, None)
    assert keys == ["2021-06-01-00:00", "2021-06-01-01:00"]

    spark.sql(f"OPTIMIZE delta.`{location}`")  # version 2: rewrites both hours' files, dataChange false
    keys, result = tick(sensor, mesh, first.cursor)
    assert keys == [] and result.run_requests == []
    assert json.loads(result.cursor)["central.raw_events"]["version"] == 2  # read past it, never again

    spark.sql(f"OPTIMIZE delta.`{location}` ZORDER BY (id)")  # version 3: rewrites each hour's file again
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    context = spark.sparkContext
    context.setJobGroup("vacuum", "the test's VACUUM")
    try:  # versions 4 and 5: VACUUM START and END, deleting the files the rewrites replaced
        spark.sql(f"VACUUM delta.`{location}` RETAIN 0 HOURS")
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    tracker = context.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup("vacuum") for s in tracker.getJobInfo(j).stageIds]
    ran = [info for s in stages if (info := tracker.getStageInfo(s)) is not None]  # a skipped stage has no info
    assert ran and max(info.numTasks for info in ran) <= 8  # Spark's default lists with 10,000
    operations = [h["operation"] for h in DeltaTable(location).history()]
    assert operations[:3] == ["VACUUM END", "VACUUM START", "OPTIMIZE"]
    assert len(list(Path(location).glob("p_hour=*/*.parquet"))) == 2  # one file per hour is left
    keys, result = tick(sensor, mesh, result.cursor)
    assert keys == [] and result.run_requests == []
    assert json.loads(result.cursor)["central.raw_events"]["version"] == 5

    spark.sql(f"DELETE FROM delta.`{location}` WHERE p_hour = TIMESTAMP'2021-06-01 01:00:00' AND id = 0")
    assert tick(sensor, mesh, result.cursor)[0] == ["2021-06-01-01:00"]


def _age_log(location: str) -> None:
    """Make every file of the log three days old: older than the table's ``logRetentionDuration``."""
    old = time.time() - 3 * 86400
    for path in (Path(location) / "_delta_log").iterdir():
        if path.is_file():
            os.utime(path, (old, old))


def test_a_log_cleaned_up_past_the_cursor_is_compared_with_what_was_reported(spark, tmp_path) -> None:
    """The commits after the cursor are gone: the snapshot after the newest checkpoint is compared with the
    partitions reported before. A partition added or deleted in the gap is reported; one only compacted
    (OPTIMIZE, same rows) is not; the observer never stalls."""
    sensor, mesh, location = observer(tmp_path)
    instance = dg.DagsterInstance.ephemeral()

    def observed(cursor: str | None) -> tuple[list[str], dg.SensorResult]:
        keys, result = tick(sensor, mesh, cursor, instance)
        for event in result.asset_events:
            instance.report_runless_asset_event(event)  # as the daemon stores a sensor's events
        return keys, result

    land(spark, location, "2021-06-01 00:00", "2021-06-01 01:00")
    land(spark, location, "2021-06-01 00:00", "2021-06-01 01:00")  # two small files per hour, 4 rows each
    keys, first = observed(None)
    assert keys == ["2021-06-01-00:00", "2021-06-01-01:00"]
    assert [e.metadata["dagster/row_count"].value for e in reported(first)] == [4, 4]

    spark.sql(
        f"ALTER TABLE delta.`{location}` SET TBLPROPERTIES ('delta.checkpointInterval' = '2', "
        "'delta.logRetentionDuration' = 'interval 1 hours', 'delta.deletedFileRetentionDuration' = 'interval 1 hours')"
    )  # version 2, the commit after the cursor
    spark.sql(f"OPTIMIZE delta.`{location}` WHERE p_hour = TIMESTAMP'2021-06-01 00:00:00'")  # 3: hour 00 compacted
    spark.sql(f"DELETE FROM delta.`{location}` WHERE p_hour = TIMESTAMP'2021-06-01 01:00:00'")  # 4: hour 01 gone
    land(spark, location, "2021-06-01 02:00")  # version 5
    land(spark, location, "2021-06-01 03:00")  # version 6, a checkpoint
    _age_log(location)  # everything so far is now older than the retention
    DeltaTable(location).cleanup_metadata()  # the log clean-up: keeps checkpoint 6 and what follows it
    land(spark, location, "2021-06-01 04:00")  # version 7
    log = Path(location) / "_delta_log"
    assert not (log / f"{2:020d}.json").exists() and (log / f"{6:020d}.checkpoint.parquet").exists()

    keys, result = observed(first.cursor)
    assert keys == ["2021-06-01-01:00", "2021-06-01-02:00", "2021-06-01-03:00", "2021-06-01-04:00"]
    rows = {e.partition: e.metadata["dagster/row_count"].value for e in reported(result)}
    assert rows == {"2021-06-01-01:00": 0, "2021-06-01-02:00": 2, "2021-06-01-03:00": 2, "2021-06-01-04:00": 2}
    assert json.loads(result.cursor)["central.raw_events"]["version"] == 7
    assert observed(result.cursor)[0] == []

    # A first observation of the cleaned-up table: the hours only the checkpoint holds are reported too.
    assert tick(sensor, mesh, None)[0] == ["2021-06-01-00:00"] + [f"2021-06-01-0{h}:00" for h in range(2, 5)]


def test_one_unreadable_log_skips_that_table_alerts_once_and_is_read_again(spark, tmp_path, webhook) -> None:
    received, point = webhook
    point("central")
    spec = product(
        ExternalTable(table="raw_a", partition_column="p_date"), ExternalTable(table="raw_b", partition_column="p_date")
    )
    tables = list(tables_of(spec))
    mesh = MeshResource(warehouse=str(tmp_path / "wh"))
    a, b = (mesh.registry.location("central", t) for t in ("raw_a", "raw_b"))

    def land_day(location: str, day: str) -> None:
        df = spark.createDataFrame([(1, datetime.fromisoformat(day).date())], "id long, p_date date")
        df.write.format("delta").mode("append").partitionBy("p_date").save(location)

    def keys(events: list[dg.AssetMaterialization]) -> list[str]:
        return [f"{e.asset_key.path[1]} {e.partition}" for e in events]

    land_day(a, "2021-06-01")
    land_day(b, "2021-06-01")
    events, cursor = observe(tables, mesh.registry, {})
    assert keys(events) == ["raw_a 2021-06-01", "raw_b 2021-06-01"]

    land_day(a, "2021-06-02")
    land_day(b, "2021-06-02")
    commit = Path(a) / "_delta_log" / f"{1:020d}.json"
    whole = commit.read_text()
    commit.write_text(whole[: len(whole) // 2])  # a truncated commit file
    warnings: list[str] = []
    events, cursor = observe(tables, mesh.registry, cursor, warnings.append)
    assert keys(events) == ["raw_b 2021-06-02"]  # the other table is observed as usual
    assert len(warnings) == 1 and "central.raw_a" in warnings[0] and "cannot be read" in warnings[0]
    assert a in warnings[0] and "JSONDecodeError" in warnings[0]
    assert [r["mesh"]["table"] for r in received] == ["raw_a"]
    assert received[0]["mesh"]["kind"] == "external log unreadable" and received[0]["mesh"]["owner"] == "team:central"

    events, cursor = observe(tables, mesh.registry, cursor, warnings.append)
    assert events == [] and len(received) == 1  # still unreadable: skipped again, no second alert

    commit.write_text(whole)  # readable again
    events, cursor = observe(tables, mesh.registry, cursor, warnings.append)
    assert keys(events) == ["raw_a 2021-06-02"]
    assert "unreadable" not in cursor["central.raw_a"] and len(received) == 1


def test_values_that_are_not_partitions_of_the_table_are_reported_and_skipped(spark, tmp_path) -> None:
    _, mesh, location = observer(tmp_path)
    # off the hour, future, before the start, past the end (the table's hours stop with 2021-06-01)
    bad = ("2021-06-01 01:30", "2999-01-01 00:00", "2021-05-31 23:00", "2021-06-02 00:00")
    land(spark, location, "2021-06-01 00:00", *bad)
    warnings: list[str] = []
    ending = product(*HOURLY.external, end_date="2021-06-02")
    tables = list(tables_of(ending))
    events, cursor = observe(tables, mesh.registry, {}, warnings.append)  # a first observation (the snapshot)
    assert [e.partition for e in events] == ["2021-06-01-00:00"]
    land(spark, location, "2021-06-01 02:00", *bad)
    events, _ = observe(tables, mesh.registry, cursor, warnings.append)  # a new commit (its log entry)
    assert [e.partition for e in events] == ["2021-06-01-02:00"]
    assert len(warnings) == 8
    for reason in (
        "is not on the hour (UTC)",
        "is in the future",
        "is before the table's start date 2021-06-01",
        "is on or after the table's end date 2021-06-02 (its partitions stop)",
    ):
        assert sum(reason in w and "central.raw_events" in w and "p_hour" in w for w in warnings) == 2


def test_a_first_tick_over_tables_the_instance_already_knows_requests_no_run(spark, tmp_path) -> None:
    """``make dev`` after ``make demo``: the demo reported the landed hours into the instance; the daemon's
    observer starts without a cursor and must not report them again (consumers would recompute the demo)."""
    sensor, mesh, location = observer(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    land(spark, location, "2021-06-01 00:00", "2021-06-01 01:00")
    keys, demo = tick(sensor, mesh, None, instance)
    for event in demo.asset_events:
        instance.report_runless_asset_event(event)
    assert keys == ["2021-06-01-00:00", "2021-06-01-01:00"]

    keys, daemon = tick(sensor, mesh, None, instance)  # a new sensor cursor over the same instance
    assert keys == [] and daemon.run_requests == []
    land(spark, location, "2021-06-01 02:00")
    assert tick(sensor, mesh, daemon.cursor, instance)[0] == ["2021-06-01-02:00"]
