"""OpenLineage events, their JSON, the lineage graph in Marquez's shape and as Mermaid (no Spark).

openlineage-python 1.54.0 ships no spec JSON schema files (only generated attrs classes), and nothing is
fetched from the network, so events are validated structurally: serialized with the client's own ``Serde``
and checked against a minimal schema written here from the OpenLineage 2-0-2 RunEvent spec.
"""

from __future__ import annotations

import json
import logging
import uuid

import jsonschema
import pytest
from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq
from openlineage.client.serde import Serde
from receiver import json_receiver

from mesh_assets.lineage.emit import DailyFileTransport, emit, make_client
from mesh_assets.lineage.events import RunDescription, build_event, dataset_name, run_uuid
from mesh_assets.lineage.graph import graph_from_events, read_events
from mesh_assets.settings import MeshSettings

FACET = {"type": "object", "required": ["_producer", "_schemaURL"]}
DATASET = {
    "type": "object",
    "required": ["namespace", "name"],
    "properties": {"facets": {"type": "object", "additionalProperties": FACET}},
}
RUN_EVENT = {
    "type": "object",
    "required": ["eventTime", "producer", "schemaURL", "run", "job", "eventType"],
    "properties": {
        "eventType": {"enum": ["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"]},
        "eventTime": {"type": "string", "format": "date-time"},
        "producer": {"type": "string", "format": "uri"},
        "schemaURL": {"type": "string", "format": "uri"},
        "run": {
            "type": "object",
            "required": ["runId"],
            "properties": {
                "runId": {"type": "string", "format": "uuid"},
                "facets": {"type": "object", "additionalProperties": FACET},
            },
        },
        "job": {
            "type": "object",
            "required": ["namespace", "name"],
            "properties": {"facets": {"type": "object", "additionalProperties": FACET}},
        },
        "inputs": {"type": "array", "items": DATASET},
        "outputs": {"type": "array", "items": DATASET},
    },
}

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
    return d


def test_events_validate_and_carry_the_facets():
    d = sql_run()
    for state in ("START", "COMPLETE", "FAIL"):
        event = Serde.to_dict(build_event(state, d, error=RuntimeError("boom")))
        jsonschema.validate(event, RUN_EVENT, format_checker=jsonschema.FormatChecker())
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
    jsonschema.validate(event, RUN_EVENT, format_checker=jsonschema.FormatChecker())
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
