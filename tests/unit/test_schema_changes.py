"""Schema evolution without Spark: the comparison, the policy, the spec field, consumers and rebuild plans.

The writes themselves (mergeSchema, refusals, rebuilds on real Delta) are in
``tests/integration/test_schema_evolution.py``.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType
from rich.console import Console

from mesh_assets import Output, mesh_definitions
from mesh_assets.backfill import BackfillError, plan_rebuild
from mesh_assets.cli import commands, main
from mesh_assets.dbt.catalog import dbt_tables
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.errors import SpecError
from mesh_assets.model.grain import Grain
from mesh_assets.storage.schema import (
    REBUILD_TAG,
    SchemaChangeRefused,
    SchemaRule,
    bound_key,
    compare,
    rebuild_requested,
    write_options,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "schema" / "domains"


def schema(**columns: object) -> StructType:
    return StructType([StructField(name, kind, nullable=True) for name, kind in columns.items()])


PUBLISHED = schema(id=LongType(), amount=LongType(), p_date=StringType())


def test_compare_names_added_dropped_and_retyped_columns():
    assert not compare(PUBLISHED, schema(ID=LongType(), amount=LongType(), p_date=StringType())).changed
    assert not compare(PUBLISHED, StructType([StructField("id", LongType(), nullable=False), *PUBLISHED[1:]])).changed

    added = compare(PUBLISHED, schema(id=LongType(), amount=LongType(), p_date=StringType(), note=StringType()))
    assert added.additive and added.describe() == "added column note (string)"

    renamed = compare(PUBLISHED, schema(id=LongType(), total=LongType(), p_date=StringType()))
    assert not renamed.additive
    assert renamed.describe() == "dropped column amount (bigint), added column total (bigint)"

    retyped = compare(PUBLISHED, schema(id=StringType(), amount=LongType(), p_date=StringType()))
    assert retyped.describe() == "retyped column id (bigint -> string)"


def test_policy_merges_additive_changes_and_refuses_the_rest():
    added = compare(PUBLISHED, schema(id=LongType(), amount=LongType(), p_date=StringType(), note=StringType()))
    dropped = compare(PUBLISHED, schema(id=LongType(), p_date=StringType()))
    assert write_options("d.t", compare(PUBLISHED, PUBLISHED), SchemaRule("strict")) == {}
    assert write_options("d.t", added, SchemaRule()) == {"mergeSchema": "true"}
    assert write_options("d.t", dropped, SchemaRule(rebuild=True)) == {"overwriteSchema": "true"}

    with pytest.raises(SchemaChangeRefused) as refused:
        write_options("d.t", dropped, SchemaRule(consumers=("a.x", "b.y")))
    message = str(refused.value)
    assert message.startswith("d.t: schema change refused: dropped column amount (bigint); read by a.x, b.y.")
    assert "`mesh rebuild d/t`" in message

    with pytest.raises(SchemaChangeRefused, match=r"added column note \(string\) \(schema: strict\); no product"):
        write_options("d.t", added, SchemaRule("strict"))


def test_table_bounds_are_utc_keys_whatever_the_process_time_zone(monkeypatch):
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    time.tzset()
    try:
        hour = datetime(2024, 3, 10, 1, tzinfo=UTC)
        collected = TimestampType().fromInternal(int(hour.timestamp() * 1_000_000))  # as PySpark returns it
        assert collected.hour != 1  # local wall-clock time
        assert bound_key(collected, Grain.HOURLY) == "2024-03-10-01:00"
        assert bound_key(date(2024, 3, 10), Grain.DAILY) == "2024-03-10"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_schema_policy_in_python_and_yaml(tmp_path, monkeypatch):
    assert Output(table="t").schema_policy == "additive"
    assert Output(table="t", schema="strict").schema_policy == "strict"
    folder = tmp_path / "domains" / "sales"
    folder.mkdir(parents=True)
    spec = """\
name: orders
owner: sales@example.com
contacts: [{{kind: chat, value: "#sales"}}]
external: [{{table: raw_orders}}]
tables:
  - table: orders
    inputs: [{{table: raw_orders}}]
    sql: SELECT * FROM sales.raw_orders
    schema: {policy}
"""
    (folder / "orders.yaml").write_text(spec.format(policy="strict"))
    monkeypatch.chdir(tmp_path)
    [product] = load_all(Path("domains"))["sales"].products
    assert product.transformations[0].output.schema_policy == "strict"

    (folder / "orders.yaml").write_text(spec.format(policy="sometimes"))
    assert load_all(Path("domains"))["sales"].errors == [
        SpecError("domains/sales/orders.yaml", 9, "tables.0.schema", "Input should be 'additive' or 'strict'")
    ]


def test_consumers_are_products_of_any_domain_and_dbt_models():
    manifest = {
        "nodes": {
            "model.p.stg_events": {
                "unique_id": "model.p.stg_events",
                "resource_type": "model",
                "name": "stg_events",
                "alias": "stg_events",
                "original_file_path": "models/analytics/stg_events.sql",
                "config": {"materialized": "table"},
                "depends_on": {"nodes": ["source.p.sc.events"]},
            }
        },
        "sources": {"source.p.sc.events": {"name": "events", "schema": "sc", "config": {"meta": {}}}},
    }
    catalog = MeshGraph(load_all(FIXTURE), dbt_tables(manifest))
    assert catalog.consumers("sc", "events") == ("analytics.stg_events", "sc_reader.totals")
    assert catalog.consumers("sc", "raw_events") == ("sc.events", "sc.events_strict", "sc.snapshot")
    assert catalog.consumers("sc_reader", "totals") == ()


def test_rebuild_tag_values():
    assert rebuild_requested({REBUILD_TAG: "true"}) and rebuild_requested({REBUILD_TAG: "True"})
    assert not rebuild_requested({}) and not rebuild_requested({REBUILD_TAG: "false"})
    with pytest.raises(ValueError, match="tag mesh/rebuild must be 'true' or 'false', not 'yes'"):
        rebuild_requested({REBUILD_TAG: "yes"})


def test_rebuild_plans_every_partition_of_the_table_and_of_its_readers():
    graph = mesh_definitions(FIXTURE).resolve_asset_graph()
    events = dg.AssetKey(["sc", "events"])
    days = graph.get(events).partitions_def.get_partition_keys()
    assert len(days) == 3  # the fixture starts three days before today

    plan = plan_rebuild(graph, "sc/events")
    assert plan.as_dict() == {"sc/events": [f"{days[0]}..{days[-1]}"]}
    assert plan.tags[REBUILD_TAG] == "true"
    assert list(plan.runs()) == [(events, dg.PartitionKeyRange(days[0], days[-1]))]

    readers = plan_rebuild(graph, "sc.events", downstream=True).as_dict()
    assert readers["sc/events"] == [f"{days[0]}..{days[-1]}"]
    assert readers["sc_reader/totals"][0].startswith("2024-01-01..")  # its own first partition, not sc.events'

    assert plan_rebuild(graph, "sc/snapshot").as_dict() == {"sc/snapshot": []}
    with pytest.raises(BackfillError, match="sc/raw_events is an external table"):
        plan_rebuild(graph, "sc/raw_events")


def landed_example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``mesh`` plans from an instance where the example's food_delivery inputs landed 2021-06-01..14."""
    monkeypatch.setattr(main, "console", Console(width=250, no_color=True, highlight=False))
    home = tmp_path / "dagster"
    home.mkdir()
    monkeypatch.setattr(commands, "persistent_instance", lambda: dg.DagsterInstance.local_temp(str(home)))
    instance = dg.DagsterInstance.local_temp(str(home))
    for table in ("raw_orders", "menus", "menu_items", "categories"):  # what the observer reported as landed
        key = dg.AssetKey(["food_delivery", table])
        days = [f"2021-06-{d:02d}" for d in range(1, 15)] if table == "raw_orders" else [None]
        for day in days:
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=day))


def test_mesh_rebuild_dry_run_needs_no_webserver_and_launches_nothing(monkeypatch, capsys, tmp_path, no_webserver):
    landed_example(monkeypatch, tmp_path)
    assert main.main(["rebuild", "food_delivery/orders", "--downstream", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Rebuild food_delivery/orders and downstream" in out
    assert "│ food_delivery/orders_7_days" in out and "2021-06-01..2021-06-14" in out
    assert "food_delivery/orders 2021-06-15.." in out  # left out: nothing landed for it
    assert "Dry run: nothing launched." in out and no_webserver not in out  # no launch was attempted

    assert main.main(["rebuild", "central/raw_order_events"]) == 2
    out = capsys.readouterr().out
    assert "central/raw_order_events is an external table" in out and no_webserver not in out


@pytest.mark.slow
@pytest.mark.e2e
def test_mesh_rebuild_launches_one_tagged_backfill(monkeypatch, capsys, tmp_path, cli_webserver):
    landed_example(monkeypatch, tmp_path)
    before = cli_webserver.backfill_ids()
    assert main.main(["rebuild", "food_delivery/orders"]) == 0
    [launched] = cli_webserver.backfill_ids() - before
    backfill = cli_webserver.instance.get_backfill(launched)
    assert backfill.tags[REBUILD_TAG] == "true"
    assert backfill.title == "Rebuild food_delivery/orders"
    orders = dg.AssetKey(["food_delivery", "orders"])
    target = backfill.asset_backfill_data.target_subset
    assert target.asset_keys == {orders}
    assert sorted(target.get_partitions_subset(orders).get_partition_keys()) == [
        f"2021-06-{d:02d}" for d in range(1, 15)
    ]
