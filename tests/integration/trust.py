"""The trust tests' small world: landed sales (``tr.raw_sales``), their daily and two-day totals, another
domain's ledger reading the two-day totals (tests/fixtures/trust/domains)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

DOMAINS = Path(__file__).resolve().parents[1] / "fixtures" / "trust" / "domains"
RAW = dg.AssetKey(["tr", "raw_sales"])
DAILY = dg.AssetKey(["tr", "daily_sales"])
TWO_DAY = dg.AssetKey(["tr", "two_day_sales"])
LEDGER = dg.AssetKey(["ledger", "ledger_entries"])


class Sales:
    """A warehouse, an instance and the fixture mesh's definitions; land days, observe, materialize."""

    def __init__(self, spark, warehouse: Path, instance: dg.DagsterInstance, domains: Path = DOMAINS):
        self.spark = spark
        self.mesh = MeshResource(warehouse=str(warehouse))
        self.instance = instance
        self.defs = mesh_definitions(domains)
        self.cursors: dict[str, str | None] = {}

    def land(self, day: str, amounts: list[int | None]) -> None:
        """Replace ``day`` of the landed sales with one row per amount, as an outside writer would; observe it."""
        d = date.fromisoformat(day)
        rows = [(i, a, d) for i, a in enumerate(amounts)]
        frame = self.spark.createDataFrame(rows, "id bigint, amount bigint, p_date date")
        where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
        frame.write.format("delta").mode("overwrite").partitionBy("p_date").option("replaceWhere", where).save(
            self.mesh.registry.location("tr", "raw_sales")
        )
        self.cursors = observe_now(self.defs, self.instance, self.mesh, self.cursors)

    def materialize(self, keys: list[dg.AssetKey], start: str, end: str | None = None, *, raise_on_error: bool = True):
        return dg.materialize(
            executable_assets(self.defs),
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=keys,
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end or start},
            raise_on_error=raise_on_error,
        )

    def amounts(self, key: dg.AssetKey) -> dict[str, int]:
        """The published ``amount`` per day of ``key``'s Delta table."""
        table = self.spark.read.format("delta").load(self.mesh.registry.location(*key.path))
        return {r["p_date"].isoformat(): r["amount"] for r in table.collect()}
