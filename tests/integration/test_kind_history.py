"""Kind ``history`` (SCD type 2) on real Spark, Delta and Dagster.

The fixture domain (tests/fixtures/history/domains/hist) lands a daily snapshot of couriers (``raw_couriers``:
courier, zone, updated_at); ``courier_history`` (Python) keeps its history by ``updated_at``, ``courier_zones``
(YAML + SQL) by checking ``zone``. Each test asserts the versions in the Delta table: zone, valid_from,
valid_to (as UTC text), is_current and the partition that opened the version.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import functions as F
from reliability import ROOT, failure_message, wait_for
from test_faults import committed_files, data_files
from zones import local_time_zone

from mesh_assets import History, MeshResource, executable_assets, mesh_definitions
from mesh_assets.assets.specs import table_pool
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.backfill import plan_rebuild
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.strategies import Target, strategy_for
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "history" / "domains"
HISTORY = dg.AssetKey(["hist", "courier_history"])
ZONES = dg.AssetKey(["hist", "courier_zones"])
D1, D2, D3, D4 = "2021-06-01", "2021-06-02", "2021-06-03", "2021-06-04"
TEXT = "yyyy-MM-dd HH:mm:ss"


class Couriers:
    """A warehouse and an instance; land a day's snapshot of the couriers, run the history tables, read them."""

    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / "warehouse"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(DOMAINS)
        self.cursors: dict[str, str | None] = {}

    def land(self, day: str, couriers: list[tuple[int | None, str | None, str]]) -> None:
        """Replace ``day`` of the landed snapshots with (courier_id, zone, updated_at in UTC) rows; observe it."""
        frame = self.spark.createDataFrame(
            [(c, z, u, date.fromisoformat(day)) for c, z, u in couriers],
            "courier_id bigint, zone string, updated_at string, p_date date",
        ).withColumn("updated_at", F.to_timestamp("updated_at"))
        where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
        frame.write.format("delta").mode("overwrite").partitionBy("p_date").option("replaceWhere", where).save(
            self.mesh.registry.location("hist", "raw_couriers")
        )
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def run(self, key: dg.AssetKey, start: str, end: str | None = None, tags: dict[str, str] | None = None):
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[key],
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start}
            | (tags or {}),
            raise_on_error=False,
        )

    def location(self, key: dg.AssetKey) -> str:
        return self.mesh.registry.location(*key.path)

    def versions(self, key: dg.AssetKey) -> list[tuple]:
        """(courier, zone, valid_from, valid_to, is_current, opened by) per version, times as UTC text."""
        table = self.spark.read.format("delta").load(self.location(key))
        return sorted(
            tuple(r)
            for r in table.select(
                "courier_id",
                "zone",
                F.date_format("valid_from", TEXT),
                F.date_format("valid_to", TEXT),
                "is_current",
                F.date_format("p_date", "yyyy-MM-dd"),
            ).collect()
        )

    def version(self, key: dg.AssetKey) -> int:
        return self.spark.sql(f"DESCRIBE HISTORY delta.`{self.location(key)}`").first()["version"]


@pytest.fixture
def couriers(spark, tmp_path) -> Couriers:
    return Couriers(spark, tmp_path)


FIRST = [(1, "north", "2021-05-30 08:00:00"), (2, "south", "2021-05-31 09:30:00"), (3, "east", "2021-05-31 10:00:00")]


def test_updated_at_first_write_changes_deletes_and_a_rerun_that_commits_nothing(couriers):
    couriers.land(D1, FIRST)
    assert couriers.run(HISTORY, D1).success
    assert couriers.versions(HISTORY) == [
        (1, "north", "2021-05-30 08:00:00", None, True, D1),
        (2, "south", "2021-05-31 09:30:00", None, True, D1),
        (3, "east", "2021-05-31 10:00:00", None, True, D1),
    ]

    # 1 moved (a later updated_at); 2's zone differs but its updated_at did not move (no new version);
    # 3 is gone from the source (closed at the partition's start); 4 is new.
    couriers.land(
        D2,
        [
            (1, "west", "2021-06-01 12:00:00"),
            (2, "elsewhere", "2021-05-31 09:30:00"),
            (4, "north", "2021-06-01 07:00:00"),
        ],
    )
    assert couriers.run(HISTORY, D2).success
    second = [
        (1, "north", "2021-05-30 08:00:00", "2021-06-01 12:00:00", False, D1),
        (1, "west", "2021-06-01 12:00:00", None, True, D2),
        (2, "south", "2021-05-31 09:30:00", None, True, D1),
        (3, "east", "2021-05-31 10:00:00", "2021-06-02 00:00:00", False, D1),
        (4, "north", "2021-06-01 07:00:00", None, True, D2),
    ]
    assert couriers.versions(HISTORY) == second
    version = couriers.version(HISTORY)

    assert couriers.run(HISTORY, D2).success  # the same input again: nothing to add, no commit
    assert couriers.version(HISTORY) == version
    assert couriers.versions(HISTORY) == second

    # A late, out-of-order state of 1 (an updated_at older than its current version) opens nothing;
    # 3 comes back and opens a new version; 2 and 4 unchanged.
    couriers.land(
        D3,
        [
            (1, "south", "2021-05-31 00:00:00"),
            (2, "south", "2021-05-31 09:30:00"),
            (3, "east", "2021-06-02 15:00:00"),
            (4, "north", "2021-06-01 07:00:00"),
        ],
    )
    assert couriers.run(HISTORY, D3).success
    assert couriers.versions(HISTORY) == [
        *second[:4],
        (3, "east", "2021-06-02 15:00:00", None, True, D3),
        second[4],
    ]
    assert couriers.version(HISTORY) == version + 1


def test_check_columns_from_yaml_open_versions_at_the_partition_start_in_utc_under_tokyo_time(couriers):
    with local_time_zone("Asia/Tokyo"):
        couriers.land(D1, [(1, "north", "2021-05-30 08:00:00"), (2, None, "2021-05-30 08:00:00")])
        assert couriers.run(ZONES, D1).success
        # 1 moves; 2's zone stays null (nulls equal: no new version), its updated_at is not looked at.
        couriers.land(D2, [(1, "west", "2021-05-30 08:00:00"), (2, None, "2021-06-01 23:00:00")])
        assert couriers.run(ZONES, D2).success
        version = couriers.version(ZONES)
        assert couriers.run(ZONES, D2).success
        rows = couriers.versions(ZONES)
    assert couriers.version(ZONES) == version
    assert rows == [
        (1, "north", "2021-06-01 00:00:00", "2021-06-02 00:00:00", False, D1),
        (1, "west", "2021-06-02 00:00:00", None, True, D2),
        (2, None, "2021-06-01 00:00:00", None, True, D1),
    ]


def test_the_latest_partition_rerun_with_changed_input_replaces_its_versions(couriers):
    couriers.land(D1, FIRST)
    couriers.land(D2, [(1, "west", "2021-06-01 12:00:00"), (2, "south", "2021-05-31 09:30:00")])
    assert couriers.run(HISTORY, D1, D2).success  # a range: applied in order, one commit per partition
    assert couriers.version(HISTORY) == 1

    # Day 2 corrected: 1 did not move after all, 3 was not deleted, 2 moved.
    couriers.land(D2, [*FIRST[:1], (2, "east", "2021-06-01 18:00:00"), FIRST[2]])
    assert couriers.run(HISTORY, D2).success
    corrected = [
        (1, "north", "2021-05-30 08:00:00", None, True, D1),
        (2, "south", "2021-05-31 09:30:00", "2021-06-01 18:00:00", False, D1),
        (2, "east", "2021-06-01 18:00:00", None, True, D2),
        (3, "east", "2021-05-31 10:00:00", None, True, D1),
    ]
    assert couriers.versions(HISTORY) == sorted(corrected)
    version = couriers.version(HISTORY)
    assert couriers.run(HISTORY, D2).success
    assert couriers.version(HISTORY) == version  # the corrected input again: nothing to change


def test_an_earlier_partition_is_refused_and_a_rebuild_replays_every_partition_in_order(couriers):
    couriers.land(D1, FIRST)
    couriers.land(D2, [(1, "west", "2021-06-01 12:00:00"), *FIRST[1:]])
    couriers.land(D3, [(1, "west", "2021-06-01 12:00:00"), FIRST[1]])
    couriers.land(D4, [(1, "west", "2021-06-01 12:00:00"), FIRST[1]])
    assert couriers.run(HISTORY, D1, D4).success
    version = couriers.version(HISTORY)

    refused = couriers.run(HISTORY, D1)
    assert not refused.success
    message = failure_message(refused)
    assert (
        f"hist.courier_history (history on courier_id by updated_at updated_at) keeps versions in order and {D1} "
        f"comes before its latest applied partition {D4}"
    ) in message
    assert "`mesh rebuild hist/courier_history`" in message
    assert couriers.version(HISTORY) == version

    couriers.land(D1, [(1, "south", "2021-05-29 08:00:00"), *FIRST[1:]])  # day 1 corrected: 1 started south
    plan = plan_rebuild(couriers.defs.resolve_asset_graph(), "hist/courier_history")
    [(asset, rng)] = plan.runs()  # one run: every partition, replayed in order, the first recreating the table
    assert couriers.run(asset, rng.start, rng.end, plan.tags).success
    assert couriers.versions(HISTORY) == [
        (1, "south", "2021-05-29 08:00:00", "2021-06-01 12:00:00", False, D1),
        (1, "west", "2021-06-01 12:00:00", None, True, D2),
        (2, "south", "2021-05-31 09:30:00", None, True, D1),
        (3, "east", "2021-05-31 10:00:00", "2021-06-03 00:00:00", False, D1),
    ]


def test_a_range_stops_at_a_failing_check_and_refuses_the_partitions_after_it_by_name(couriers):
    couriers.land(D1, FIRST)
    couriers.land(D2, [(1, "west", "2021-06-01 12:00:00"), *FIRST[1:]])
    couriers.land(D3, [(1, None, "2021-06-02 12:00:00"), *FIRST[1:]])  # a null zone: not_null_zone fails
    couriers.land(D4, [(1, "east", "2021-06-03 12:00:00"), *FIRST[1:]])

    result = couriers.run(HISTORY, D1, D4)

    assert not result.success
    message = failure_message(result)
    assert f"check not_null_zone on partition {D3} failed" in message
    assert f"partition {D4} not computed: not applied: {D2} was the last applied, in order" in message
    assert couriers.version(HISTORY) == 1  # days 1 and 2, one commit each
    assert couriers.versions(HISTORY) == [
        (1, "north", "2021-05-30 08:00:00", "2021-06-01 12:00:00", False, D1),
        (1, "west", "2021-06-01 12:00:00", None, True, D2),
        (2, "south", "2021-05-31 09:30:00", None, True, D1),
        (3, "east", "2021-05-31 10:00:00", None, True, D1),
    ]
    assert couriers.instance.get_materialized_partitions(HISTORY) == {D1, D2}


def test_duplicate_keys_are_refused_by_name_and_nothing_is_written(couriers):
    couriers.land(D1, FIRST)
    assert couriers.run(HISTORY, D1).success
    couriers.land(D2, [*FIRST, (1, "west", "2021-06-01 12:00:00")])

    result = couriers.run(HISTORY, D2)

    assert not result.success
    assert f"check unique_key (courier_id) on partition {D2} failed" in failure_message(result)
    assert couriers.version(HISTORY) == 0
    assert [v[-1] for v in couriers.versions(HISTORY)] == [D1, D1, D1]


@pytest.mark.slow
def test_a_run_killed_mid_merge_leaves_the_previous_version_and_a_rerun_converges(couriers, tmp_path):
    ids = range(300)
    couriers.land(D1, [(i, "north", "2021-05-30 08:00:00") for i in ids])
    assert couriers.run(HISTORY, D1).success
    version, before = couriers.version(HISTORY), couriers.versions(HISTORY)
    location = couriers.location(HISTORY)
    files = data_files(location)

    couriers.land(D2, [(i, "south", "2021-06-01 12:00:00") for i in ids])  # every courier moves
    env = {
        **os.environ,
        "MESH_HOME": str(tmp_path / "home"),
        "MESH_WAREHOUSE": str(couriers.mesh.warehouse),
        "MESH_PROJECT_ROOT": str(ROOT),
        "DAGSTER_HOME": str(tmp_path / "home" / "dagster"),
        "MESH_TEST_MAX_RECORDS_PER_FILE": "1",  # one row per file: the MERGE's write is caught half way
    }
    job = subprocess.Popen(
        [sys.executable, str(DOMAINS.parent / "materialize.py"), "hist/courier_history", D2],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: data_files(location) - files or job.poll() is not None, 300, "the MERGE to start writing")
        os.killpg(job.pid, signal.SIGKILL)  # the driver and its JVM, as a lost machine would
        job.wait(30)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert job.returncode == -signal.SIGKILL and data_files(location) - committed_files(location)

    assert couriers.version(HISTORY) == version
    assert couriers.versions(HISTORY) == before

    assert couriers.run(HISTORY, D2).success
    assert couriers.versions(HISTORY) == sorted(
        [(i, "north", "2021-05-30 08:00:00", "2021-06-01 12:00:00", False, D1) for i in ids]
        + [(i, "south", "2021-06-01 12:00:00", None, True, D2) for i in ids]
    )
    assert couriers.version(HISTORY) == version + 1


def test_the_history_tables_runs_queue_on_its_pool(couriers):
    """Two runs of one table never commit at once: its step holds the table's pool (one slot), as the queueing
    of tests/integration/test_concurrent_writers.py::test_runs_of_one_table_queue_on_its_pool shows."""
    graph = couriers.defs.resolve_asset_graph()
    assert graph.get(HISTORY).pools == {table_pool("hist", "courier_history")}


def test_deletes_keep_and_null_keys_applied_by_the_strategy(spark, tmp_path):
    """``deletes: keep`` leaves a missing key current; a null key is a key like any other (nulls equal)."""
    kind = History(unique_key="courier_id", check_columns=("zone",), deletes="keep")
    location = str(tmp_path / "zones")
    mesh = MeshResource(warehouse=str(tmp_path / "wh"))

    def apply(day: str, rows: list[tuple[int | None, str]]):
        part = PartitionRange.from_keys(Grain.DAILY, day, day)
        target = Target(location, "t.zones", mesh.registry.s3, "p_date", part, commit_info={"day": day})
        staged = spark.createDataFrame(rows, "courier_id bigint, zone string").withColumn("p_date", F.lit(day))
        return strategy_for(kind).commit(spark, staged.withColumn("p_date", F.to_date("p_date")), target)

    apply(D1, [(1, "north"), (None, "south")])
    result = apply(D2, [(None, "west")])
    assert result.changes == {"inserted": 1, "updated": 1, "deleted": 0}
    assert not apply(D2, [(None, "west")]).committed
    table = spark.read.format("delta").load(location)
    rows = table.select("courier_id", "zone", F.date_format("valid_to", TEXT), "is_current").collect()
    assert sorted(map(tuple, rows), key=str) == sorted(
        [(1, "north", None, True), (None, "south", "2021-06-02 00:00:00", False), (None, "west", None, True)], key=str
    )
