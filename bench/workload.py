"""The benchmarks' Spark workload: a synthetic events table and the same work done raw or through Mesh."""

from __future__ import annotations

import importlib.util
import tempfile
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

DOMAINS = Path(__file__).resolve().parent / "domains"
START = date(2024, 1, 1)


def _aggregate():
    spec = importlib.util.spec_from_file_location("bench_work", DOMAINS / "bench" / "work.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.aggregate


def raw_work(spark: SparkSession, events: str, out: str, first: str, last: str) -> None:
    """The floor: the product's read, aggregation and partition-replacing write, with no orchestration."""
    rng = PartitionRange.from_keys(Grain.DAILY, first, last)
    window = (
        spark.read.format("delta")
        .load(events)
        .where(F.col("p_date").between(F.lit(rng.start.date()), F.lit(rng.end.date())))
    )
    (
        _aggregate()(window)
        .write.format("delta")
        .mode("overwrite")
        .partitionBy("p_date")
        .option("replaceWhere", replace_predicate("p_date", rng))
        .save(out)
    )


class Workload:
    """A warehouse with ``days`` days of ``rows_per_day`` events, and ways to compute ``daily_work``."""

    def __init__(self, spark: SparkSession, days: int, rows_per_day: int):
        self.spark = spark
        self.days = days
        self.base = Path(tempfile.mkdtemp(prefix="mesh-bench-"))
        self.mesh = MeshResource(warehouse=str(self.base / "warehouse"))
        events = (
            spark.range(days * rows_per_day)
            .withColumn("p_date", F.date_add(F.lit(START), (F.col("id") / rows_per_day).cast("int")))
            .withColumn("amount", (F.col("id") * 7919) % 1000)
            .withColumn("user", (F.col("id") * 104729) % 50_000)
        )
        events.write.format("delta").partitionBy("p_date").save(self.location("events"))
        self.assets = executable_assets(mesh_definitions(DOMAINS, dbt=False))
        self.instance = dg.DagsterInstance.ephemeral()

    def location(self, table: str) -> str:
        return self.mesh.registry.location("bench", table)

    def key(self, offset: int) -> str:
        return (START + timedelta(days=offset)).isoformat()

    def raw(self, first: int, last: int, table: str = "raw_work") -> None:
        raw_work(self.spark, self.location("events"), self.location(table), self.key(first), self.key(last))

    def materialize(self, first: int, last: int | None = None) -> None:
        tags = {}
        partition = None
        if last is None:
            partition = self.key(first)
        else:
            tags = {
                "dagster/asset_partition_range_start": self.key(first),
                "dagster/asset_partition_range_end": self.key(last),
            }
        dg.materialize(
            self.assets,
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(["bench", "daily_work"])],
            partition_key=partition,
            tags=tags,
        )
