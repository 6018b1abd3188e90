"""A 90-day backfill of 15-minute products (8,640 partitions) as one run, against raw Spark over the same range.

Two products aggregate the same quarter-hour batches (``bench/minute_domains``): a SQL one and a range-aware
PySpark one. Each is materialized as one single-run backfill of the whole range in-process, and raw Spark
reads the same range and writes the same aggregation with ``replaceWhere`` (the floor). Raw and Mesh are timed
alternately ``repeat`` times and compared by their medians, so a busy moment of a shared machine does not land
on one side only. The data is small (a few rows a partition): what is measured is the cost of 8,640 partitions.
A third side, plain Dagster, is the floor any Dagster asset pays for the same range: one asset with the same
partitions doing raw Spark's write, whose single-run backfill records what Mesh's records (one planned event and
one materialization a partition, and one evaluation of its one check a partition). Mesh/plain shows what is
Mesh's own; plain/raw what Dagster's partition bookkeeping costs at this grain.
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
        self.plain = self.plain_assets()
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

    def plain_assets(self) -> list[dg.AssetsDefinition]:
        """The plain Dagster floor: raw Spark's write in an asset partitioned as the products are, recording a
        materialization and a passed check evaluation per partition, as a checked partitioned asset must."""
        key = dg.AssetKey(["minute", "plain_clicks"])
        partitions = next(a for a in self.assets if dg.AssetKey(["minute", "quarter_clicks"]) in a.keys)
        part = partitions.partitions_def
        check = dg.AssetCheckSpec("valid", asset=key, partitions_def=part)

        @dg.multi_asset(
            specs=[dg.AssetSpec(key)],
            check_specs=[check],
            partitions_def=part,
            backfill_policy=dg.BackfillPolicy.single_run(),
            can_subset=True,  # as Mesh's assets: a check's evaluations are logged, not returned as outputs
        )
        def plain_clicks(context):
            keys = context.partition_keys
            self.raw(self.offset(keys[0]), self.offset(keys[-1]), "plain_clicks")
            yield dg.MaterializeResult(asset_key=key)
            for partition in keys:
                context.log_event(
                    dg.AssetCheckEvaluation(asset_key=key, check_name="valid", passed=True, partition=partition)
                )

        return [plain_clicks]

    def offset(self, key: str) -> int:
        return int((GRAIN.parse(key) - START).total_seconds()) // 900

    def materialize(self, table: str, first: int, last: int) -> None:
        if table == "plain_clicks":
            assets, resources = self.plain, {}
        else:
            assets, resources = self.assets, {"mesh": self.mesh}
        dg.materialize(
            assets,
            instance=self.instance,
            resources=resources,
            selection=[dg.AssetKey(["minute", table])],
            tags={
                "dagster/asset_partition_range_start": self.key(first),
                "dagster/asset_partition_range_end": self.key(last),
            },
        )


def _medians(work: MinuteWorkload, tables: list[str], repeat: int) -> dict[str, float]:
    """Median seconds of raw Spark and of each table's single run over the whole range, timed alternately."""
    last = work.count - 1
    runs: dict[str, Callable[[], None]] = {"raw": lambda: work.raw(0, last, "raw_clicks_out")}
    for table in tables:
        runs[table] = lambda table=table: work.materialize(table, 0, last)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            times[name].append(timed(fn))
    return {name: statistics.median(values) for name, values in times.items()}


def run(days: int = 90, rows: int = 4, repeat: int = 3) -> list[Result]:
    work = MinuteWorkload(get_spark(), days, rows)
    work.raw(0, 0, "raw_warmup")
    for table in ("quarter_clicks", "quarter_sums", "plain_clicks"):
        work.materialize(table, 0, 0)
    kinds = {"quarter_clicks": "SQL", "quarter_sums": "PySpark, range-aware"}
    medians = _medians(work, [*kinds, "plain_clicks"], repeat)
    raw, plain = medians["raw"], medians["plain_clicks"]
    span = f"{work.count:,} 15-minute partitions ({days} days), single run"
    notes = f"{rows} rows a partition, median of {repeat}"
    results = [
        Result(
            "minute_backfill",
            f"{span}, {kind}",
            medians[table],
            "raw Spark over the range",
            raw,
            "<= 1.2x raw",
            medians[table] <= 1.2 * raw,
            notes=f"{notes}; plain Dagster's floor {plain:.1f} s: Mesh/plain {medians[table] / plain:.2f}",
        )
        for table, kind in kinds.items()
    ]
    results.append(
        Result(
            "minute_backfill",
            f"{span}, plain Dagster: raw Spark's write in an asset, a materialization and a check evaluation a "
            "partition (the floor)",
            plain,
            "raw Spark over the range",
            raw,
            notes=notes,
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
