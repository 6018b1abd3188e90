"""dbt models of Mesh's keyed kinds, through the same gate as every dbt model: an incremental ``merge`` model
(``unique_key``) is computed on Mesh's session, its dbt tests run on the staged rows, Mesh's ``unique_key`` check
is implied, and it is published with one ``MERGE`` (no commit when nothing changed); a dbt snapshot is a
``history`` table, its SELECT computed and applied the same way."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from mesh_assets import executable_assets
from mesh_assets.dbt import build_dbt_assets, dbt_resource, dbt_tables, prepare
from mesh_assets.graph.defaults import domains_defaults
from mesh_assets.lineage.graph import read_events
from mesh_assets.model.kinds import Merge
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORLD_DAYS = 3  # the world fixture lands 2021-06-01 .. 2021-06-03
WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events
ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "dbt_kinds"
ORDERS = dg.AssetKey(["food_delivery", "orders"])
LATEST = dg.AssetKey(["growth", "restaurant_latest"])
DAYS = dg.AssetKey(["growth", "restaurant_days"])
BY_DAY = dg.AssetKey(["growth", "restaurant_by_day"])


@pytest.fixture(scope="module")
def kinds_project(world, tmp_path_factory) -> Iterator[dg.AssetsDefinition]:
    """The example dbt project with the fixture's growth models added, prepared; growth's dbt assets."""
    project = tmp_path_factory.mktemp("dbt") / "dbt_project"
    shutil.copytree(ROOT / "dbt_project", project, ignore=shutil.ignore_patterns("target", "logs"))
    shutil.copytree(FIXTURE, project, dirs_exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MESH_DBT_PROJECT_DIR", str(project))
        prepare(world.mesh.registry.warehouse)
        world.materialize([ORDERS.path], start="2021-06-01", end="2021-06-03")
        [growth] = build_dbt_assets("growth", domains_defaults(ROOT / "domains"))
        yield growth


def run(
    world, models: dg.AssetsDefinition, key: dg.AssetKey, day: str, *, raise_on_error: bool = True, tags=None
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*executable_assets(world.defs), models],
        instance=world.instance,
        resources={"mesh": world.mesh, "dbt": dbt_resource()},
        selection=[key],
        partition_key=None if tags else day,
        tags=tags,
        raise_on_error=raise_on_error,
    )


def version(world, key: dg.AssetKey) -> int:
    return DeltaTable.forPath(world.mesh.spark, world.mesh.registry.location(*key.path)).history(1).first()["version"]


def latest_rows(world) -> dict[int, tuple]:
    rows = world.table(*LATEST.path).collect()
    assert len(rows) == len({r["restaurant_id"] for r in rows}), "one row per restaurant"
    return {r["restaurant_id"]: (r["city"], r["orders"], r["items"], r["last_day"]) for r in rows}


def expected_latest(world, last: date) -> dict[int, tuple]:
    """Each restaurant's row of its latest day with orders up to ``last``, from the orders table in Python."""
    out: dict[int, tuple] = {}
    orders = world.table(*ORDERS.path).where(F.col("p_date") <= F.lit(last)).orderBy("p_date").collect()
    per_day: dict[tuple[int, date], list] = {}
    for row in orders:
        per_day.setdefault((row["restaurant_id"], row["p_date"]), []).append(row)
    for (restaurant, day), rows in sorted(per_day.items(), key=lambda item: item[0][1]):
        out[restaurant] = (rows[0]["city"], len(rows), sum(r["quantity"] for r in rows), day)
    return out


def add_orders(world, day: date, changes: list[dict]) -> None:
    """Append one order of ``day`` per change (a copy of one of the day's orders with the changed columns)."""
    location = world.mesh.registry.location(*ORDERS.path)
    one = world.table(*ORDERS.path).where(F.col("p_date") == F.lit(day)).limit(1)
    rows = None
    for change in changes:
        row = one
        for column, value in change.items():
            row = row.withColumn(column, F.lit(value).cast(one.schema[column].dataType))
        rows = row if rows is None else rows.unionByName(row)
    assert rows is not None
    rows.write.format("delta").mode("append").save(location)


def remove_added_orders(world) -> None:
    DeltaTable.forPath(world.mesh.spark, world.mesh.registry.location(*ORDERS.path)).delete("id < 0")


def failure(result: dg.ExecuteInProcessResult) -> str:
    [event] = result.get_step_failure_events()
    return event.step_failure_data.user_failure_data.description or str(event.step_failure_data.error)


def test_a_merge_model_is_a_merge_table_of_the_catalog(kinds_project):
    [table] = [t for t in dbt_tables() if t.key == LATEST]
    assert table.table_kind == Merge(unique_key=("restaurant_id",))
    metadata = kinds_project.specs_by_key[LATEST].metadata
    assert (metadata["kind"], metadata["replay"]) == ("merge on restaurant_id", "forward"), "mesh backfill plans by it"


def test_a_merge_model_upserts_by_its_unique_key(world, kinds_project):
    # every restaurant of the example has orders every day: one seen on 06-01 only, one first seen on 06-02
    add_orders(world, date(2021, 6, 1), [{"id": -10, "restaurant_id": -8}])
    add_orders(world, date(2021, 6, 2), [{"id": -11, "restaurant_id": -7}])
    try:
        first = run(world, kinds_project, LATEST, "2021-06-01")
        assert latest_rows(world) == expected_latest(world, date(2021, 6, 1))
        [mat] = first.get_asset_materialization_events()
        assert mat.materialization.metadata["rows_inserted"].value == len(expected_latest(world, date(2021, 6, 1)))
        created = version(world, LATEST)

        day_1 = set(latest_rows(world))
        second = run(world, kinds_project, LATEST, "2021-06-02")
        expected = expected_latest(world, date(2021, 6, 2))
        assert latest_rows(world) == expected
        on_day_2 = {k for k, v in expected.items() if v[3] == date(2021, 6, 2)}
        assert (on_day_2 - day_1, day_1 - on_day_2) == ({-7}, {-8}), "one key inserted, one kept as it was"
        assert version(world, LATEST) == created + 1, "one commit"
        location = world.mesh.registry.location(*LATEST.path)
        assert DeltaTable.forPath(world.mesh.spark, location).history(1).first()["operation"] == "MERGE"
        metadata = second.get_asset_materialization_events()[0].materialization.metadata
        assert (metadata["rows_updated"].value, metadata["rows_inserted"].value) == (len(on_day_2) - 1, 1)
        [complete] = [  # lineage as for every dbt model: the run's COMPLETE names the version its MERGE made
            e
            for e in read_events(get_settings().lineage_dir)
            if e["eventType"] == "COMPLETE" and e["run"]["facets"]["parent"]["run"]["runId"] == second.run_id
        ]
        assert complete["job"]["name"] == "growth.restaurant_latest"
        assert complete["outputs"][0]["facets"]["version"]["datasetVersion"] == str(created + 1)
        assert complete["outputs"][0]["facets"]["mesh_tableKind"]["description"] == "merge on restaurant_id"
        changed = complete["outputs"][0]["outputFacets"]["mesh_rowsChanged"]
        assert (changed["updated"], changed["inserted"], changed["committed"]) == (len(on_day_2) - 1, 1, True)

        rerun = run(world, kinds_project, LATEST, "2021-06-02")
        assert version(world, LATEST) == created + 1, "the same input again: no new commit"
        assert latest_rows(world) == expected
        assert rerun.get_asset_materialization_events()[0].materialization.metadata["unchanged"].value is True
    finally:
        remove_added_orders(world)

    past = run(world, kinds_project, LATEST, "2021-06-01", raise_on_error=False)
    assert not past.success and version(world, LATEST) == created + 1
    assert "growth.restaurant_latest (merge on restaurant_id) applies its partitions in order" in failure(past)
    assert "mesh backfill growth/restaurant_latest --start 2021-06-01 --end 2021-06-02" in failure(past)


def test_a_failing_blocking_dbt_test_keeps_the_merge_tables_version(world, kinds_project):
    if "2021-06-02" not in world.instance.get_materialized_partitions(LATEST):
        run(world, kinds_project, LATEST, "2021-06-01")
        run(world, kinds_project, LATEST, "2021-06-02")
    before, kept = latest_rows(world), version(world, LATEST)
    add_orders(world, date(2021, 6, 3), [{"id": -1, "restaurant_id": -5, "city": None}])
    try:
        refused = run(world, kinds_project, LATEST, "2021-06-03", raise_on_error=False)
    finally:
        remove_added_orders(world)
    assert not refused.success and not refused.get_asset_materialization_events()
    assert "dbt test not_null_restaurant_latest_city on partition 2021-06-03 failed" in failure(refused)
    assert version(world, LATEST) == kept and latest_rows(world) == before


def test_a_key_with_two_rows_is_refused_by_the_unique_key_check(world, kinds_project):
    if "2021-06-02" not in world.instance.get_materialized_partitions(LATEST):
        run(world, kinds_project, LATEST, "2021-06-01")
        run(world, kinds_project, LATEST, "2021-06-02")
    before, kept = latest_rows(world), version(world, LATEST)
    twice = [{"id": -2, "restaurant_id": -6, "city": "madrid"}, {"id": -3, "restaurant_id": -6, "city": "milan"}]
    add_orders(world, date(2021, 6, 3), twice)
    try:
        refused = run(world, kinds_project, LATEST, "2021-06-03", raise_on_error=False)
    finally:
        remove_added_orders(world)
    assert not refused.success and not refused.get_asset_materialization_events()
    assert (
        "dbt model growth.restaurant_latest: check unique_key failed: 1 key(s) of unique_key (restaurant_id) have "
        "more than one row"
    ) in failure(refused)
    assert version(world, LATEST) == kept and latest_rows(world) == before


def test_mesh_rebuild_of_a_merge_model_recreates_it_from_its_window(world, kinds_project):
    """The run tag of ``mesh rebuild`` is a full refresh: a past range is no longer refused, and the table is
    the range's rows alone, in one overwrite."""
    if "2021-06-02" not in world.instance.get_materialized_partitions(LATEST):
        run(world, kinds_project, LATEST, "2021-06-01")
        run(world, kinds_project, LATEST, "2021-06-02")
    kept = version(world, LATEST)
    rebuild = {
        "dagster/asset_partition_range_start": "2021-06-01",
        "dagster/asset_partition_range_end": "2021-06-02",
        "mesh/rebuild": "true",
    }
    run(world, kinds_project, LATEST, "", tags=rebuild)
    orders = world.table(*ORDERS.path).where(F.col("p_date") <= F.lit(date(2021, 6, 2))).collect()
    expected: dict[int, tuple] = {}
    for row in orders:
        city, n, items, last = expected.get(row["restaurant_id"], (row["city"], 0, 0, row["p_date"]))
        expected[row["restaurant_id"]] = (city, n + 1, items + row["quantity"], max(last, row["p_date"]))
    assert latest_rows(world) == expected
    history = DeltaTable.forPath(world.mesh.spark, world.mesh.registry.location(*LATEST.path)).history(1).first()
    assert history["version"] == kept + 1 and history["operationParameters"]["mode"] == "Overwrite"


def test_a_partitioned_merge_models_days_apply_in_order_up_to_a_refused_one(world, kinds_project):
    """With a partition_by, a key has a row per day of a range (the latest day wins); a day refused by a blocking
    test holds back the days after it, which would otherwise be applied without it."""
    add_orders(world, date(2021, 6, 2), [{"id": -30, "restaurant_id": -5, "city": None}])
    tags = {"dagster/asset_partition_range_start": "2021-06-01", "dagster/asset_partition_range_end": "2021-06-03"}
    try:
        refused = run(world, kinds_project, BY_DAY, "", tags=tags, raise_on_error=False)
    finally:
        remove_added_orders(world)
    assert not refused.success
    assert {e.partition for e in refused.get_asset_materialization_events()} == {"2021-06-01"}
    assert "dbt test not_null_restaurant_by_day_city on partition 2021-06-02 failed" in failure(refused)
    assert (
        "growth.restaurant_by_day 2021-06-03: not published, growth.restaurant_by_day (merge on restaurant_id) "
        "applies its days in order and an earlier one was refused"
    ) in failure(refused)
    first = world.table(*BY_DAY.path).collect()
    assert {r["restaurant_id"]: (r["city"], r["orders"], r["p_date"]) for r in first} == {
        r: (city, n, date(2021, 6, 1)) for r, (city, n) in day_rows(world, date(2021, 6, 1)).items()
    }

    run(world, kinds_project, BY_DAY, "", tags={**tags, "dagster/asset_partition_range_start": "2021-06-02"})
    rows = world.table(*BY_DAY.path).collect()
    assert len(rows) == len({r["restaurant_id"] for r in rows}), "one row per key, though it has one per day"
    assert {r["restaurant_id"]: (r["city"], r["orders"], r["p_date"]) for r in rows} == {
        r: (city, n, date(2021, 6, 3)) for r, (city, n) in day_rows(world, date(2021, 6, 3)).items()
    }


def snapshot_rows(world) -> set[tuple]:
    """The versions, their validity as UTC text (the session's zone: collect() would give the process's)."""
    utc = [F.date_format(c, "yyyy-MM-dd HH:mm:ss").alias(c) for c in ("dbt_valid_from", "dbt_valid_to")]
    columns = ["restaurant_id", "city", "orders", "last_day", *utc, "dbt_is_current"]
    return {(*r[:-1], r[-1].isoformat()) for r in world.table(*DAYS.path).select(*columns, "p_date").collect()}


def day_rows(world, day: date) -> dict[int, tuple]:
    """Per restaurant with orders on ``day``: its city and orders, from the orders table in Python."""
    out: dict[int, tuple] = {}
    for row in world.table(*ORDERS.path).where(F.col("p_date") == F.lit(day)).collect():
        city, n = out.get(row["restaurant_id"], (row["city"], 0))
        out[row["restaurant_id"]] = (city, n + 1)
    return out


def test_a_dbt_snapshot_is_a_history_table(world, kinds_project):
    """strategy timestamp (updated_at last_day), hard_deletes invalidate: a moved last_day closes the current
    version and opens one; a restaurant without orders on the run's day is closed at its start."""
    first, second = date(2021, 6, 1), date(2021, 6, 2)
    at = {d: f"{d.isoformat()} 00:00:00" for d in (first, second)}
    metadata = kinds_project.specs_by_key[DAYS].metadata
    assert (metadata["kind"], metadata["replay"]) == ("history on restaurant_id by updated_at last_day", "rebuild")
    add_orders(world, first, [{"id": -20, "restaurant_id": -9}])  # a restaurant seen on 06-01 only
    try:
        tested = run(world, kinds_project, DAYS, first.isoformat()).get_asset_check_evaluations()
        assert [(c.check_name, c.passed) for c in tested] == [("not_null_restaurant_days_restaurant_id", True)]
        day_1 = day_rows(world, first)
        assert snapshot_rows(world) == {
            (r, city, n, first, at[first], None, True, "2021-06-01") for r, (city, n) in day_1.items()
        }
        created = version(world, DAYS)

        run(world, kinds_project, DAYS, second.isoformat())
        day_2 = day_rows(world, second)
        assert -9 not in day_2 and set(day_1) - {-9} <= set(day_2)
        assert snapshot_rows(world) == {
            (r, city, n, first, at[first], at[second], False, "2021-06-01") for r, (city, n) in day_1.items()
        } | {(r, city, n, second, at[second], None, True, "2021-06-02") for r, (city, n) in day_2.items()}
        assert version(world, DAYS) == created + 1

        rerun = run(world, kinds_project, DAYS, second.isoformat())
        assert version(world, DAYS) == created + 1, "the same input again adds nothing and commits nothing"
        assert rerun.get_asset_materialization_events()[0].materialization.metadata["unchanged"].value is True
    finally:
        remove_added_orders(world)

    past = run(world, kinds_project, DAYS, first.isoformat(), raise_on_error=False)
    assert not past.success and version(world, DAYS) == created + 1
    assert "growth.restaurant_days (history on restaurant_id by updated_at last_day) keeps versions in order" in (
        failure(past)
    )
