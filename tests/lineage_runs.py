"""Product runs described as Mesh describes them, for tests of their OpenLineage events (no Spark)."""

from __future__ import annotations

from datetime import UTC, datetime

import openlineage_spec
from openlineage.client.facet_v2 import test_run

from mesh_assets.lineage.events import (
    MeshIdentityRunFacet,
    MeshPartitionsRunFacet,
    MeshRowsChangedOutputDatasetFacet,
    MeshTableKindDatasetFacet,
    MeshUndeclaredReadsRunFacet,
    RunDescription,
)

MESH_FACETS = {
    "MeshIdentityRunFacet": MeshIdentityRunFacet,
    "MeshPartitionsRunFacet": MeshPartitionsRunFacet,
    "MeshUndeclaredReadsRunFacet": MeshUndeclaredReadsRunFacet,
    "MeshTableKindDatasetFacet": MeshTableKindDatasetFacet,
    "MeshRowsChangedOutputDatasetFacet": MeshRowsChangedOutputDatasetFacet,
}


def validate(event: dict) -> None:
    """Raise when ``event`` breaks the OpenLineage spec (Mesh's own facets by their classes)."""
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
    """A finished range run of a SQL product with every facet filled in."""
    d = description("orders_7_days", ["orders", "menus"], sql="SELECT 1", engine_version="4.2.0")
    d.partitions = ("daily", "2021-06-04", "2021-06-05", ["2021-06-04", "2021-06-05"])
    d.reads = [f"{WH}/food_delivery/orders", f"{WH}/food_delivery/menus", f"{WH}/central/prices"]
    d.undeclared, d.undeclared_names = [f"{WH}/central/prices"], ["central.prices"]
    d.schema, d.rows = [("order_id", "bigint"), ("p_date", "date")], 42
    d.tests = [
        test_run.TestExecution(
            name="not_null_order_id", status="pass", type="not_null", severity="error", params={"column": "order_id"}
        )
    ]
    d.window = (datetime(2021, 6, 4, tzinfo=UTC), datetime(2021, 6, 6, tzinfo=UTC))
    d.version, d.owner, d.null_counts = 7, "food-analytics@example.com", {"order_id": 0}
    d.kind, d.changes = ("merge", "merge on order_id"), {"inserted": 3, "updated": 2, "deleted": 0}
    d.source = ("sql", "SELECT 1")
    d.table_names = {f"{WH}/food_delivery/orders": "food_delivery.orders"}
    d.columns = {"order_id": [(f"{WH}/food_delivery/orders", "id")], "p_date": []}
    return d
