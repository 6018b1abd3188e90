"""Write-audit-publish on real Spark and Delta: bad partitions never reach readers or consumers."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.freshness import FreshnessState
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import InProcessTestWorkspaceLoadTarget, freeze_time
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._daemon.freshness import FreshnessDaemon
from delta.tables import DeltaTable
from failure_alerts import alert_failed_run

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "quality" / "domains"
TRENDS = FIXTURE.parents[1] / "quality_trends"
"""Checks judged against history or the clock: ``volume_anomaly`` and ``freshness``, with a code location."""
SCHEMA = "id bigint, kind string, amount bigint, p_date date"
GOOD = [(1, "a", 10), (2, "b", 20), (3, "a", 30)]
CLEAN = ["qa", "clean_events"]


class Quality:
    def __init__(self, spark, base: Path, fixture: Path = FIXTURE, instance: dg.DagsterInstance | None = None):
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.instance = instance or dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(fixture)
        self.assets = executable_assets(self.defs)
        self.spark = spark
        self.cursors: dict[str, str | None] = {}

    def land(self, day: str, rows: list[tuple], schema: str = SCHEMA) -> None:
        d = date.fromisoformat(day)
        df = self.spark.createDataFrame([(*r, d) for r in rows], schema)
        rng = PartitionRange.from_keys(Grain.DAILY, day, day)
        (
            df.write.format("delta")
            .mode("overwrite")
            .partitionBy("p_date")
            .option("replaceWhere", replace_predicate("p_date", rng))
            .option("mergeSchema", "true")
            .save(self.mesh.registry.location("qa", "raw_events"))
        )
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def reset_raw_schema(self) -> None:
        """Undo the upstream's added column, as its owner would after a drift incident."""
        location = self.mesh.registry.location("qa", "raw_events")
        raw = self.spark.read.format("delta").load(location).select("id", "kind", "amount", "p_date").localCheckpoint()
        raw.write.format("delta").mode("overwrite").option("overwriteSchema", "true").partitionBy("p_date").save(
            location
        )

    def run(self, key: list[str], partition: str | None = None, start: str | None = None, end: str | None = None):
        tags = {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end} if start else {}
        return dg.materialize(
            self.assets,
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(key)],
            partition_key=partition,
            tags=tags,
            raise_on_error=False,
        )

    def rows(self, table: str, day: str) -> list[tuple]:
        df = self.spark.read.format("delta").load(self.mesh.registry.location("qa", table))
        return sorted(tuple(r) for r in df.where(f"p_date = DATE'{day}'").drop("p_date").collect())

    def version(self, table: str) -> int:
        loc = self.mesh.registry.location("qa", table)
        return DeltaTable.forPath(self.spark, loc).history(1).collect()[0]["version"]

    def evaluations(self, check: str, partition: str, key: list[str] = CLEAN) -> list[dg.AssetCheckEvaluation]:
        records = self.instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey(key), check), limit=100
        )
        return [
            r.event.dagster_event.event_specific_data
            for r in records
            if r.event and r.event.dagster_event and r.partition == partition
        ]


@pytest.fixture(scope="module")
def qa(spark, tmp_path_factory) -> Quality:
    return Quality(spark, tmp_path_factory.mktemp("quality"))


def failure_message(result) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


BAD = {
    "nulls_in_key": ([*GOOD, (None, "a", 5)], SCHEMA, "not_null_id", "1 failing rows"),
    "duplicate_keys": ([*GOOD, (2, "b", 21)], SCHEMA, "unique_id", "2 failing rows"),
    "too_few_rows": (GOOD[:2], SCHEMA, "row_count", "2 rows, expected >= 3"),
    "schema_drift": (
        [(*r, "x") for r in GOOD],
        SCHEMA.replace("p_date", "extra string, p_date"),
        "schema_contract",
        "column extra is not in the contract",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_partition_is_not_published(qa, case):
    day = {
        "nulls_in_key": "2024-01-02",
        "duplicate_keys": "2024-01-03",
        "too_few_rows": "2024-01-04",
        "schema_drift": "2024-01-05",
    }[case]
    qa.land(day, GOOD)
    assert qa.run(CLEAN, day).success
    published, version = qa.rows("clean_events", day), qa.version("clean_events")

    rows, schema, check, detail = BAD[case]
    qa.land(day, rows, schema)
    result = qa.run(CLEAN, day)

    assert not result.success
    message = failure_message(result)
    assert f"check {check} on partition {day} failed" in message and detail in message
    assert qa.rows("clean_events", day) == published
    assert qa.version("clean_events") == version
    latest = qa.evaluations(check, day)[0]
    assert latest.passed is False and latest.blocking is True
    if case in {"nulls_in_key", "duplicate_keys"}:
        assert latest.metadata["failing_rows"].value >= 1
        assert latest.metadata["failing_sample"].value
    if case == "schema_drift":
        qa.reset_raw_schema()


def test_good_partitions_publish_in_a_run_over_several(qa):
    qa.land("2024-01-10", GOOD)
    qa.land("2024-01-11", [*GOOD, (None, "a", 1)])
    qa.land("2024-01-12", [(7, "a", 1), (8, "a", 2), (9, "b", 3)])
    result = qa.run(CLEAN, start="2024-01-10", end="2024-01-12")
    assert not result.success
    assert "check not_null_id on partition 2024-01-11 failed" in failure_message(result)
    published = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert published == {"2024-01-10", "2024-01-12"}
    assert qa.rows("clean_events", "2024-01-10") == sorted(GOOD)
    assert qa.rows("clean_events", "2024-01-11") == []
    assert [r[0] for r in qa.rows("clean_events", "2024-01-12")] == [7, 8, 9]
    assert qa.evaluations("not_null_id", "2024-01-11")[0].passed is False
    assert qa.evaluations("not_null_id", "2024-01-12")[0].passed is True


def test_warn_check_does_not_block(qa):
    day = "2024-01-15"
    qa.land(day, [*GOOD, (4, "zzz", 1)])
    result = qa.run(CLEAN, day)
    assert result.success
    assert len(qa.rows("clean_events", day)) == 4
    warn = qa.evaluations("accepted_values_kind", day)[0]
    assert warn.passed is False and warn.severity == dg.AssetCheckSeverity.WARN


def test_fixing_the_data_and_rerunning_publishes(qa):
    day = "2024-01-16"
    qa.land(day, GOOD[:1])
    assert not qa.run(CLEAN, day).success
    assert qa.rows("clean_events", day) == []
    qa.land(day, GOOD)
    assert qa.run(CLEAN, day).success
    assert qa.rows("clean_events", day) == sorted(GOOD)
    assert qa.evaluations("row_count", day)[0].passed is True


def test_consumer_waits_for_quality_unless_it_ignores_it(qa):
    day = "2024-01-20"
    qa.land(day, GOOD)
    assert qa.run(CLEAN, day).success
    qa.land(day, [*GOOD, (1, "a", 99)])
    assert not qa.run(CLEAN, day).success

    gated = qa.run(["qa", "daily_totals"], day)
    assert not gated.success
    assert f"qa.clean_events {day} (check unique_id failed)" in failure_message(gated)

    lenient = qa.run(["qa", "daily_totals_lenient"], day)
    assert lenient.success
    assert qa.rows("daily_totals_lenient", day) == [(3, 60)]


def test_backfill_skips_only_the_consumer_partitions_that_read_refused_data(qa):
    days = ["2024-01-24", "2024-01-25", "2024-01-26"]
    for day in days:
        qa.land(day, GOOD)
    assert qa.run(CLEAN, start=days[0], end=days[-1]).success
    qa.land(days[1], [*GOOD, (None, "a", 1)])
    assert not qa.run(CLEAN, days[1]).success  # the middle day's new data is refused

    backfill = qa.run(["qa", "daily_totals"], start=days[0], end=days[-1])
    assert not backfill.success
    assert f"partition {days[1]} not computed: qa.clean_events {days[1]} (check not_null_id failed)" in (
        failure_message(backfill)
    )
    assert qa.rows("daily_totals", days[0]) == [(3, 60)]
    assert qa.rows("daily_totals", days[1]) == []
    assert qa.rows("daily_totals", days[2]) == [(3, 60)]
    materialized = qa.instance.get_materialized_partitions(dg.AssetKey(["qa", "daily_totals"]))
    assert days[0] in materialized and days[2] in materialized and days[1] not in materialized


def test_failed_blocking_check_alerts_the_domain_channel(qa, webhook):
    received, point = webhook
    point("qa")
    day = "2024-01-25"
    qa.land(day, [*GOOD, (None, "a", 1)])
    result = qa.run(CLEAN, day)
    assert not result.success
    alert_failed_run(qa.defs, qa.instance, result.run_id, "qa")  # as the daemon does once the run failed
    told = {body["mesh"]["table"]: body for body in received}
    assert len(received) == len(told) == 3  # the producer, and each table that reads the refused day
    alert = told["clean_events"]["mesh"]
    assert (alert["kind"], alert["domain"], alert["product"]) == ("blocking check failed", "qa", "events")
    assert alert["partitions"] == [day] and alert["checks"] == ["not_null_id"]
    assert alert["channel"] == "#qa" and alert["run_url"].endswith(f"/runs/{result.run_id}")
    assert "qa.clean_events" in told["clean_events"]["text"] and day in told["clean_events"]["text"]
    for reader in ("daily_totals", "daily_totals_lenient"):
        told_reader = told[reader]["mesh"]
        assert (told_reader["kind"], told_reader["source"], told_reader["partitions"]) == (
            "input refused",
            "qa.clean_events",
            [day],
        )


def test_check_results_point_at_the_materialization_they_checked(qa):
    day = "2024-01-26"
    qa.land(day, GOOD)
    result = qa.run(CLEAN, day)
    assert result.success
    latest = qa.evaluations("not_null_id", day)[0]
    assert latest.target_materialization_data is not None
    assert latest.target_materialization_data.run_id == result.run_id


@pytest.fixture(scope="module")
def trends(spark, tmp_path_factory) -> Iterator[Quality]:
    with dg.instance_for_test() as instance:  # on disk: Dagster's daemons take no ephemeral instance
        yield Quality(spark, tmp_path_factory.mktemp("trends"), TRENDS / "domains", instance)


STEADY, WATCHED = ["qa", "steady_events"], ["qa", "watched_events"]


def test_a_volume_anomaly_refuses_a_blocking_partition_and_only_reports_a_warn_one(trends):
    """Three published days of 3, 4 and 3 rows; a day of 30 is outside 3 standard deviations of them."""
    history = {"2024-02-01": GOOD, "2024-02-02": [*GOOD, (4, "b", 40)], "2024-02-03": GOOD}
    for day, rows in history.items():
        trends.land(day, rows)
    for key in (STEADY, WATCHED):
        assert trends.run(key, start="2024-02-01", end="2024-02-03").success
    day, burst = "2024-02-04", [(i, "a", i) for i in range(30)]
    trends.land(day, burst)
    version = trends.version("steady_events")

    blocked = trends.run(STEADY, day)
    assert not blocked.success
    assert f"check volume_anomaly on partition {day} failed (30 rows vs mean 3.3 ± 3.0·0.6 over 3 partitions)" in (
        failure_message(blocked)
    )
    assert trends.rows("steady_events", day) == [] and trends.version("steady_events") == version
    refused = trends.evaluations("volume_anomaly", day, STEADY)[0]
    assert (refused.passed, refused.blocking, refused.metadata["rows"].value) == (False, True, 30)

    reported = trends.run(WATCHED, day)
    assert reported.success
    assert len(trends.rows("watched_events", day)) == 30
    warned = trends.evaluations("volume_anomaly", day, WATCHED)[0]
    assert (warned.passed, warned.blocking, warned.severity) == (False, False, dg.AssetCheckSeverity.WARN)


def test_freshness_warns_after_its_warn_lag_and_fails_after_its_max_lag(trends):
    """``Freshness(max_lag_hours=30, warn_lag_hours=24)`` judged by Dagster's freshness daemon, in this process,
    with the clock moved past each lag after a real publication."""
    day = "2024-02-10"
    trends.land(day, GOOD)
    assert trends.run(STEADY, day).success
    published = time.time()
    location = LoadableTargetOrigin(python_file=str(TRENDS / "location.py"), attribute="defs")
    origin = InProcessCodeLocationOrigin(location)
    states = []
    with WorkspaceProcessContext(trends.instance, InProcessTestWorkspaceLoadTarget(origin)) as workspace:
        for hours in (1, 25, 31):
            with freeze_time(published + hours * 3600):
                list(FreshnessDaemon().run_iteration(workspace))
            record = trends.instance.get_freshness_state_records([dg.AssetKey(STEADY)])[dg.AssetKey(STEADY)]
            states.append(record.freshness_state)
    assert states == [FreshnessState.PASS, FreshnessState.WARN, FreshnessState.FAIL]
