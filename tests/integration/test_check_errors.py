"""A check that errors at run time is that check's failed result, never the whole run's crash.

A warn check that errors leaves its partitions published; a blocking one refuses them and the step's failure
names the check, the partition and the error. Real Spark (ANSI mode, as Mesh runs it) and real Delta.
"""

from __future__ import annotations

import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "check_errors" / "domains"
SCHEMA = "id bigint, kind string, code string, p_date date"
GOOD = [(1, "1", "10"), (2, "2", "20"), (3, "1", "30")]
CHECKED = dg.AssetKey(["ce", "checked_events"])
LANDED = dg.AssetKey(["ce", "landed_events"])
MISSING_COLUMN = "column idd does not exist in the staged rows (columns: id, kind, code, p_date)"


class World:
    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(FIXTURE)
        self.assets = executable_assets(self.defs)
        self.cursors: dict[str, str | None] = {}

    def land(self, table: str, day: str, rows: list[tuple]) -> None:
        df = self.spark.createDataFrame([(*r, date.fromisoformat(day)) for r in rows], SCHEMA)
        (
            df.write.format("delta")
            .mode("overwrite")
            .partitionBy("p_date")
            .option("replaceWhere", replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day)))
            .save(self.mesh.registry.location("ce", table))
        )
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)  # and its check run

    def run(self, day: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            self.assets,
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[CHECKED],
            partition_key=day,
            raise_on_error=False,
        )

    def rows(self, day: str) -> list[tuple]:
        df = self.spark.read.format("delta").load(self.mesh.registry.location("ce", "checked_events"))
        return sorted(tuple(r) for r in df.where(f"p_date = DATE'{day}'").drop("p_date").collect())

    def version(self) -> int:
        location = self.mesh.registry.location("ce", "checked_events")
        return DeltaTable.forPath(self.spark, location).history(1).collect()[0]["version"]

    def latest(self, asset: dg.AssetKey, check: str, partition: str) -> dg.AssetCheckEvaluation:
        records = self.instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(asset, check), limit=100
        )
        return next(
            r.event.dagster_event.event_specific_data
            for r in records
            if r.event and r.event.dagster_event and r.partition == partition
        )


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory) -> World:
    return World(spark, tmp_path_factory.mktemp("check-errors"))


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


def error_of(evaluation: dg.AssetCheckEvaluation) -> str:
    assert evaluation.passed is False
    return evaluation.metadata["error"].value


def test_a_warn_check_on_a_missing_column_errors_alone_and_the_partition_publishes(world):
    day = "2024-02-01"
    world.land("raw_events", day, GOOD)
    result = world.run(day)

    assert result.success
    assert world.rows(day) == sorted(GOOD)
    error = error_of(world.latest(CHECKED, "not_null_idd", day))
    assert error == f"check not_null_idd: {MISSING_COLUMN}"
    for check in ("not_null_id", "accepted_values_kind", "code_is_positive"):
        assert world.latest(CHECKED, check, day).passed is True


def test_a_warn_check_that_errors_on_one_value_does_not_block(world):
    day = "2024-02-02"
    world.land("raw_events", day, [*GOOD, (4, "x", "40")])
    result = world.run(day)

    assert result.success
    assert world.rows(day) == sorted([*GOOD, (4, "x", "40")])
    error = error_of(world.latest(CHECKED, "accepted_values_kind", day))
    assert error.startswith("check accepted_values_kind: [CAST_INVALID_INPUT] The value 'x'")
    assert "\n" not in error and "__mesh_partition" not in error
    assert world.latest(CHECKED, "not_null_id", day).passed is True


def test_the_other_checks_still_judge_when_one_errors(world):
    day = "2024-02-03"
    world.land("raw_events", day, GOOD)
    assert world.run(day).success
    version = world.version()

    world.land("raw_events", day, [*GOOD, (None, "x", "50")])
    result = world.run(day)

    assert not result.success
    assert f"check not_null_id on partition {day} failed (1 failing rows)" in failure_message(result)
    assert world.rows(day) == sorted(GOOD)
    assert world.version() == version
    not_null = world.latest(CHECKED, "not_null_id", day)
    assert not_null.passed is False and not_null.metadata["failing_rows"].value == 1
    assert "CAST_INVALID_INPUT" in error_of(world.latest(CHECKED, "accepted_values_kind", day))


def test_a_blocking_check_that_errors_refuses_its_partition(world):
    day = "2024-02-04"
    world.land("raw_events", day, GOOD)
    assert world.run(day).success
    version = world.version()

    world.land("raw_events", day, [*GOOD, (5, "2", "oops")])
    result = world.run(day)

    assert not result.success
    message = failure_message(result)
    assert f"check code_is_positive on partition {day} errored: [CAST_INVALID_INPUT] The value 'oops'" in message
    assert world.rows(day) == sorted(GOOD)
    assert world.version() == version
    assert not result.get_asset_materialization_events()
    evaluation = world.latest(CHECKED, "code_is_positive", day)
    assert evaluation.blocking is True
    assert error_of(evaluation).startswith("check code_is_positive: [CAST_INVALID_INPUT]")


def test_checks_on_an_external_table_record_their_errors(world):
    day = "2024-02-05"
    world.land("landed_events", day, [*GOOD, (5, "2", "oops")])  # the observer requests its check run

    assert error_of(world.latest(LANDED, "not_null_idd", day)) == f"check not_null_idd: {MISSING_COLUMN}"
    assert error_of(world.latest(LANDED, "code_is_positive", day)).startswith(
        "check code_is_positive: [CAST_INVALID_INPUT] The value 'oops'"
    )
