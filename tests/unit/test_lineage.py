"""OpenLineage events, their JSON, the lineage graph in Marquez's shape and as Mermaid (no Spark).

Events are serialized with the client's own ``Serde`` and validated against the spec as the client ships it
(``tests/openlineage_spec.py``: the classes generated from the spec, nothing fetched).
"""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import uuid
from datetime import UTC, datetime

import jsonschema
import openlineage_spec
import pytest
from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq
from openlineage.client.serde import Serde
from receiver import json_receiver

from mesh_assets.cli import main
from mesh_assets.lineage.emit import DailyFileTransport, emit, make_client
from mesh_assets.lineage.events import (
    MeshPartitionsRunFacet,
    MeshUndeclaredReadsRunFacet,
    RunDescription,
    build_event,
    dataset_name,
    run_uuid,
)
from mesh_assets.lineage.graph import graph_from_events, read_events
from mesh_assets.settings import MeshSettings, get_settings

MESH_FACETS = {
    "MeshPartitionsRunFacet": MeshPartitionsRunFacet,
    "MeshUndeclaredReadsRunFacet": MeshUndeclaredReadsRunFacet,
}


def validate(event: dict) -> None:
    openlineage_spec.validate(event, MESH_FACETS)


WH = "/wh"


def description(table: str, inputs: list[str], **kw) -> RunDescription:
    return RunDescription(
        domain="food_delivery",
        table=table,
        dagster_run_id="0b0e2f9e-6a55-4d8d-9d0f-1c2b3a4d5e6f",
        dagster_job="__ASSET_JOB",
        output_location=f"{WH}/food_delivery/{table}",
        declared_inputs=[f"{WH}/food_delivery/{i}" for i in inputs],
        **kw,
    )


def sql_run() -> RunDescription:
    d = description("orders_7_days", ["orders", "menus"], sql="SELECT 1", engine_version="4.2.0")
    d.partitions = ("daily", "2021-06-04", "2021-06-05", ["2021-06-04", "2021-06-05"])
    d.reads = [f"{WH}/food_delivery/orders", f"{WH}/food_delivery/menus", f"{WH}/central/prices"]
    d.undeclared, d.undeclared_names = [f"{WH}/central/prices"], ["central.prices"]
    d.schema, d.rows = [("order_id", "bigint"), ("p_date", "date")], 42
    d.assertions = [dq.Assertion(assertion="not_null", success=True, column="order_id", name="not_null_order_id")]
    d.window = (datetime(2021, 6, 4, tzinfo=UTC), datetime(2021, 6, 6, tzinfo=UTC))
    d.version, d.owner, d.null_counts = 7, "food-analytics@example.com", {"order_id": 0}
    d.source = ("sql", "SELECT 1")
    d.table_names = {f"{WH}/food_delivery/orders": "food_delivery.orders"}
    d.columns = {"order_id": [(f"{WH}/food_delivery/orders", "id")], "p_date": []}
    return d


def test_standard_facets_say_window_version_owner_name_and_columns():
    """A consumer that knows only the OpenLineage spec sees the partition window of a range run, the Delta
    version published, the owner, the ``<domain>.<table>`` name, the quality metrics and the column lineage."""
    complete = Serde.to_dict(build_event("COMPLETE", sql_run()))
    validate(complete)
    assert complete["run"]["facets"]["nominalTime"] == {
        "_producer": complete["run"]["facets"]["nominalTime"]["_producer"],
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet",
        "nominalStartTime": "2021-06-04T00:00:00Z",
        "nominalEndTime": "2021-06-06T00:00:00Z",
    }
    out = complete["outputs"][0]["facets"]
    assert out["version"]["datasetVersion"] == "7"
    assert out["ownership"]["owners"] == [{"name": "user:food-analytics@example.com"}]
    assert out["symlinks"]["identifiers"] == [
        {"namespace": "mesh", "name": "food_delivery.orders_7_days", "type": "TABLE"}
    ]
    assert out["dataQualityMetrics"]["rowCount"] == 42
    assert out["dataQualityMetrics"]["columnMetrics"] == {"order_id": {"nullCount": 0, "quantiles": {}}}
    assert out["columnLineage"]["fields"]["order_id"]["inputFields"] == [
        {"namespace": "file", "name": f"{WH}/food_delivery/orders", "field": "id", "transformations": []}
    ]
    orders = next(i for i in complete["inputs"] if i["name"] == f"{WH}/food_delivery/orders")
    assert orders["facets"]["symlinks"]["identifiers"][0]["name"] == "food_delivery.orders"
    job = complete["job"]["facets"]
    assert job["sourceCode"] == {**job["sourceCode"], "language": "sql", "sourceCode": "SELECT 1"}
    assert job["ownership"]["owners"] == [{"name": "user:food-analytics@example.com"}]
    broken = copy.deepcopy(complete)
    del broken["outputs"][0]["facets"]["version"]["datasetVersion"]
    with pytest.raises(jsonschema.ValidationError, match="datasetVersion"):
        validate(broken)  # the validation is real: a facet missing a required field fails
    broken = copy.deepcopy(complete)
    broken["run"]["facets"]["nominalTime"]["nominalStartTime"] = "2021-06-04"
    with pytest.raises(ValueError, match="has to contain time"):
        validate(broken)
    start = Serde.to_dict(build_event("START", sql_run()))
    assert "version" not in start["outputs"][0]["facets"]  # nothing is published before the run ends


def test_source_code_location_names_the_file_in_its_repository(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "remote", "add", "origin", "https://git.example.com/data/mesh.git"], check=True
    )
    product = tmp_path / "domains" / "food_delivery" / "orders.py"
    product.parent.mkdir(parents=True)
    product.write_text("def orders(): ...\n")
    d = sql_run()
    d.source_file = product
    job = Serde.to_dict(build_event("START", d))["job"]["facets"]
    validate(Serde.to_dict(build_event("START", d)))
    assert job["sourceCodeLocation"]["type"] == "git"
    assert job["sourceCodeLocation"]["url"] == "https://git.example.com/data/mesh.git"
    assert job["sourceCodeLocation"]["path"] == "domains/food_delivery/orders.py"
    d.source_file = tmp_path.parent / "elsewhere.py"  # outside any repository: no facet rather than a guess
    assert "sourceCodeLocation" not in Serde.to_dict(build_event("START", d))["job"]["facets"]


def test_events_validate_and_carry_the_facets():
    d = sql_run()
    for state in ("START", "COMPLETE", "FAIL"):
        event = Serde.to_dict(build_event(state, d, error=RuntimeError("boom")))
        validate(event)
        assert event["job"] == {
            "namespace": "food_delivery",
            "name": "food_delivery.orders_7_days",
            "facets": event["job"]["facets"],
        }
        assert event["run"]["runId"] == run_uuid(d.dagster_run_id, "food_delivery.orders_7_days")
        assert event["job"]["facets"]["sql"]["query"] == "SELECT 1"
        assert event["run"]["facets"]["parent"]["run"]["runId"] == d.dagster_run_id
        assert event["run"]["facets"]["mesh_partitions"]["keys"] == ["2021-06-04", "2021-06-05"]
    complete = Serde.to_dict(build_event("COMPLETE", d))
    out = complete["outputs"][0]
    assert (out["namespace"], out["name"]) == ("file", f"{WH}/food_delivery/orders_7_days")
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 42
    assert [f["name"] for f in out["facets"]["schema"]["fields"]] == ["order_id", "p_date"]
    assert out["facets"]["dataQualityAssertions"]["assertions"][0]["success"] is True
    assert {i["name"] for i in complete["inputs"]} == set(d.reads)  # what Spark read, not what was declared
    assert complete["run"]["facets"]["mesh_undeclaredReads"]["tables"] == ["central.prices"]
    start = Serde.to_dict(build_event("START", d))
    assert {i["name"] for i in start["inputs"]} == set(d.declared_inputs)
    fail = Serde.to_dict(build_event("FAIL", d, error=RuntimeError("boom")))
    assert fail["run"]["facets"]["errorMessage"]["message"] == "boom"
    assert "errorMessage" not in complete["run"]["facets"]


def test_run_ids_are_deterministic_uuids_and_datasets_follow_naming():
    assert run_uuid("r1", "a.b") == run_uuid("r1", "a.b") != run_uuid("r2", "a.b")
    uuid.UUID(run_uuid("r1", "a.b"))
    assert dataset_name("file:/tmp/wh/a/b/") == ("file", "/tmp/wh/a/b")
    assert dataset_name("s3a://bucket/wh/a/b") == ("s3a://bucket", "/wh/a/b")


def lineage_events(tmp_path):
    transport = DailyFileTransport(tmp_path)
    from openlineage.client import OpenLineageClient

    client = OpenLineageClient(transport=transport)
    orders = description("orders", ["raw_orders"])
    weekly = description("orders_7_days", ["orders"])
    for d in (orders, weekly):
        assert emit(client, build_event("START", d))
        assert emit(client, build_event("COMPLETE", d))
    return read_events(tmp_path)


def test_file_transport_and_marquez_graph(tmp_path):
    events = lineage_events(tmp_path)
    assert [e["eventType"] for e in events] == ["START", "COMPLETE", "START", "COMPLETE"]
    graph = graph_from_events(events)
    start = graph.resolve("food_delivery.orders")
    assert start == "job:food_delivery:food_delivery.orders"
    down = graph.subgraph(start, "downstream").to_marquez()
    json.dumps(down)
    ids = {n["id"] for n in down["graph"]}
    assert ids == {
        "job:food_delivery:food_delivery.orders",
        "dataset:file:/wh/food_delivery/orders",
        "job:food_delivery:food_delivery.orders_7_days",
        "dataset:file:/wh/food_delivery/orders_7_days",
    }
    for node in down["graph"]:
        assert set(node) == {"id", "type", "data", "inEdges", "outEdges"}
        assert node["type"] in ("DATASET", "JOB")
        assert node["data"]["id"] == {"namespace": node["data"]["namespace"], "name": node["data"]["name"]}
        for edge in node["inEdges"]:
            assert edge["destination"] == node["id"]
        for edge in node["outEdges"]:
            assert edge["origin"] == node["id"]
    up = graph.subgraph(start, "upstream", depth=1).to_marquez()
    assert {n["id"] for n in up["graph"]} == {start, "dataset:file:/wh/food_delivery/raw_orders"}


def test_mermaid(tmp_path):
    graph = graph_from_events(lineage_events(tmp_path))
    text = graph.subgraph("dataset:file:/wh/food_delivery/orders", "both", depth=1).to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    assert sum("-->" in line for line in lines) == 2
    assert any('[("/wh/food_delivery/orders")]' in line for line in lines)
    assert any('["food_delivery.orders_7_days"]' in line for line in lines)


def test_http_transport_posts_to_a_marquez_style_endpoint(monkeypatch):
    received: list[tuple[str, dict]] = []
    server = json_receiver(lambda path, body: received.append((path, body)), status=201)
    try:
        settings = MeshSettings(lineage={"transport": "http", "url": f"http://127.0.0.1:{server.server_port}"})
        client = make_client(settings)
        assert emit(client, build_event("COMPLETE", sql_run()))
    finally:
        server.shutdown()
    [(path, event)] = received
    assert path == "/api/v1/lineage"
    validate(event)
    assert event["eventType"] == "COMPLETE" and event["job"]["name"] == "food_delivery.orders_7_days"


def test_console_transport_logs_each_event():
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("openlineage.client.transport.console")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        client = make_client(MeshSettings(lineage={"transport": "console"}))
        assert emit(client, build_event("START", sql_run()))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [record] = records
    assert json.loads(record.getMessage())["eventType"] == "START"


def test_http_transport_needs_a_url():
    with pytest.raises(ValueError, match=r"lineage\.url is not set"):
        make_client(MeshSettings(lineage={"transport": "http"}))
    assert make_client(MeshSettings(lineage={"transport": "none"})) is None


@pytest.fixture
def no_client_config(monkeypatch, tmp_path):
    """No OpenLineage configuration from this machine: no variables, no ``openlineage.yml`` found."""
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_clients_own_configuration_applies_when_mesh_sets_no_transport(no_client_config, monkeypatch):
    tmp_path = no_client_config
    received: list[tuple[str, dict]] = []
    server = json_receiver(lambda path, body: received.append((path, body)), status=201)
    try:
        monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{server.server_port}")
        assert emit(make_client(MeshSettings(home=tmp_path / "mesh")), build_event("START", sql_run()))
        assert [path for path, _ in received] == ["/api/v1/lineage"]
        own = MeshSettings(home=tmp_path / "mesh", lineage={"transport": "file"})  # Mesh's own setting wins
        assert emit(make_client(own), build_event("COMPLETE", sql_run()))
        assert len(received) == 1 and [e["eventType"] for e in read_events(own.lineage_dir)] == ["COMPLETE"]
    finally:
        server.shutdown()

    monkeypatch.delenv("OPENLINEAGE_URL")
    log_file = tmp_path / "from-openlineage-yml.jsonl"
    (tmp_path / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {log_file}\n  append: true\n"
    )
    assert emit(make_client(MeshSettings(home=tmp_path / "other")), build_event("START", sql_run()))
    [line] = log_file.read_text().splitlines()
    assert json.loads(line)["job"]["name"] == "food_delivery.orders_7_days"
    assert not (tmp_path / "other" / "lineage").exists()


def test_without_any_configuration_events_go_to_the_files(no_client_config):
    settings = MeshSettings(home=no_client_config / "mesh")
    assert emit(make_client(settings), build_event("START", sql_run()))
    assert [e["eventType"] for e in read_events(settings.lineage_dir)] == ["START"]


def test_undeclared_reads_rule_is_per_domain(monkeypatch):
    settings = MeshSettings(lineage={"undeclared_reads": "warn", "domains": {"finance": {"undeclared_reads": "error"}}})
    assert settings.lineage.undeclared_reads_for("finance") == "error"
    assert settings.lineage.undeclared_reads_for("food_delivery") == "warn"
    monkeypatch.setenv("MESH_LINEAGE__DOMAINS__LX__UNDECLARED_READS", "error")
    assert MeshSettings().lineage.undeclared_reads_for("lx") == "error"
    with pytest.raises(ValueError, match="undeclared_reads"):
        MeshSettings(lineage={"domains": {"lx": {"undeclared_reads": "ignore"}}})


def test_mesh_lineage_draws_a_products_column_lineage(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    monkeypatch.delenv("MESH_LINEAGE__TRANSPORT", raising=False)
    monkeypatch.delenv("OPENLINEAGE_URL", raising=False)
    get_settings.cache_clear()
    try:
        client = make_client(MeshSettings(lineage={"transport": "file"}))
        d = sql_run()
        d.columns = {
            "order_id": [(f"{WH}/food_delivery/orders", "id")],
            "menu_id": [(f"{WH}/food_delivery/menus", "id")],
        }
        assert emit(client, build_event("COMPLETE", d))
        assert main.main(["lineage", "food_delivery.orders_7_days", "--columns"]) == 0
        assert main.main(["lineage", "food_delivery.orders_7_days", "--upstream", "--format", "dot"]) == 0
    finally:
        get_settings.cache_clear()
    text, dot = capsys.readouterr().out.split("digraph")
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    assert '    subgraph d0["/wh/food_delivery/menus"]' in lines and '        d0c0["id"]' in lines
    assert '    subgraph d2["/wh/food_delivery/orders_7_days"]' in lines
    assert sorted(line.strip() for line in lines if "-->" in line) == ["d0c0 --> d2c0", "d1c0 --> d2c1"]
    assert '"food_delivery.orders_7_days"' in dot and "shape=cylinder" in dot
