"""Checks judged inside the write (``mesh_assets/checks/guard.py``): rows that pass are read once and published
in one commit; a row that fails stops the write before its commit, and the run then publishes exactly what
the audit would have, in one commit, with the same verdicts and messages."""

from __future__ import annotations

import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.checks.guard import write_guard
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run import publish
from mesh_assets.storage.writer import replace_predicate, stage

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "guard" / "domains"
SCHEMA = "id bigint, kind string, p_date date"
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]
CLEAN = dg.AssetKey(["g", "clean"])


class Guarded:
    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(FIXTURE)
        self.cursors: dict[str, str | None] = {}

    def land(self, day: str, rows: list[tuple]) -> None:
        df = self.spark.createDataFrame([(*r, date.fromisoformat(day)) for r in rows], SCHEMA)
        rng = PartitionRange.from_keys(Grain.DAILY, day, day)
        writer = df.write.format("delta").mode("overwrite").partitionBy("p_date")
        writer.option("replaceWhere", replace_predicate("p_date", rng)).save(self.location("raw"))
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def location(self, table: str) -> str:
        return self.mesh.registry.location("g", table)

    def run(self, key: dg.AssetKey, start: str, end: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[key],
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
            raise_on_error=False,
        )

    def rows(self, table: str) -> dict[str, list[tuple]]:
        out: dict[str, list[tuple]] = {}
        for r in self.spark.read.format("delta").load(self.location(table)).collect():
            out.setdefault(r["p_date"].isoformat(), []).append((r["id"], r.asDict().get("kind")))
        return {day: sorted(rows) for day, rows in out.items()}

    def version(self, table: str) -> int:
        return DeltaTable.forPath(self.spark, self.location(table)).history(1).collect()[0]["version"]


@pytest.fixture(scope="module")
def guarded(spark, tmp_path_factory) -> Guarded:
    return Guarded(spark, tmp_path_factory.mktemp("guard"))


@pytest.fixture
def stagings(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each time a run staged its rows for the audit (``keep``: kept in executor storage)."""
    calls: list[bool] = []

    def counted(df, keep: bool = True):
        calls.append(keep)
        return stage(df, keep)

    monkeypatch.setattr(publish, "stage", counted)
    return calls


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    return next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE").event_specific_data.error.message


def test_rows_that_pass_publish_in_one_commit_with_each_partitions_rows_and_verdicts(
    guarded: Guarded, stagings: list[bool]
) -> None:
    landed = {DAYS[0]: [(1, "a"), (2, "b")], DAYS[1]: [(3, "a")], DAYS[2]: [(4, "b"), (5, "b"), (6, "a")]}
    for day, rows in landed.items():
        guarded.land(day, rows)
    assert guarded.run(CLEAN, DAYS[0], DAYS[0]).success  # the table's first write is audited first
    assert stagings == [False]

    result = guarded.run(CLEAN, DAYS[0], DAYS[-1])

    assert result.success
    assert stagings == [False]  # written as computed: no audit before, no copy kept
    assert guarded.rows("clean") == landed
    assert guarded.version("clean") == 1  # one commit
    recorded = {
        e.materialization.partition: e.materialization.metadata["dagster/row_count"].value
        for e in result.get_asset_materialization_events()
    }
    assert recorded == {day: len(rows) for day, rows in landed.items()}
    verdicts = {(e.check_name, e.partition, e.passed) for e in result.get_asset_check_evaluations()}
    names = {"not_null_id", "accepted_values_kind", "valid"}
    assert verdicts == {(name, day, True) for name in names for day in DAYS}


def test_a_failing_row_stops_the_write_and_the_days_that_passed_publish_in_one_commit(
    guarded: Guarded, stagings: list[bool]
) -> None:
    before, version = guarded.rows("clean"), guarded.version("clean")
    guarded.land(DAYS[0], [(1, "a"), (2, "b"), (7, "a")])
    guarded.land(DAYS[1], [(3, "a"), (None, "a")])
    guarded.land(DAYS[2], [(4, "b"), (5, "zzz")])

    result = guarded.run(CLEAN, DAYS[0], DAYS[-1])

    assert not result.success
    assert len(stagings) == 1  # the guard stopped the write; the audit then judged the staged rows
    message = failure_message(result)
    assert f"check not_null_id on partition {DAYS[1]} failed (1 failing rows)" in message
    assert f"check accepted_values_kind on partition {DAYS[2]} failed (1 failing rows)" in message
    assert guarded.version("clean") == version + 1  # the stopped write committed nothing
    assert guarded.rows("clean") == {**before, DAYS[0]: [(1, "a"), (2, "b"), (7, "a")]}
    published = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert published == {DAYS[0]}
    failed = {(e.check_name, e.partition) for e in result.get_asset_check_evaluations() if not e.passed}
    assert failed == {("not_null_id", DAYS[1]), ("accepted_values_kind", DAYS[2])}


def test_rows_outside_the_run_stop_the_write_and_are_refused_by_name(guarded: Guarded) -> None:
    spilled = dg.AssetKey(["g", "spilled"])
    guarded.land(DAYS[0], [(1, "a"), (2, "b")])
    guarded.land(DAYS[1], [(3, "a")])
    assert guarded.run(spilled, DAYS[0], DAYS[0]).success
    before = guarded.version("spilled")

    result = guarded.run(spilled, DAYS[0], DAYS[1])  # also returns the range's rows again on the day after

    assert not result.success
    message = failure_message(result)
    assert f"rows outside the run's partitions {DAYS[0]}..{DAYS[1]} were refused, nothing was written" in message
    assert message.rstrip().endswith(f"nothing was written: {DAYS[2]} (3 rows)")  # the three rows read, on 01-03
    assert guarded.version("spilled") == before
    assert guarded.rows("spilled") == {DAYS[0]: [(1, None), (2, None)]}


def test_checks_that_count_compare_or_warn_are_audited_first(guarded: Guarded) -> None:
    """Only blocking row checks, ``valid`` and a contract the rows meet are judged in the write."""
    graph = MeshGraph(load_all(FIXTURE), [])
    table = graph.node("g", "clean").table
    rows = guarded.spark.createDataFrame([], SCHEMA)
    part = PartitionRange.from_keys(Grain.DAILY, DAYS[0], DAYS[0])
    assert write_guard(table, rows, part, False, table.checks) is not None
    warned = [c.model_copy(update={"severity": "warn"}) if c.check_name == "not_null_id" else c for c in table.checks]
    assert write_guard(table, rows, part, False, warned) is None
    assert write_guard(table, rows.drop("kind"), part, False, table.checks) is None
