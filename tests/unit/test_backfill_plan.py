"""Backfill plans through the asset graph, and the one backfill they launch through the webserver, as the UI
does (no Spark, no daemon)."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg
import pytest
from planning import landed, planning_instance, published

from mesh_assets import mesh_definitions
from mesh_assets.backfill import (
    BackfillError,
    Webserver,
    WebserverError,
    backfill_progress,
    launch_backfill,
    plan_backfill,
)
from mesh_assets.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {
    "food_delivery/orders": ["2021-06-04..2021-06-06"],
    "food_delivery/delivery_times_7_days": ["2021-06-04..2021-06-12"],
    "food_delivery/orders_7_days": ["2021-06-04..2021-06-12"],
    "food_delivery/monthly_city_orders": ["2021-06-01"],
}


@pytest.fixture(scope="module")
def mesh() -> dg.Definitions:
    """The example's domains, without dbt's models (the webserver serves only food_delivery)."""
    return mesh_definitions(ROOT / "domains")


@pytest.fixture(scope="module")
def graph(mesh):
    return mesh.resolve_asset_graph()


def test_plan_is_the_downstream_closure(graph):
    plan = plan_backfill(graph, "food_delivery.orders", "2021-06-04", "2021-06-06")
    assert plan.as_dict() == EXPECTED
    assert plan.assets[0].key == dg.AssetKey(["food_delivery", "orders"])
    only = plan_backfill(graph, "food_delivery/orders", "2021-06-04", "2021-06-06", downstream=False)
    assert only.as_dict() == {"food_delivery/orders": ["2021-06-04..2021-06-06"]}


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2021-02-30", "2021-06-06", "invalid daily partition key"),
        ("2021-06-06", "2021-06-04", "before it starts"),
        ("2020-01-01", "2020-01-02", "does not exist"),
        ("06/04/2021", "2021-06-06", "invalid daily partition key"),
    ],
)
def test_bad_partitions_are_refused(graph, start, end, message):
    with pytest.raises(BackfillError, match=message):
        plan_backfill(graph, "food_delivery.orders", start, end)


def test_partitions_past_an_end_date_are_refused(graph):
    """central's example history stops with June 2021 (``end_date: 2021-07-01``): a backfill into July names
    the table's last partition and plans nothing."""
    refused = r"2021-07-01 does not exist \(partitions run from 2021-06-01 to 2021-06-30\)"
    with pytest.raises(BackfillError, match=refused):
        plan_backfill(graph, "central.order_descriptors", "2021-06-30", "2021-07-01")


def targets(backfill, graph) -> dict[str, list[str]]:
    """A stored backfill's target, as ``BackfillPlan.as_dict`` lists it."""
    target = backfill.asset_backfill_data.target_subset
    return {
        k.to_user_string(): [
            r.start if r.start == r.end else f"{r.start}..{r.end}"
            for r in target.get_partitions_subset(k).get_partition_key_ranges(graph.get(k).partitions_def)
        ]
        for k in target.asset_keys
    }


@pytest.mark.slow
@pytest.mark.e2e
def test_launch_adds_one_asset_backfill_through_the_webserver(graph, served):
    plan = plan_backfill(graph, "food_delivery.orders", "2021-06-04", "2021-06-06")
    backfill_id = launch_backfill(Webserver(served.url), plan)
    backfill = served.instance.get_backfill(backfill_id)
    assert backfill.is_asset_backfill and targets(backfill, graph) == EXPECTED
    assert backfill.title == "food_delivery/orders 2021-06-04..2021-06-06 and downstream"
    assert backfill.tags["mesh/root"] == "food_delivery/orders" and backfill.tags["mesh/launched_by"] == "mesh backfill"
    progress = backfill_progress(Webserver(served.url), backfill_id)
    assert (progress.status, progress.done, progress.total, progress.finished) == ("REQUESTED", 0, 3 + 9 + 9 + 1, False)


@pytest.mark.slow
@pytest.mark.e2e
def test_an_asset_the_webserver_does_not_serve_is_refused_by_name(graph, served):
    key = next(k for k in graph.toposorted_asset_keys if k.path[0] == "courier" and graph.get(k).is_executable)
    first = graph.get(key).partitions_def.get_first_partition_key()
    before = served.backfill_ids()
    with pytest.raises(WebserverError, match=f"does not serve {key.to_user_string()}: its workspace needs"):
        launch_backfill(Webserver(served.url), plan_backfill(graph, key, first, first, downstream=False))
    assert served.backfill_ids() == before


ARGS = ["backfill", "food_delivery.orders", "--start", "2021-06-04", "--end", "2021-06-06", "--downstream"]


def test_cli_dry_run_launches_nothing(mesh, monkeypatch, capsys, tmp_path, no_webserver):
    instance = planning_instance(monkeypatch, tmp_path, mesh)
    assert main.main([*ARGS, "--dry-run"]) == 1  # nothing was ever materialized: nothing can be computed
    assert "food_delivery/orders 2021-06-04..2021-06-06 (3): food_delivery/raw_orders" in capsys.readouterr().out
    landed(instance)
    assert main.main([*ARGS, "--dry-run"]) == 0  # no webserver needed, no launch attempted
    out = capsys.readouterr().out
    assert "orders_7_days" in out and "2021-06-04..2021-06-09" in out
    assert (
        "food_delivery/orders_7_days 2021-06-10..2021-06-12 (3): food_delivery/orders 2021-06-10..2021-06-12 (3) "
        "never materialized" in " ".join(out.split())
    )
    assert "Dry run: nothing launched." in out and no_webserver not in out
    assert main.main(["backfill", "food_delivery.orders", "--start", "2021-06-31", "--end", "2021-07-01"]) == 2
    out = capsys.readouterr().out
    assert "invalid daily partition key" in out and no_webserver not in out
    assert main.main(ARGS) == 1  # a launch needs the webserver
    out = " ".join(capsys.readouterr().out.split())
    assert f"no Dagster webserver answers at {no_webserver}" in out
    assert "start the webserver: make dev" in out and "nothing launched" in out


def test_a_month_to_date_rollup_is_planned_once_its_share_of_days_can_be_read(mesh, monkeypatch, capsys, tmp_path):
    """``monthly_city_orders`` reads June's orders with ``min_complete: 0.2``: 3 days of 30 leave it out, naming the
    days it lacks; 6 days (published or planned) are enough."""
    instance = planning_instance(monkeypatch, tmp_path, mesh)
    published(instance, "raw_orders", 12)
    published(instance, "orders", 3)
    days = ["--downstream", "--dry-run", "--start", "2021-06-01"]

    assert main.main(["backfill", "food_delivery.orders", *days, "--end", "2021-06-03"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "food_delivery/monthly_city_orders 2021-06-01: food_delivery/orders 2021-06-04..2021-06-30 (27)" in out

    assert main.main(["backfill", "food_delivery.orders", *days, "--end", "2021-06-06"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"│ food_delivery/monthly_city_orders +│ 2021-06-01 ", out), out
    assert "monthly_city_orders 2021-06-01:" not in out  # not left out


@pytest.mark.slow
@pytest.mark.e2e
def test_cli_launches_what_can_be_computed_through_the_webserver(
    mesh, graph, monkeypatch, capsys, tmp_path, cli_webserver
):
    landed(planning_instance(monkeypatch, tmp_path, mesh))
    before = cli_webserver.backfill_ids()
    assert main.main(ARGS) == 0
    [launched] = cli_webserver.backfill_ids() - before
    assert f"Launched backfill {launched} through {cli_webserver.url}" in capsys.readouterr().out
    assert targets(cli_webserver.instance.get_backfill(launched), graph) == {
        "food_delivery/orders": ["2021-06-04..2021-06-06"],
        "food_delivery/delivery_times_7_days": ["2021-06-04..2021-06-09"],
        "food_delivery/orders_7_days": ["2021-06-04..2021-06-09"],
        "food_delivery/monthly_city_orders": ["2021-06-01"],  # June to date: min_complete 0.2 accepts 6 days
    }
