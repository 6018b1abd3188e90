"""Readers of a keyed table (kind merge): a partition that reads its state whole waits until the table applied
that partition, and then reads the state it applied."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "kind_readers" / "domains"
STATUS = dg.AssetKey(["kr", "order_status"])
COUNTS = dg.AssetKey(["kr", "status_counts"])


class Orders:
    def __init__(self, spark, tmp_path: Path):
        self.spark, self.instance = spark, dg.DagsterInstance.ephemeral()
        self.mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
        self.defs = mesh_definitions(DOMAINS)
        self.cursors: dict[str, str | None] = {}

    def land(self, day: str, rows: list[tuple[int, str, int]]) -> None:
        """Status updates of ``day`` (order, status, sequence), landed as an outside writer would, and observed."""
        frame = self.spark.createDataFrame(
            [(*r, date.fromisoformat(day)) for r in rows], "order_id int, status string, seq int, p_date date"
        )
        where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
        frame.write.format("delta").mode("overwrite").partitionBy("p_date").option("replaceWhere", where).save(
            self.mesh.registry.location("kr", "raw_status")
        )
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def materialize(self, key: dg.AssetKey, day: str) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[key],
            partition_key=day,
            raise_on_error=False,
        )

    def counts(self) -> dict[str, int]:
        table = self.spark.read.format("delta").load(self.mesh.registry.location(*COUNTS.path))
        return {r["status"]: r["orders"] for r in table.where("p_date = DATE'2021-06-02'").collect()}


def test_a_partition_reading_a_merge_table_whole_waits_for_the_partition_it_applied(spark, tmp_path):
    orders = Orders(spark, tmp_path)
    orders.land("2021-06-01", [(1, "placed", 1), (2, "placed", 1)])
    orders.land("2021-06-02", [(1, "delivered", 2), (3, "placed", 1)])
    assert orders.materialize(STATUS, "2021-06-01").success

    refused = orders.materialize(COUNTS, "2021-06-02")  # the state of 06-02 is not applied yet

    assert not refused.success
    failure = next(e for e in refused.all_events if e.is_step_failure).step_failure_data.error.message
    assert "kr.order_status 2021-06-02 (not published)" in failure
    assert orders.instance.get_materialized_partitions(COUNTS) == set()

    assert orders.materialize(STATUS, "2021-06-02").success
    assert orders.materialize(COUNTS, "2021-06-02").success
    assert orders.counts() == {"placed": 2, "delivered": 1}
