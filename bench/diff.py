"""``mesh diff``'s core against a raw Spark full outer join: two partitions of ``rows`` rows each, 1 % of the keys
changed, 0.1 % removed and as many added on the right.

Mesh is :func:`mesh_assets.datadiff.diff_tables` on the key ``id`` and the partition: every count, per-column
changes, schema differences and up to three example keys per difference, in one join and one aggregation. The
baseline is what a user would write by hand for the same question: the full outer join of the two partitions on
``id`` and one aggregation counting keys only on each side and keys with any column changed. The first round warms
both paths; the median of the others is kept.
Run alone: ``python -m bench.diff --rows 10000000 --rounds 2``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import Result, print_results
from mesh_assets import get_spark
from mesh_assets.datadiff import PartitionSpan, diff_tables

DAY = "2021-06-03"
COLUMNS = ("v", "name", "amount")


def rows_of(spark: SparkSession, rows: int, changed: bool) -> DataFrame:
    ids = spark.range(0, rows, 1, max(2, rows // 1_000_000))
    if changed:  # 0.1 % removed, as many added past the end, 1 % with a new v
        ids = ids.where(F.col("id") % 1000 != 7).unionByName(spark.range(rows, rows + rows // 1000))
    df = ids.select(
        "id",
        (F.col("id") % 1_000).alias("v"),
        F.concat(F.lit("customer-"), (F.col("id") % 100_003).cast("string")).alias("name"),
        (F.col("id") * 31 % 5_000 / 100).cast("decimal(10,2)").alias("amount"),
        F.lit(DAY).cast("date").alias("p_date"),
    )
    return (
        df.withColumn("v", F.col("v") + 1)
        if not changed
        else df.withColumn("v", F.when(F.col("id") % 100 == 3, F.col("v") + 2).otherwise(F.col("v") + 1))
    )


def raw_join(spark: SparkSession, left: str, right: str) -> dict:
    lf = spark.read.format("delta").load(left).where(F.col("p_date") == DAY).alias("l")
    rf = spark.read.format("delta").load(right).where(F.col("p_date") == DAY).alias("r")
    joined = lf.join(rf, F.col("l.id") == F.col("r.id"), "full_outer")
    differs = F.lit(False)
    for c in COLUMNS:
        differs = differs | ~F.col(f"l.{c}").eqNullSafe(F.col(f"r.{c}"))
    return (
        joined.agg(
            F.count_if(F.col("r.id").isNull()).alias("only_left"),
            F.count_if(F.col("l.id").isNull()).alias("only_right"),
            F.count_if(F.col("l.id").isNotNull() & F.col("r.id").isNotNull() & differs).alias("changed"),
        )
        .collect()[0]
        .asDict()
    )


def run(rows: int = 10_000_000, rounds: int = 2) -> list[Result]:
    spark = get_spark()
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-diff-"))
    left, right = str(base / "left"), str(base / "right")
    try:
        rows_of(spark, rows, False).write.format("delta").partitionBy("p_date").save(left)
        rows_of(spark, rows, True).write.format("delta").partitionBy("p_date").save(right)
        span = PartitionSpan("p_date", DAY, DAY)
        ours, theirs = [], []
        for _ in range(rounds + 1):
            started = time.perf_counter()
            d = diff_tables(spark, left, right, ["id"], span)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            counted = raw_join(spark, left, right)
            theirs.append(time.perf_counter() - started)
            assert (d.only_left, d.only_right, d.changed) == (
                counted["only_left"],
                counted["only_right"],
                counted["changed"],
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    mine, raw = statistics.median(ours[1:]), statistics.median(theirs[1:])
    return [
        Result(
            "diff",
            f"diff two {rows:,}-row partitions on id (1% changed, 0.1% removed/added; counts, per column, examples)",
            mine,
            "raw Spark full outer join on id + count aggregation",
            raw,
            "<= 1.5x raw",
            mine <= 1.5 * raw,
            notes=f"only_left {d.only_left:,}, only_right {d.only_right:,}, changed {d.changed:,}",
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print_results(run(args.rows, args.rounds))
