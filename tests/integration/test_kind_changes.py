"""Kind ``changes``: a CDC feed landed by an outside writer applied by sequence, as SCD type 1 and 2, on real
Spark, Delta and Dagster (the ``cdc`` fixture domain, tests/fixtures/kind_changes).

Events are ``(op, id, name, changed_at)``; ``op = 'D'`` deletes the key and ``op`` is not stored."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.assets.specs import table_pool
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.errors import SpecValidationError
from mesh_assets.model.grain import Grain
from mesh_assets.model.kinds import Merge, Partitions
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import S3Settings
from mesh_assets.storage.strategies import Target, merging, strategy_for
from mesh_assets.storage.strategies.changes import tombstones_location
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "kind_changes" / "domains"
CURRENT = dg.AssetKey(["cdc", "customers"])
HISTORY = dg.AssetKey(["cdc", "customer_history"])
FEED = "op string, id bigint, name string, changed_at timestamp, p_date date"


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2021-06-01T{clock}")


class Feed:
    """A warehouse with the landed CDC table; land a day of events, run, read the tables."""

    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / "warehouse"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(DOMAINS)
        self.cursors: dict[str, str | None] = {}

    def location(self, key: dg.AssetKey) -> str:
        return self.mesh.registry.location(*key.path)

    def land(self, day: str, events: list[tuple[str | None, int, str | None, str]]) -> None:
        d = date.fromisoformat(day)
        rows = [(op, i, name, at(clock), d) for op, i, name, clock in events]
        where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
        self.spark.createDataFrame(rows, FEED).write.format("delta").mode("overwrite").partitionBy("p_date").option(
            "replaceWhere", where
        ).save(self.mesh.registry.location("cdc", "raw_customer_changes"))
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def run(self, key: dg.AssetKey, start: str, end: str | None = None, *, raise_on_error: bool = True):
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[key],
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start},
            raise_on_error=raise_on_error,
        )

    def version(self, key: dg.AssetKey) -> int:
        return DeltaTable.forPath(self.spark, self.location(key)).history(1).collect()[0]["version"]

    def tombstones_version(self) -> int:
        return (
            DeltaTable.forPath(self.spark, tombstones_location(self.location(CURRENT)))
            .history(1)
            .collect()[0]["version"]
        )

    def current(self) -> dict[int, tuple[str, str]]:
        """SCD type 1: name and the sequence (time of day) of each key's row."""
        rows = self.spark.read.format("delta").load(self.location(CURRENT)).collect()
        return {r["id"]: (r["name"], r["changed_at"].strftime("%H:%M")) for r in rows}

    def history(self) -> set[tuple[int, str, str, str | None, bool]]:
        """SCD type 2: (id, name, valid_from, valid_to, is_current) of every version."""
        rows = self.spark.read.format("delta").load(self.location(HISTORY)).collect()

        def clock(t: datetime | None) -> str | None:
            return t.strftime("%H:%M") if t is not None else None

        return {(r["id"], r["name"], clock(r["valid_from"]), clock(r["valid_to"]), r["is_current"]) for r in rows}


DAY1 = [
    ("I", 1, "ann", "10:00"),
    ("I", 2, "bob", "10:00"),
    ("U", 1, "ann b", "11:00"),
    ("I", 3, "cat", "09:00"),
    ("D", 3, None, "09:30"),
]
DAY2 = [  # landed in no particular order; some older than what day 1 applied
    ("U", 2, "bob c", "12:00"),
    ("U", 1, "ann late", "10:30"),  # older than ann b (11:00): ignored
    ("U", 2, "bob b", "11:30"),  # older than bob c of the same day: a version for history, not the current
    ("U", 3, "cat again", "09:15"),  # a late update before 3's delete (09:30): never brings 3 back
    ("I", 4, "dan", "08:00"),
]
DAY3 = [("D", 1, None, "13:00"), ("U", 1, "ann after delete", "12:30"), ("I", 3, "cat new", "14:00")]


@pytest.fixture
def feed(spark, tmp_path) -> Feed:
    return Feed(spark, tmp_path)


def test_scd1_applies_a_feed_by_sequence_keeps_deletes_and_commits_nothing_on_a_rerun(feed):
    feed.land("2021-06-01", DAY1)
    feed.run(CURRENT, "2021-06-01")
    assert feed.current() == {1: ("ann b", "11:00"), 2: ("bob", "10:00")}
    assert set(feed.spark.read.format("delta").load(feed.location(CURRENT)).columns) == {
        "id",
        "name",
        "changed_at",
        "p_date",
    }  # op is the feed's, not the table's

    feed.land("2021-06-02", DAY2)
    feed.run(CURRENT, "2021-06-02")
    assert feed.current() == {1: ("ann b", "11:00"), 2: ("bob c", "12:00"), 4: ("dan", "08:00")}

    version, tombstones = feed.version(CURRENT), feed.tombstones_version()
    result = feed.run(CURRENT, "2021-06-02")  # the same events again: nothing changes, nothing is committed
    assert (feed.version(CURRENT), feed.tombstones_version()) == (version, tombstones)
    [materialization] = result.asset_materializations_for_node("cdc__customers")
    assert materialization.metadata["unchanged"].value is True

    feed.land("2021-06-03", DAY3)
    feed.run(CURRENT, "2021-06-03")  # 1 deleted at 13:00 (its 12:30 update is older); 3 inserted anew at 14:00
    assert feed.current() == {2: ("bob c", "12:00"), 3: ("cat new", "14:00"), 4: ("dan", "08:00")}

    feed.land("2021-06-04", [("U", 1, "ann late again", "12:45")])
    feed.run(CURRENT, "2021-06-04")  # a late update after 1's delete: no resurrection
    assert feed.current() == {2: ("bob c", "12:00"), 3: ("cat new", "14:00"), 4: ("dan", "08:00")}

    version = feed.version(CURRENT)
    feed.run(CURRENT, "2021-06-01", "2021-06-02")  # a backfill of a past range: every event is older, no change
    assert feed.version(CURRENT) == version
    assert feed.current() == {2: ("bob c", "12:00"), 3: ("cat new", "14:00"), 4: ("dan", "08:00")}


def test_scd2_keeps_every_version_in_sequence_and_closes_deleted_keys(feed):
    feed.land("2021-06-01", DAY1)
    feed.run(HISTORY, "2021-06-01")
    assert feed.history() == {
        (1, "ann", "10:00", "11:00", False),
        (1, "ann b", "11:00", None, True),
        (2, "bob", "10:00", None, True),
        (3, "cat", "09:00", "09:30", False),  # closed by its delete
    }

    feed.land("2021-06-02", DAY2)
    feed.run(HISTORY, "2021-06-02")
    day2 = {
        (1, "ann", "10:00", "11:00", False),
        (1, "ann b", "11:00", None, True),  # the late 10:30 update is older than what the table holds: ignored
        (2, "bob", "10:00", "11:30", False),
        (2, "bob b", "11:30", "12:00", False),  # out of order within the day: put in sequence
        (2, "bob c", "12:00", None, True),
        (3, "cat", "09:00", "09:30", False),  # the 09:15 update before its delete does not reopen it
        (4, "dan", "08:00", None, True),
    }
    assert feed.history() == day2

    version = feed.version(HISTORY)
    result = feed.run(HISTORY, "2021-06-02")  # the latest partition again, same events: no commit
    assert feed.version(HISTORY) == version
    [materialization] = result.asset_materializations_for_node("cdc__customer_history")
    assert materialization.metadata["unchanged"].value is True

    feed.land("2021-06-03", DAY3)
    feed.run(HISTORY, "2021-06-03")
    assert feed.history() == (day2 - {(1, "ann b", "11:00", None, True)}) | {
        (1, "ann b", "11:00", "12:30", False),
        (1, "ann after delete", "12:30", "13:00", False),  # then deleted at 13:00
        (3, "cat new", "14:00", None, True),  # a new event after the delete: the key lives again
    }

    before = feed.history()
    feed.land("2021-06-04", [("U", 1, "ann late again", "12:45")])
    feed.run(HISTORY, "2021-06-04")  # late, older than the delete at 13:00: nothing added
    assert feed.history() == before

    version = feed.version(HISTORY)
    with pytest.raises(Exception, match=r"mesh rebuild cdc/customer_history"):
        feed.run(HISTORY, "2021-06-02")  # a past range of versions: refused, only a rebuild replays it
    assert feed.version(HISTORY) == version


@pytest.mark.parametrize("key", [CURRENT, HISTORY], ids=["scd1", "scd2"])
def test_two_events_of_a_key_at_one_sequence_are_refused_by_name_and_a_failing_check_keeps_the_table(feed, key):
    feed.land("2021-06-01", DAY1)
    feed.run(key, "2021-06-01")
    version, rows = feed.version(key), feed.spark.read.format("delta").load(feed.location(key)).collect()

    feed.land("2021-06-02", [("U", 2, "bob b", "12:00"), ("U", 2, "bob c", "12:00")])
    result = feed.run(key, "2021-06-02", raise_on_error=False)
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed and e.blocking}
    assert failed == {"unique_key"}
    assert feed.version(key) == version

    feed.land("2021-06-02", [("U", 2, "bob b", "12:00"), (None, 4, "dan", "12:00")])  # no op: not_null fails
    result = feed.run(key, "2021-06-02", raise_on_error=False)
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed and e.blocking}
    assert failed == {"not_null_op"}
    assert feed.version(key) == version
    assert sorted(feed.spark.read.format("delta").load(feed.location(key)).collect()) == sorted(rows)


@pytest.mark.parametrize("key", [CURRENT, HISTORY], ids=["scd1", "scd2"])
def test_a_run_killed_before_its_merge_leaves_the_table_readable_and_a_rerun_converges(feed, key, monkeypatch):
    """SCD type 1 commits its tombstones first: a run killed after them and before the table's ``MERGE`` leaves
    the table at its version, and the re-run applies the delete once; SCD type 2 has only the ``MERGE``."""
    feed.land("2021-06-01", DAY1)
    feed.run(key, "2021-06-01")
    version, before = feed.version(key), feed.spark.read.format("delta").load(feed.location(key)).collect()

    def killed(*args, **kwargs):
        raise RuntimeError("the job was killed")

    feed.land("2021-06-02", [("D", 2, None, "12:00"), ("U", 1, "ann c", "12:00")])
    monkeypatch.setattr(merging, "_merge", killed)
    result = feed.run(key, "2021-06-02", raise_on_error=False)
    assert not result.success
    assert feed.version(key) == version
    assert sorted(feed.spark.read.format("delta").load(feed.location(key)).collect()) == sorted(before)

    monkeypatch.undo()
    feed.run(key, "2021-06-02")
    if key == CURRENT:
        assert feed.current() == {1: ("ann c", "12:00")}
        feed.land("2021-06-03", [("U", 2, "bob late", "11:59")])
        feed.run(key, "2021-06-03")  # the delete committed as a tombstone in the killed run still holds
        assert feed.current() == {1: ("ann c", "12:00")}
    else:
        assert {(v[0], v[1], v[3], v[4]) for v in feed.history() if v[0] in (1, 2)} == {
            (1, "ann", "11:00", False),
            (1, "ann b", "12:00", False),
            (1, "ann c", None, True),
            (2, "bob", "12:00", False),
        }


COPY = dg.AssetKey(["cdc", "customer_copy"])


def test_a_change_feed_of_an_upstream_table_is_applied_between_pinned_versions(feed):
    """``customer_copy`` reads ``customers``' Change Data Feed (``window: changes``): its first run the table at
    its version as inserts, every later run what the commits after the last consumed one changed, deletes
    included; a run with nothing new commits nothing."""
    feed.land("2021-06-01", DAY1)
    feed.run(CURRENT, "2021-06-01")
    upstream = DeltaTable.forPath(feed.spark, feed.location(CURRENT)).detail().collect()[0]["properties"]
    assert upstream["delta.enableChangeDataFeed"] == "true"  # declared change_feed: set by the table's first write

    def copy() -> dict[int, tuple[str, str]]:
        rows = feed.spark.read.format("delta").load(feed.location(COPY)).collect()
        return {r["id"]: (r["name"], r["changed_at"].strftime("%H:%M")) for r in rows}

    feed.run(COPY, "2021-06-01")
    assert copy() == feed.current() == {1: ("ann b", "11:00"), 2: ("bob", "10:00")}

    feed.land("2021-06-02", DAY2)
    feed.run(CURRENT, "2021-06-02")
    feed.land("2021-06-03", DAY3)
    feed.run(CURRENT, "2021-06-03")  # two commits of customers: updates, an insert, 1 deleted
    feed.run(COPY, "2021-06-03")
    assert copy() == feed.current() == {2: ("bob c", "12:00"), 3: ("cat new", "14:00"), 4: ("dan", "08:00")}

    version = feed.version(COPY)
    feed.run(COPY, "2021-06-03")  # nothing committed upstream since: no commit
    assert feed.version(COPY) == version
    metadata = DeltaTable.forPath(feed.spark, feed.location(COPY)).history(1).collect()[0]["userMetadata"]
    assert json.loads(json.loads(metadata)["change_feed"]) == {"cdc.customers": feed.version(CURRENT)}


def test_window_changes_is_refused_unless_a_changes_output_reads_a_table_keeping_its_feed(tmp_path):
    source = (DOMAINS / "cdc" / "customers.py").read_text()
    domain = tmp_path / "cdc"
    domain.mkdir()
    (domain / "definitions.py").write_text((DOMAINS / "cdc" / "definitions.py").read_text())
    (domain / "customers.py").write_text(source.replace("change_feed=True", "change_feed=False"))
    with pytest.raises(SpecValidationError, match=r"customers.py:\d+: .*window: cdc.customers keeps no change feed"):
        mesh_definitions(tmp_path)


@pytest.mark.parametrize("kind", [Partitions(), Merge(unique_key=("id",))], ids=["replace", "merge"])
def test_a_change_feed_turned_on_later_is_set_on_the_existing_table(spark, tmp_path, kind):
    location, s3 = str(tmp_path / "t"), S3Settings()
    rows = spark.createDataFrame([(1, "a", date(2021, 6, 1))], "id long, v string, p_date date")
    part = PartitionRange.from_keys(Grain.DAILY, "2021-06-01", "2021-06-01")
    target = Target(location, "t.t", s3, partition_column="p_date", partitions=part, commit_info={"run": "1"})
    strategy_for(kind).commit(spark, rows, target)
    assert "delta.enableChangeDataFeed" not in DeltaTable.forPath(spark, location).detail().first()["properties"]

    on = replace(target, commit_info={"run": "2"}, properties={"delta.enableChangeDataFeed": "true"})
    strategy_for(kind).commit(spark, rows.withColumn("v", F.lit("b")), on)
    properties = DeltaTable.forPath(spark, location).detail().first()["properties"]
    assert properties["delta.enableChangeDataFeed"] == "true"
    changed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(location)
    written = "update_postimage" if kind.keyed else "insert"  # the commit after the property: in the feed
    assert written in {r["_change_type"] for r in changed.collect()}


def aged(location: str, days: int) -> None:
    """Make every commit and file of the Delta table at ``location`` look ``days`` old, as clean-up judges age:
    the log's commit, add and remove times and every file's modification time."""
    then = datetime.now(UTC) - timedelta(days=days)
    ms = int(then.timestamp() * 1000)
    stamps = {"commitInfo": "timestamp", "add": "modificationTime", "remove": "deletionTimestamp"}
    for path in sorted(Path(location).rglob("*")):
        if path.suffix == ".json" and path.parent.name == "_delta_log":
            actions = [json.loads(line) for line in path.read_text().splitlines() if line]
            for action in actions:
                for kind, field in stamps.items():
                    if kind in action and field in action[kind]:
                        action[kind][field] = ms
            path.write_text("".join(json.dumps(a) + "\n" for a in actions))
            path.with_name(f".{path.name}.crc").unlink(missing_ok=True)  # the local file system's checksum
        if path.is_file():
            os.utime(path, (then.timestamp(), then.timestamp()))


def test_clean_up_keeps_every_version_of_a_change_feed_its_changes_reader_has_not_consumed(feed):
    """``customer_copy`` consumed ``customers``' feed up to a version; two commits of customers followed, then ten
    days passed before the weekly clean-up: a 7-day VACUUM would delete the feed's files of the commits not
    consumed yet. Clean-up keeps them, so the copy's next run applies them."""
    feed.land("2021-06-01", DAY1)
    feed.run(CURRENT, "2021-06-01")
    feed.run(COPY, "2021-06-01")
    feed.land("2021-06-02", DAY2)
    feed.run(CURRENT, "2021-06-02")
    feed.land("2021-06-03", DAY3)
    feed.run(CURRENT, "2021-06-03")
    aged(feed.location(CURRENT), days=10)

    job = feed.defs.get_job_def("cdc__maintain")
    config = {"ops": {"cdc__maintain_tables": {"config": {"tables": ["customers"], "compact": False}}}}
    done = job.execute_in_process(run_config=config, instance=feed.instance, resources={"mesh": feed.mesh})

    assert feed.run(COPY, "2021-06-03", raise_on_error=False).success
    rows = feed.spark.read.format("delta").load(feed.location(COPY)).collect()
    assert {r["id"]: r["name"] for r in rows} == {2: "bob c", 3: "cat new", 4: "dan"}
    [cleaned] = done.output_for_node("cdc__maintain_tables")
    hours = cleaned.cleaned.hours
    assert cleaned.cleaned.skipped is None and hours > 240  # back to the unconsumed commits, a week more
    properties = DeltaTable.forPath(feed.spark, feed.location(CURRENT)).detail().collect()[0]["properties"]
    assert properties["delta.deletedFileRetentionDuration"] == f"interval {hours} hours"  # Delta reads that far
    assert "kept for cdc.customer_copy, which consumed its change feed up to version" in cleaned.describe()


@pytest.mark.parametrize("key", [CURRENT, HISTORY])
def test_two_runs_of_a_changes_table_queue_on_its_pool(feed, key):
    """A changes table's step holds the table's pool (one slot): two runs never apply a feed at once, the
    queueing tests/integration/test_concurrent_writers.py::test_runs_of_one_table_queue_on_its_pool shows."""
    assert feed.defs.resolve_asset_graph().get(key).pools == {table_pool(*key.path)}
