"""OpenLineage events, their JSON, the lineage graph in Marquez's shape and as Mermaid (no Spark).

Events are serialized with the client's own ``Serde`` and validated against the spec as the client ships it
(``tests/openlineage_spec.py``: the classes generated from the spec, nothing fetched).
"""

from __future__ import annotations

import copy
import json
import subprocess
import uuid
from pathlib import Path

import jsonschema
import pytest
from lineage_runs import WH, description, sql_run, validate
from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq
from openlineage.client.serde import Serde

from mesh_assets.checks.outcomes import CheckOutcome
from mesh_assets.cli import main
from mesh_assets.engine.identity import RunIdentity
from mesh_assets.lineage.capture import Reads
from mesh_assets.lineage.columns import sql_lineage
from mesh_assets.lineage.emit import DailyFileTransport, emit, make_client
from mesh_assets.lineage.events import (
    build_event,
    dataset_name,
    run_uuid,
)
from mesh_assets.lineage.graph import graph_from_events, read_events
from mesh_assets.lineage.run import ProductLineage
from mesh_assets.model.checks import NotNull, Unique
from mesh_assets.settings import MeshSettings, get_settings

ROOT = Path(__file__).resolve().parents[2]


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
    assert "dataQualityAssertions" not in out["facets"]  # an input facet in the spec, never an output's
    assert complete["run"]["facets"]["test"]["tests"] == [
        {
            "name": "not_null_order_id",
            "status": "pass",
            "severity": "error",
            "type": "not_null",
            "params": {"column": "order_id"},
        }
    ]
    assert {i["name"] for i in complete["inputs"]} == set(d.reads)  # what Spark read, not what was declared
    assert complete["run"]["facets"]["mesh_undeclaredReads"]["tables"] == ["central.prices"]
    start = Serde.to_dict(build_event("START", d))
    assert {i["name"] for i in start["inputs"]} == set(d.declared_inputs)
    fail = Serde.to_dict(build_event("FAIL", d, error=RuntimeError("boom")))
    assert fail["run"]["facets"]["errorMessage"]["message"] == "boom"
    assert "errorMessage" not in complete["run"]["facets"]


def test_check_results_are_the_runs_test_facet_per_check_and_partition():
    """Checks judge the run's output before it is published: the spec's ``test`` run facet records each
    verdict (``dataQualityAssertions`` is an input facet in the spec, for a run that tests what it reads)."""
    d = sql_run()
    outcomes = [
        CheckOutcome(NotNull(columns=("order_id",)), "2021-06-04", passed=True),
        CheckOutcome(Unique(keys=("order_id", "p_date"), severity="warn"), "2021-06-05", passed=False, failing_rows=3),
    ]
    ProductLineage(d).record(Reads(d.declared_inputs), outcomes, None)
    complete = Serde.to_dict(build_event("COMPLETE", d))
    validate(complete)
    assert complete["run"]["facets"]["test"]["tests"] == [
        {
            "name": "not_null_order_id",
            "status": "pass",
            "severity": "error",
            "type": "not_null",
            "actual": "0",
            "params": {"column": "order_id", "partition": "2021-06-04"},
        },
        {
            "name": "unique_order_id_p_date",
            "status": "fail",
            "severity": "warn",
            "type": "unique",
            "description": "check unique_order_id_p_date on partition 2021-06-05 failed (3 failing rows)",
            "actual": "3",
            "params": {"column": "order_id,p_date", "partition": "2021-06-05"},
        },
    ]
    assert all("dataQualityAssertions" not in o["facets"] for o in complete["outputs"])


def test_a_facet_where_the_spec_does_not_allow_it_is_refused():
    """The validator knows where each facet may go: a dataset facet in ``facets``, an input facet only in an
    input's ``inputFacets``, an output facet only in an output's ``outputFacets``, a run facet on the run."""
    complete = Serde.to_dict(build_event("COMPLETE", sql_run()))
    out = complete["outputs"][0]
    moved = copy.deepcopy(complete)
    moved["outputs"][0]["facets"]["outputStatistics"] = out["outputFacets"]["outputStatistics"]
    with pytest.raises(jsonschema.ValidationError, match=r"outputs\[0\]\.facets\.outputStatistics: Output"):
        validate(moved)
    moved = copy.deepcopy(complete)
    moved["outputs"][0]["facets"]["dataQualityAssertions"] = Serde.to_dict(
        dq.DataQualityAssertionsDatasetFacet(assertions=[dq.Assertion(assertion="not_null", success=True)])
    )
    with pytest.raises(jsonschema.ValidationError, match="extends InputDatasetFacet"):
        validate(moved)
    moved["inputs"][0]["inputFacets"] = {
        "dataQualityAssertions": moved["outputs"][0]["facets"].pop("dataQualityAssertions")
    }
    validate(moved)  # where the spec defines it
    moved["run"]["facets"]["schema"] = out["facets"]["schema"]
    with pytest.raises(jsonschema.ValidationError, match=r"run\.facets\.schema: SchemaDatasetFacet"):
        validate(moved)


def test_mesh_facets_follow_the_schema_their_urls_name():
    """Mesh's own facets point consumers at docs/lineage-facets.json; what they carry is what it defines."""
    schema = json.loads((ROOT / "docs" / "lineage-facets.json").read_text())
    run = sql_run()
    run.identity = RunIdentity("food_delivery", "domain", "FOOD_DELIVERY_AWS_ACCESS_KEY_ID")
    event = Serde.to_dict(build_event("COMPLETE", run))
    facets, [output] = event["run"]["facets"], event["outputs"]
    found = {**facets, **output["facets"], **output["outputFacets"]}
    assert facets["mesh_identity"]["accessKeyVariable"] == "FOOD_DELIVERY_AWS_ACCESS_KEY_ID"
    for name in ("mesh_partitions", "mesh_undeclaredReads", "mesh_tableKind", "mesh_rowsChanged", "mesh_identity"):
        facet = found[name]
        url, _, pointer = facet["_schemaURL"].partition("#/$defs/")
        assert url == schema["$id"]
        jsonschema.validate(facet, {**schema, "$ref": f"#/$defs/{pointer}"})
    bad = {**facets["mesh_partitions"], "kind": "quarterly"}
    with pytest.raises(jsonschema.ValidationError, match="quarterly"):
        jsonschema.validate(bad, {**schema, "$ref": "#/$defs/MeshPartitionsRunFacet"})


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


def test_sql_column_lineage_through_a_join_and_an_aggregation():
    orders, customers = f"{WH}/cl/orders", f"{WH}/cl/customers"
    sql = """
        WITH o AS (SELECT * FROM cl.orders WHERE p_date BETWEEN :partition_start AND :partition_end)
        SELECT o.p_date, c.segment, SUM(o.amount * o.quantity) AS revenue, COUNT(DISTINCT o.order_id) AS orders
        FROM o JOIN cl.customers c ON o.customer_id = c.id
        GROUP BY o.p_date, c.segment"""
    schemas = {
        orders: {
            "order_id": "bigint",
            "customer_id": "bigint",
            "amount": "double",
            "quantity": "int",
            "p_date": "date",
        },
        customers: {"id": "bigint", "segment": "string", "name": "string"},
    }
    got = sql_lineage(sql, {"cl.orders": orders, "cl.customers": customers}, schemas)
    assert got == {
        "p_date": [(orders, "p_date")],
        "segment": [(customers, "segment")],
        "revenue": [(orders, "amount"), (orders, "quantity")],
        "orders": [(orders, "order_id")],
    }
    unqualified = sql.replace("FROM cl.orders", "FROM orders")  # the plan, not a guess, says which table
    assert sql_lineage(unqualified, {"cl.orders": orders, "cl.customers": customers}, schemas) is None
