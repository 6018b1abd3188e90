"""Schema changes on real Spark and Delta: additive ones publish, the others are refused until a rebuild.

Each test gets its own warehouse: the fixture's tables follow the schema of their landed source
(``tests/fixtures/schema/domains``), so changing the source changes what the products stage.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.backfill import plan_rebuild
from mesh_assets.storage.schema import REBUILD_TAG

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema" / "domains"
START = datetime.now(UTC).date() - timedelta(days=3)
DAYS = [(START + timedelta(days=i)).isoformat() for i in range(3)]
SCHEMA = "id bigint, kind string, amount bigint, p_date date"
ROWS = [(1, "a", 10), (2, "b", 20)]
EVENTS = ["sc", "events"]


class Schemas:
    def __init__(self, spark, base: Path):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(base / f"wh-{uuid.uuid4().hex[:8]}"))
        self.instance = dg.DagsterInstance.ephemeral()
        self.defs = mesh_definitions(FIXTURE)
        self.assets = executable_assets(self.defs)

    def land(self, days: list[str], rows: list[tuple], schema: str = SCHEMA, *, replace_schema: bool = False) -> None:
        """Land ``rows`` on each of ``days`` into sc.raw_events, as its outside writer would, and report them
        observed. ``replace_schema`` rewrites the whole source with the new schema (a dropped or retyped
        column); otherwise new columns are merged in."""
        df = self.spark.createDataFrame([(*r, date.fromisoformat(d)) for d in days for r in rows], schema)
        writer = df.write.format("delta").mode("overwrite").partitionBy("p_date")
        if replace_schema:
            writer = writer.option("overwriteSchema", "true")
        else:
            writer = writer.option("mergeSchema", "true").option(
                "replaceWhere", " OR ".join(f"p_date = DATE'{d}'" for d in days)
            )
        writer.save(self.mesh.registry.location("sc", "raw_events"))
        for day in days:
            self.instance.report_runless_asset_event(
                dg.AssetMaterialization(asset_key=dg.AssetKey(["sc", "raw_events"]), partition=day)
            )

    def run(
        self,
        key: list[str],
        partition: str | None = None,
        *,
        start: str | None = None,
        end: str | None = None,
        tags: dict[str, str] | None = None,
        also: list[str] | None = None,
    ):
        tags = dict(tags or {})
        if start:
            tags.update({"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end})
        return dg.materialize(
            self.assets,
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(k) for k in (key, also) if k],
            partition_key=partition,
            tags=tags,
            raise_on_error=False,
        )

    def table(self, name: str):
        return self.spark.read.format("delta").load(self.mesh.registry.location("sc", name))

    def rows(self, name: str, day: str) -> list[tuple]:
        return sorted(tuple(r) for r in self.table(name).where(f"p_date = DATE'{day}'").drop("p_date").collect())

    def version(self, name: str) -> int:
        return DeltaTable.forPath(self.spark, self.mesh.registry.location("sc", name)).history(1).first()["version"]


@pytest.fixture
def sc(spark, tmp_path) -> Schemas:
    return Schemas(spark, tmp_path)


def failure_message(result) -> str:
    """The step's error with its causes and their stacks, as the UI shows them."""
    return next(
        e for e in result.all_events if e.event_type_value == "STEP_FAILURE"
    ).event_specific_data.error.to_string()


def test_an_added_nullable_column_is_published_unless_the_policy_is_strict(sc):
    sc.land(DAYS[:1], ROWS)
    assert sc.run(EVENTS, DAYS[0], also=["sc", "events_strict"]).success
    before, strict = sc.version("events"), sc.version("events_strict")

    sc.land(DAYS[1:2], [(*r, "new") for r in ROWS], SCHEMA.replace("p_date", "note string, p_date"))
    assert sc.run(EVENTS, DAYS[1]).success

    assert sc.table("events").columns == ["id", "kind", "amount", "p_date", "note"]
    assert sc.rows("events", DAYS[0]) == [(1, "a", 10, None), (2, "b", 20, None)]
    assert sc.rows("events", DAYS[1]) == [(1, "a", 10, "new"), (2, "b", 20, "new")]
    assert sc.version("events") == before + 1

    refused = sc.run(["sc", "events_strict"], DAYS[1])
    assert not refused.success
    assert "sc.events_strict: schema change refused: added column note (string) (schema: strict)" in (
        failure_message(refused)
    )
    assert sc.version("events_strict") == strict
    assert "note" not in sc.table("events_strict").columns


@pytest.mark.parametrize(
    ("schema", "rows", "change"),
    [
        ("id bigint, kind string, p_date date", [r[:2] for r in ROWS], "dropped column amount (bigint)"),
        (
            SCHEMA.replace("amount bigint", "amount string"),
            [(i, k, str(a)) for i, k, a in ROWS],
            "retyped column amount (bigint -> string)",
        ),
    ],
    ids=["dropped", "retyped"],
)
def test_a_dropped_or_retyped_column_is_refused_before_the_write(sc, schema, rows, change):
    sc.land(DAYS[:1], ROWS)
    assert sc.run(EVENTS, DAYS[0]).success
    before = sc.version("events")

    sc.land(DAYS[:2], rows, schema, replace_schema=True)
    result = sc.run(EVENTS, DAYS[1])

    assert not result.success
    message = failure_message(result)
    assert f"sc.events: schema change refused: {change}" in message
    assert "read by sc_reader.totals" in message
    assert "mesh rebuild sc/events" in message
    assert sc.version("events") == before
    assert sc.table("events").columns == ["id", "kind", "amount", "p_date"]
    assert sc.rows("events", DAYS[1]) == []


def rebuild(sc: Schemas, key: list[str]):
    """What ``mesh rebuild`` launches, run in-process: the plan's runs, each with the plan's tags."""
    plan = plan_rebuild(sc.defs.resolve_asset_graph(), "/".join(key))
    results = []
    for asset, rng in plan.runs():
        results.append(
            sc.run(asset.path, start=rng.start if rng else None, end=rng.end if rng else None, tags=plan.tags)
        )
    return results


def test_a_rebuild_rewrites_every_partition_with_the_new_schema(sc):
    sc.land(DAYS, ROWS)
    assert sc.run(EVENTS, start=DAYS[0], end=DAYS[-1]).success
    before = sc.version("events")
    sc.land(DAYS, [r[:2] for r in ROWS], "id bigint, kind string, p_date date", replace_schema=True)
    assert not sc.run(EVENTS, DAYS[-1]).success  # refused: amount is dropped

    partial = sc.run(EVENTS, start=DAYS[1], end=DAYS[-1], tags={REBUILD_TAG: "true"})
    assert not partial.success
    assert f"sc.events: a rebuild must cover every partition of the table: it holds {DAYS[0]}..{DAYS[-1]}" in (
        failure_message(partial)
    )
    assert sc.version("events") == before

    [result] = rebuild(sc, EVENTS)

    assert result.success
    assert sc.table("events").columns == ["id", "kind", "p_date"]
    for day in DAYS:
        assert sc.rows("events", day) == [(1, "a"), (2, "b")]
    assert sc.version("events") == before + 1
    published = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert published == set(DAYS)


def test_a_rebuild_reports_refused_partitions_and_publishes_the_others(sc):
    sc.land(DAYS, ROWS)
    assert sc.run(EVENTS, start=DAYS[0], end=DAYS[-1]).success
    sc.land(DAYS, [r[:2] for r in ROWS], "id bigint, kind string, p_date date", replace_schema=True)
    sc.land(DAYS[1:2], [(None, "a")], "id bigint, kind string, p_date date")

    [result] = rebuild(sc, EVENTS)

    assert not result.success
    assert f"check not_null_id on partition {DAYS[1]} failed" in failure_message(result)
    assert sc.table("events").columns == ["id", "kind", "p_date"]
    assert sc.rows("events", DAYS[0]) == sc.rows("events", DAYS[2]) == [(1, "a"), (2, "b")]
    assert sc.rows("events", DAYS[1]) == []
    published = {e.materialization.partition for e in result.get_asset_materialization_events()}
    assert published == {DAYS[0], DAYS[2]}
    check = dg.AssetCheckKey(dg.AssetKey(EVENTS), "not_null_id")
    latest = sc.instance.event_log_storage.get_asset_check_partition_info([check], partition_keys=[DAYS[1]])
    assert [info.latest_execution_status.value for info in latest] == ["FAILED"]


def test_an_unpartitioned_table_refuses_a_dropped_column_and_a_rebuild_overwrites_it(sc):
    sc.land(DAYS[:1], ROWS)
    assert sc.run(["sc", "snapshot"]).success
    before = sc.version("snapshot")
    sc.land(DAYS[:1], [r[:2] for r in ROWS], "id bigint, kind string, p_date date", replace_schema=True)

    refused = sc.run(["sc", "snapshot"])
    assert not refused.success
    assert "sc.snapshot: schema change refused: dropped column amount (bigint)" in failure_message(refused)
    assert sc.version("snapshot") == before

    [result] = rebuild(sc, ["sc", "snapshot"])
    assert result.success
    assert sc.table("snapshot").columns == ["id", "kind", "p_date"]
    assert sorted(tuple(r) for r in sc.table("snapshot").drop("p_date").collect()) == [(1, "a"), (2, "b")]
