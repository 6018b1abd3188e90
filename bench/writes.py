"""Writes: replacing one partition (Mesh's write) versus appending it, on a 365-partition Delta table.

Measured on a fresh table and again after 100 more commits, to show that the partition-replacing write
does not degrade with the log, and for a small and a large written partition: a replace pays a fixed cost
(it must read which files the partition has; an append is blind) that larger partitions amortise.
Run alone: ``python -m bench.writes --partitions 365 --commits 100 --written-rows 2000 200000``.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import date, timedelta
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from bench.common import Result, median_of, print_results
from mesh_assets import get_spark
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.storage.writer import replace_predicate

START = date(2024, 1, 1)


def run(
    partitions: int = 365,
    commits: int = 100,
    rows_per_day: int = 2_000,
    written_rows: tuple[int, ...] = (2_000, 200_000),
) -> list[Result]:
    spark = get_spark()
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-writes-"))
    table = str(base / "t")
    rows = (
        spark.range(partitions * rows_per_day)
        .withColumn("p_date", F.date_add(F.lit(START), (F.col("id") / rows_per_day).cast("int")))
        .withColumn("v", F.col("id") % 13)
    )
    rows.write.format("delta").partitionBy("p_date").save(table)
    day = START + timedelta(days=partitions // 2)
    rng = PartitionRange.from_keys(Grain.DAILY, day.isoformat(), day.isoformat())
    frames = {
        n: spark.range(n).withColumn("p_date", F.lit(day)).withColumn("v", F.col("id") % 13).cache()
        for n in written_rows
    }
    for frame in frames.values():
        frame.count()

    def overwrite(frame: DataFrame) -> None:
        (
            frame.write.format("delta")
            .mode("overwrite")
            .partitionBy("p_date")
            .option("replaceWhere", replace_predicate("p_date", rng))
            .save(table)
        )

    def append(frame: DataFrame) -> None:
        frame.write.format("delta").mode("append").partitionBy("p_date").save(table)

    results = []
    for label in ("fresh", f"after {commits} commits"):
        if label != "fresh":
            for _ in range(commits):
                overwrite(frames[written_rows[0]])
        for n, frame in frames.items():
            ow, ap = median_of(lambda f=frame: overwrite(f)), median_of(lambda f=frame: append(f))
            results.append(
                Result(
                    "writes",
                    f"replace 1 of {partitions} partitions ({n:,} rows), {label}",
                    ow,
                    "append the same partition",
                    ap,
                    "<= 1.3x append",
                    ow <= 1.3 * ap,
                )
            )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=365)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--written-rows", type=int, nargs="+", default=[2_000, 200_000])
    args = parser.parse_args()
    print_results(run(args.partitions, args.commits, written_rows=tuple(args.written_rows)))
