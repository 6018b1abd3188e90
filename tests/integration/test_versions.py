"""Major versions on real Spark and Delta: version 2 of a table is published beside version 1, and a reader
pinned to version 1 keeps reading version 1's rows (both readers' SQL names the table the same way)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "versions" / "domains"
V1, V2 = dg.AssetKey(["shop", "orders"]), dg.AssetKey(["shop", "orders_v2"])
LEGACY, CURRENT = dg.AssetKey(["reports", "legacy_report"]), dg.AssetKey(["reports", "current_report"])
DAY = "2021-06-01"


def test_version_two_is_published_beside_version_one_and_a_pinned_reader_keeps_version_one(spark, tmp_path):
    mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
    defs = mesh_definitions(DOMAINS)
    instance = dg.DagsterInstance.ephemeral()
    raw = spark.createDataFrame(
        [(1, 3, date(2021, 6, 1)), (2, 4, date(2021, 6, 1))], "id bigint, amount bigint, p_date date"
    )
    raw.write.format("delta").partitionBy("p_date").save(mesh.registry.location("shop", "raw_orders"))
    observe_now(defs, instance, mesh)

    def materialize(*keys: dg.AssetKey) -> None:
        dg.materialize(
            executable_assets(defs),
            instance=instance,
            resources={"mesh": mesh},
            selection=list(keys),
            partition_key=DAY,
        )

    materialize(V1, V2)
    materialize(LEGACY, CURRENT)

    def rows(key: dg.AssetKey) -> list[tuple]:
        table = spark.read.format("delta").load(mesh.registry.location(*key.path))
        return sorted(tuple(r) for r in table.drop("p_date").collect())

    assert mesh.registry.location(*V2.path).endswith("/shop/orders_v2")  # beside version 1, not over it
    assert rows(V1) == [(1, 3), (2, 4)] and rows(V2) == [(1, 300), (2, 400)]
    assert rows(LEGACY) == [(1, 3), (2, 4)]  # pinned to version 1: version 1's rows
    assert rows(CURRENT) == [(1, 300), (2, 400)]
    graph = defs.resolve_asset_graph()
    assert graph.get(LEGACY).parent_keys == {V1} and graph.get(CURRENT).parent_keys == {V2}
