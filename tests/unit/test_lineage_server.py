"""A lineage server as the source: events of the example mesh's runs go to it over HTTP, `mesh lineage` reads
its lineage endpoint, and `mesh backfill --downstream --from-lineage` plans from its graph (no Spark)."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import dagster as dg
import pytest
from lineage_runs import sql_run, validate
from lineage_server import lineage_server
from planning import landed, planning_instance
from rich.console import Console

from mesh_assets import mesh_definitions
from mesh_assets.backfill import plan_backfill
from mesh_assets.cli import main
from mesh_assets.cli.lineage import lineage_readers
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.lineage.emit import emit, make_client
from mesh_assets.lineage.events import RunDescription, build_event
from mesh_assets.lineage.run import run_events
from mesh_assets.settings import MeshSettings, get_settings

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
WH = "/wh"


@pytest.fixture(scope="module")
def server():
    """The server holding what the example mesh's runs report: each product's declared reads and output."""
    served = lineage_server()
    client = make_client(MeshSettings(lineage={"transport": "http", "url": served.url}))
    graph = MeshGraph(load_all(ROOT / "domains"))
    for node in graph.nodes.values():
        run = RunDescription(
            domain=node.domain,
            table=node.table.name,
            dagster_run_id=str(uuid.uuid5(uuid.NAMESPACE_URL, node.table.ref)),
            dagster_job="__ASSET_JOB",
            output_location=f"{WH}/{node.domain}/{node.table.name}",
            declared_inputs=[f"{WH}/{r.table.domain}/{r.table.name}" for r in node.reads],
        )
        assert emit(client, build_event("START", run)) and emit(client, build_event("COMPLETE", run))
    yield served
    served.shutdown()


@pytest.fixture
def reading_the_server(server, monkeypatch):
    monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "http")
    monkeypatch.setenv("MESH_LINEAGE__URL", server.url)
    get_settings.cache_clear()
    yield server
    get_settings.cache_clear()


def test_mesh_lineage_reads_the_servers_lineage_endpoint(reading_the_server, capsys):
    assert main.main(["lineage", "food_delivery.orders", "--downstream", "--format", "json"]) == 0
    graph = json.loads(capsys.readouterr().out)["graph"]
    jobs = {n["id"] for n in graph if n["type"] == "JOB"}
    assert jobs == {
        "job:food_delivery:food_delivery.orders",
        "job:food_delivery:food_delivery.orders_7_days",
        "job:food_delivery:food_delivery.delivery_times_7_days",
        "job:food_delivery:food_delivery.weekly_city_orders",
        "job:food_delivery:food_delivery.monthly_city_orders",
    }
    assert main.main(["lineage", "food_delivery/orders", "--downstream", "--depth", "1", "--format", "dot"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph lineage {") and '"/wh/food_delivery/orders"' in dot and dot.count("->") == 1
    assert main.main(["lineage", "food_delivery.orders", "--upstream", "--format", "mermaid"]) == 0
    assert capsys.readouterr().out.startswith("flowchart LR")
    assert main.main(["lineage", "food_delivery.no_such_table"]) == 2
    said = " ".join(capsys.readouterr().out.split())
    assert "knows no node 'job:food_delivery:food_delivery.no_such_table'" in said


def test_from_lineage_plans_agree_with_the_asset_graph_on_the_example_mesh(reading_the_server):
    graph = mesh_definitions(ROOT / "domains").resolve_asset_graph()
    roots = [
        k
        for k in graph.toposorted_asset_keys
        if graph.get(k).is_executable and graph.get(k).partitions_def is not None and graph.get(k).child_keys
    ]
    assert dg.AssetKey(["food_delivery", "orders"]) in roots
    for key in roots:
        readers = lineage_readers(get_settings(), ".".join(key.path))
        from_assets = plan_backfill(graph, key, "2021-06-04", "2021-06-06")
        from_lineage = plan_backfill(graph, key, "2021-06-04", "2021-06-06", children=readers)
        assert from_lineage.as_dict() == from_assets.as_dict(), key.to_user_string()
    readers = lineage_readers(get_settings(), "food_delivery.orders")
    orders = plan_backfill(graph, "food_delivery.orders", "2021-06-04", "2021-06-06", children=readers)
    assert orders.as_dict() == {
        "food_delivery/orders": ["2021-06-04..2021-06-06"],
        "food_delivery/delivery_times_7_days": ["2021-06-04..2021-06-12"],
        "food_delivery/orders_7_days": ["2021-06-04..2021-06-12"],
        "food_delivery/monthly_city_orders": ["2021-06-01"],  # June to date: its min_complete accepts the days
    }


def test_backfill_from_lineage_dry_run_prints_the_servers_plan(reading_the_server, monkeypatch, tmp_path, capsys):
    """The command as an operator types it: the plan comes from the server's graph and what the instance holds."""
    landed(planning_instance(monkeypatch, tmp_path, mesh_definitions(ROOT / "domains")))
    args = ["backfill", "food_delivery.orders", "--start", "2021-06-04", "--end", "2021-06-06", "--downstream"]
    assert main.main([*args, "--from-lineage", "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "Backfill plan: 16 partition(s) of 4 asset(s)" in out  # with June of the monthly rollup
    assert "food_delivery/orders 2021-06-04..2021-06-06 3" in out
    assert "food_delivery/orders_7_days 2021-06-04..2021-06-09 6" in out
    assert "food_delivery/orders_7_days 2021-06-10..2021-06-12 (3): food_delivery/orders" in out
    assert "Dry run: nothing launched." in out


def test_backfill_from_lineage_with_no_server_plans_nothing(monkeypatch, capsys):
    monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "http")
    monkeypatch.setenv("MESH_LINEAGE__URL", "http://127.0.0.1:9")  # nothing listens there
    get_settings.cache_clear()
    try:
        args = ["backfill", "food_delivery.orders", "--start", "2021-06-04", "--end", "2021-06-06"]
        assert main.main([*args, "--downstream", "--from-lineage", "--dry-run"]) == 2
    finally:
        get_settings.cache_clear()
    assert "could not be read" in " ".join(capsys.readouterr().out.split())


def test_mesh_lineage_columns_reads_the_servers_column_lineage_endpoint(monkeypatch, capsys):
    """Marquez's graph endpoint carries no column lineage on dataset nodes: `--columns` asks
    `GET /api/v1/column-lineage?nodeId=dataset:<ns>:<name>`, answered from the COMPLETE events' facets."""
    served = lineage_server()
    try:
        client = make_client(MeshSettings(lineage={"transport": "http", "url": served.url}))
        d = sql_run()
        d.columns = {
            "order_id": [(f"{WH}/food_delivery/orders", "id")],
            "menu_id": [(f"{WH}/food_delivery/menus", "id")],
        }
        assert emit(client, build_event("START", d)) and emit(client, build_event("COMPLETE", d))
        monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "http")
        monkeypatch.setenv("MESH_LINEAGE__URL", served.url)
        get_settings.cache_clear()
        assert main.main(["lineage", "food_delivery.orders_7_days", "--format", "json"]) == 0
        graph = json.loads(capsys.readouterr().out)["graph"]
        assert not any("columnLineage" in n["data"] for n in graph)  # as Marquez answers it
        assert main.main(["lineage", "food_delivery.orders_7_days", "--columns"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert main.main(["lineage", "dataset:file:/wh/food_delivery/orders", "--columns"]) == 2
        said = " ".join(capsys.readouterr().out.split())
    finally:
        get_settings.cache_clear()
        served.shutdown()
    assert lines[0] == "flowchart LR"
    assert '    subgraph d0["/wh/food_delivery/menus"]' in lines and '        d0c0["id"]' in lines
    assert '    subgraph d2["/wh/food_delivery/orders_7_days"]' in lines
    assert sorted(line.strip() for line in lines if "-->" in line) == ["d0c0 --> d2c0", "d1c0 --> d2c1"]
    assert "no column lineage recorded for dataset:file:/wh/food_delivery/orders" in said


def test_validate_lineage_reads_the_runs_on_the_lineage_server(monkeypatch, capsys):
    """With events going over HTTP the files hold nothing: `mesh validate --lineage` reads the server's events
    (Marquez's `GET /api/v1/events/lineage`), and says so in red when it cannot."""
    served = lineage_server()
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(ROOT / "tests" / "fixtures" / "lineage" / "domains"))
    monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "http")
    monkeypatch.setenv("MESH_LINEAGE__URL", served.url)
    monkeypatch.setattr(main, "console", Console(width=250, no_color=True))
    get_settings.cache_clear()
    try:
        client = make_client(get_settings())
        assert emit(client, build_event("START", sql_run())) and emit(client, build_event("COMPLETE", sql_run()))
        assert main.main(["validate", "--lineage"]) == 0
        said = " ".join(capsys.readouterr().out.replace("│", " ").split())
        served.shutdown()
        assert main.main(["validate", "--lineage"]) == 2
        down = " ".join(capsys.readouterr().out.split())
    finally:
        get_settings.cache_clear()
    assert f"Undeclared reads in recent runs (the latest 5000 events of the lineage server at {served.url})" in said
    assert "food_delivery.orders_7_days" in said and "central.prices" in said
    assert f"error lineage: undeclared reads not checked: the lineage server at {served.url} could not be read" in down


def test_namespace_prefix_keeps_two_deployments_apart_on_one_server(monkeypatch, capsys):
    """`MESH_LINEAGE__NAMESPACE_PREFIX` goes before the namespaces Mesh names (jobs, the Dagster parent, the
    `<domain>.<table>` symlinks); datasets keep their location's namespace, as other producers name them."""
    served = lineage_server()
    monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "http")
    monkeypatch.setenv("MESH_LINEAGE__URL", served.url)
    monkeypatch.setenv("MESH_LINEAGE__NAMESPACE_PREFIX", "prod.")
    get_settings.cache_clear()
    try:
        with run_events(logging.getLogger(__name__), get_settings(), sql_run()):
            pass
        assert main.main(["lineage", "food_delivery.orders_7_days", "--upstream", "--format", "json"]) == 0
        nodes = {n["id"] for n in json.loads(capsys.readouterr().out)["graph"]}
    finally:
        get_settings.cache_clear()
        served.shutdown()
    start, complete = served.events
    for event in (start, complete):
        validate(event)
        assert event["job"]["namespace"] == "prod.food_delivery"
        assert event["run"]["facets"]["parent"]["job"]["namespace"] == "prod.dagster"
        assert event["outputs"][0]["namespace"] == "file"
        assert event["outputs"][0]["facets"]["symlinks"]["identifiers"][0]["namespace"] == "prod.mesh"
    orders = next(i for i in complete["inputs"] if i["name"] == f"{WH}/food_delivery/orders")
    assert orders["facets"]["symlinks"]["identifiers"][0] == {
        "namespace": "prod.mesh",
        "name": "food_delivery.orders",
        "type": "TABLE",
    }
    assert "job:prod.food_delivery:food_delivery.orders_7_days" in nodes
    assert f"dataset:file:{WH}/food_delivery/orders" in nodes
    with pytest.raises(ValueError, match=r"namespace_prefix 'prod' must end with one of \. _ - / :"):
        MeshSettings(lineage={"namespace_prefix": "prod"})
