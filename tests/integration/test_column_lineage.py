"""Column lineage and the standard facets of real product runs: a PySpark product (Spark's analyzed plan)
and the same logic in SQL (sqlglot), each joining orders to customers and aggregating per segment."""

from __future__ import annotations

import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from lineage_runs import validate

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.lineage.graph import read_events
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "column_lineage" / "domains"
DAY = "2024-01-02"


def test_derived_columns_name_their_exact_inputs_through_a_join_and_an_aggregation(spark, tmp_path):
    mesh = MeshResource(warehouse=str(tmp_path / f"wh-{uuid.uuid4().hex[:8]}"))
    orders, customers = mesh.registry.location("cl", "orders"), mesh.registry.location("cl", "customers")
    d = date.fromisoformat(DAY)
    spark.createDataFrame(
        [(1, 10, 2.5, 2, d), (2, 11, 4.0, 1, d)],
        "order_id bigint, customer_id bigint, amount double, quantity int, p_date date",
    ).write.format("delta").partitionBy("p_date").save(orders)
    spark.createDataFrame(
        [(10, "retail", "Ann"), (11, "pro", "Bo")], "id bigint, segment string, name string"
    ).write.format("delta").save(customers)
    instance = dg.DagsterInstance.ephemeral()
    defs = mesh_definitions(FIXTURE)
    observe_now(defs, instance, mesh)
    keys = [dg.AssetKey(["cl", "segment_revenue"]), dg.AssetKey(["cl", "segment_revenue_sql"])]
    result = dg.materialize(
        executable_assets(defs), instance=instance, resources={"mesh": mesh}, selection=keys, partition_key=DAY
    )
    assert result.success

    expected = {
        "p_date": [(orders, "p_date")],
        "segment": [(customers, "segment")],
        "revenue": [(orders, "amount"), (orders, "quantity")],
        "orders": [(orders, "order_id")],
    }
    for table in ("segment_revenue", "segment_revenue_sql"):
        [complete] = [
            e
            for e in read_events(get_settings().lineage_dir)
            if e["job"]["name"] == f"cl.{table}"
            and e["eventType"] == "COMPLETE"
            and e["run"]["facets"]["parent"]["run"]["runId"] == result.run_id
        ]
        validate(complete)
        out = complete["outputs"][0]["facets"]
        fields = out["columnLineage"]["fields"]
        assert {c: [(f["name"], f["field"]) for f in v["inputFields"]] for c, v in fields.items()} == expected, table
        assert {f["namespace"] for v in fields.values() for f in v["inputFields"]} == {"file"}
        version = DeltaTable.forPath(spark, mesh.registry.location("cl", table)).history(1).collect()[0]["version"]
        assert out["version"]["datasetVersion"] == str(version)
        assert out["symlinks"]["identifiers"][0]["name"] == f"cl.{table}"
        assert out["ownership"]["owners"] == [{"name": "user:sales@example.com"}]
        nominal = complete["run"]["facets"]["nominalTime"]
        assert (nominal["nominalStartTime"], nominal["nominalEndTime"]) == (
            "2024-01-02T00:00:00Z",
            "2024-01-03T00:00:00Z",
        )
        language = complete["job"]["facets"]["sourceCode"]["language"]
        assert language == ("sql" if table.endswith("_sql") else "python")
