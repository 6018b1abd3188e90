"""History (SCD type 2): a day's snapshot of N keys, 1 % of them changed, applied by Mesh's ``history`` commit
versus the same SCD2 ``MERGE`` written by hand, on two copies of one table.

Both tables start as the same first day (N current versions). Each round lands the next day's snapshot (every
key, 1 % with a later ``updated_at`` and a new zone) and applies it to both tables, Mesh's and the raw one, in
alternating order; the median of the rounds is compared. Mesh's commit is the whole strategy
(:class:`mesh_assets.storage.strategies.history.KeepHistory`): it finds the latest applied partition in the log,
runs its ``MERGE`` and finds its commit in the log. Spark's memory peaks during Mesh's rounds stand beside it.
Run alone: ``python -m bench.history --keys 5000000 --rounds 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from datetime import date, timedelta
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import Result, print_results
from bench.spark_metrics import POLLING, describe, measured
from mesh_assets import History, get_spark
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import get_settings, scoped_environ
from mesh_assets.storage.strategies import Target, strategy_for

START = date(2024, 1, 1)
KIND = History(unique_key="courier_id", updated_at="updated_at")


def snapshot(spark: SparkSession, keys: int, day: int, changed: float) -> DataFrame:
    """Day ``day``'s state of every key: the keys of bucket ``day`` (one ``changed`` share of them) move that
    day (a new zone and a later ``updated_at``); the others keep the state of the last day they moved."""
    buckets = round(1 / changed)
    bucket = F.floor(F.col("courier_id") / 7) % buckets
    last = F.when((bucket >= 1) & (bucket <= day), bucket).otherwise(0)
    return (
        spark.range(keys)
        .withColumnRenamed("id", "courier_id")
        .withColumn("zone", F.concat(F.lit("zone-"), (F.col("courier_id") % 97 + last).cast("string")))
        .withColumn("updated_at", F.timestamp_seconds(F.lit(1_700_000_000) + last * 86_400))
        .withColumn("p_date", F.lit(START + timedelta(days=day)))
    )


def raw_merge(table: str, view: str, day: date) -> str:
    """The SCD2 ``MERGE`` by hand: changed rows twice (the second copy, with no merge key, inserts the new
    version), unmatched current rows closed at the day's start."""
    return f"""
MERGE INTO delta.`{table}` AS t USING (
  SELECT s.courier_id AS merge_key, s.* FROM {view} AS s
  UNION ALL
  SELECT NULL AS merge_key, s.* FROM {view} AS s JOIN delta.`{table}` AS c
    ON c.courier_id = s.courier_id AND c.is_current WHERE s.updated_at > c.updated_at
) AS s
ON t.courier_id = s.merge_key AND t.is_current
WHEN MATCHED AND s.updated_at > t.updated_at THEN UPDATE SET valid_to = s.updated_at, is_current = false
WHEN NOT MATCHED THEN INSERT (courier_id, zone, updated_at, p_date, valid_from, valid_to, is_current)
  VALUES (s.courier_id, s.zone, s.updated_at, DATE'{day}', s.updated_at, NULL, true)
WHEN NOT MATCHED BY SOURCE AND t.is_current THEN UPDATE SET
  valid_to = greatest(TIMESTAMP'{day} 00:00:00+00:00', t.valid_from), is_current = false
"""


def run(keys: int = 5_000_000, rounds: int = 3, changed: float = 0.01) -> list[Result]:
    conf = {**json.loads(os.environ.get("MESH_SPARK__CONF", "{}")), **POLLING}
    with scoped_environ({"MESH_SPARK__CONF": json.dumps(conf)}):
        get_settings.cache_clear()
        try:
            return _run(keys, rounds, changed)
        finally:
            get_settings.cache_clear()


def _run(keys: int, rounds: int, changed: float) -> list[Result]:
    spark = get_spark()
    s3 = get_settings().s3
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-history-"))
    mesh_table, raw_table = str(base / "mesh"), str(base / "raw")
    strategy = strategy_for(KIND)

    def target(location: str, day: int) -> Target:
        value = START + timedelta(days=day)
        part = PartitionRange.from_keys(Grain.DAILY, value.isoformat(), value.isoformat())
        return Target(
            location,
            "bench.couriers",
            s3,
            "p_date",
            part,
            commit_info={"bench": f"{location}-{day}"},
            counts={value.isoformat(): keys},
        )

    first = snapshot(spark, keys, 0, changed).cache()
    first.count()
    strategy.commit(spark, first, target(mesh_table, 0))
    spark.read.format("delta").load(mesh_table).write.format("delta").options(
        **{"delta.enableDeletionVectors": "true"}
    ).save(raw_table)
    first.unpersist()

    mesh_seconds, raw_seconds, peaks = [], [], {}
    for day in range(1, rounds + 1):
        rows = snapshot(spark, keys, day, changed).cache()  # staged, as Mesh's audit leaves it
        rows.count()

        def mesh(rows: DataFrame = rows, day: int = day) -> None:
            with measured(spark) as m:
                result = strategy.commit(spark, rows, target(mesh_table, day))
            assert result.committed
            mesh_seconds.append(m.seconds)
            for name, value in m.peaks.items():
                peaks[name] = max(peaks.get(name, 0.0), value)

        def raw(rows: DataFrame = rows, day: int = day) -> None:
            view = f"bench_history_{day}"
            rows.createOrReplaceTempView(view)
            with measured(spark) as m:
                spark.sql(raw_merge(raw_table, view, START + timedelta(days=day)))
            raw_seconds.append(m.seconds)

        for step in (mesh, raw) if day % 2 else (raw, mesh):
            step()
        rows.unpersist()
    same = spark.read.format("delta").load(mesh_table).exceptAll(spark.read.format("delta").load(raw_table)).isEmpty()
    ours, theirs = statistics.median(mesh_seconds), statistics.median(raw_seconds)
    return [
        Result(
            "history",
            f"SCD2 of {keys:,} keys, {changed:.0%} changed per day (median of {rounds} days)",
            ours,
            "the same SCD2 MERGE by hand",
            theirs,
            "<= 1.10x raw",
            ours <= 1.10 * theirs and same,
            notes=f"Mesh's peaks: {describe(peaks)}; tables identical: {'yes' if same else 'NO'}",
            extra={f"peak {k} MiB": v for k, v in peaks.items()},
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_results(run(args.keys, args.rounds))


if __name__ == "__main__":
    main()
