"""A 90-day backfill of 15-minute products (8,640 partitions) as one run, against raw Spark over the same range.

Two products aggregate the same quarter-hour batches (``bench/minute_domains``): a SQL one and a range-aware
PySpark one. Each is materialized as one single-run backfill of the whole range in-process, and raw Spark
reads the same range and writes the same aggregation with ``replaceWhere`` (the floor). Raw and Mesh are timed
alternately ``repeat`` times and compared by their medians, so a busy moment of a shared machine does not land
on one side only. The data is small (a few rows a partition): what is measured is the cost of 8,640 partitions.
Run alone: ``python -m bench.minute_backfill --days 90``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import Result, print_results, timed
from mesh_assets import MeshResource, executable_assets, get_spark, mesh_definitions
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

DOMAINS = Path(__file__).resolve().parent / "minute_domains"
START = datetime(2024, 1, 1, tzinfo=UTC)
GRAIN = Grain.of("15min")
PER_DAY = 96


def aggregate(clicks: DataFrame) -> DataFrame:
    """The products' aggregation (``quarter_clicks``'s SQL, ``quarter_sums``'s function) for the raw floor."""
    return clicks.groupBy("p_ts", (F.col("id") % 7).alias("bucket")).agg(
        F.count("*").alias("clicks"), F.sum("amount").alias("amount")
    )


class MinuteWorkload:
    """``days`` days of quarter-hour batches of ``rows`` rows each, and ways to aggregate them."""

    def __init__(self, spark: SparkSession, days: int, rows: int):
        self.spark = spark
        self.count = days * PER_DAY
        self.base = Path(tempfile.mkdtemp(prefix="mesh-bench-minute-"))
        self.mesh = MeshResource(warehouse=str(self.base / "warehouse"))
        start = int(START.timestamp())
        clicks = (
            spark.range(self.count * rows)
            .withColumn("p_ts", F.timestamp_seconds(F.lit(start) + (F.col("id") / rows).cast("long") * 900))
            .withColumn("amount", (F.col("id") * 7919) % 1000)
        )
        clicks.repartition("p_ts").write.format("delta").partitionBy("p_ts").save(self.location("raw_clicks"))
        self.assets = executable_assets(mesh_definitions(DOMAINS, dbt=False))
        self.instance = dg.DagsterInstance.ephemeral()
        raw = dg.AssetKey(["minute", "raw_clicks"])
        for i in range(self.count):  # what the observer reports for each landed batch
            self.instance.report_runless_asset_event(dg.AssetMaterialization(raw, partition=self.key(i)))

    def location(self, table: str) -> str:
        return self.mesh.registry.location("minute", table)

    def key(self, offset: int) -> str:
        return GRAIN.key(START + timedelta(minutes=15 * offset))

    def raw(self, first: int, last: int, table: str) -> None:
        """The floor: the product's read, aggregation and partition-replacing write, with no orchestration."""
        rng = PartitionRange.from_keys(GRAIN, self.key(first), self.key(last))
        window = (
            self.spark.read.format("delta")
            .load(self.location("raw_clicks"))
            .where(F.col("p_ts").between(F.lit(rng.start), F.lit(rng.end)))
        )
        (
            aggregate(window)
            .write.format("delta")
            .mode("overwrite")
            .partitionBy("p_ts")
            .option("replaceWhere", replace_predicate("p_ts", rng))
            .save(self.location(table))
        )

    def materialize(self, table: str, first: int, last: int) -> None:
        dg.materialize(
            self.assets,
            instance=self.instance,
            resources={"mesh": self.mesh},
            selection=[dg.AssetKey(["minute", table])],
            tags={
                "dagster/asset_partition_range_start": self.key(first),
                "dagster/asset_partition_range_end": self.key(last),
            },
        )


def _case(work: MinuteWorkload, table: str, repeat: int) -> tuple[float, float]:
    """Medians of (Mesh's single run, raw Spark) over the whole range, timed alternately."""
    last = work.count - 1
    runs: list[tuple[Callable[[], None], list[float]]] = [
        (lambda: work.raw(0, last, f"raw_{table}"), []),
        (lambda: work.materialize(table, 0, last), []),
    ]
    for _ in range(repeat):
        for fn, times in runs:
            times.append(timed(fn))
    return statistics.median(runs[1][1]), statistics.median(runs[0][1])


def run(days: int = 90, rows: int = 4, repeat: int = 3) -> list[Result]:
    work = MinuteWorkload(get_spark(), days, rows)
    work.raw(0, 0, "raw_warmup")
    work.materialize("quarter_clicks", 0, 0)
    work.materialize("quarter_sums", 0, 0)
    results = []
    for table, kind in (("quarter_clicks", "SQL"), ("quarter_sums", "PySpark, range-aware")):
        single, raw = _case(work, table, repeat)
        results.append(
            Result(
                "minute_backfill",
                f"{work.count:,} 15-minute partitions ({days} days), single run, {kind}",
                single,
                "raw Spark over the range",
                raw,
                "<= 1.2x raw",
                single <= 1.2 * raw,
                notes=f"{rows} rows a partition, median of {repeat}",
            )
        )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print_results(run(args.days, args.rows, args.repeat))
