"""Kind ``changes``: applying a change feed of 1 million events with Mesh's strategy versus the same ``MERGE``
written by hand.

The table holds ``keys`` customers (each at sequence 0); the feed holds ``events`` events over them and as many
new keys: updates (several per key, out of order), inserts, deletes and late events older than the table's.
Mesh: the staged events committed by :class:`~mesh_assets.storage.strategies.changes.ApplyChanges` (SCD type 1:
its tombstones ``MERGE`` then the table's; type 2: one ``MERGE``), given the rows' count as a run's audit does.
Raw: the same statements in hand-written SQL. Each measurement starts from a copy of the same table, made before
its clock starts.
Run alone: ``python -m bench.kind_changes --events 1000000 --keys 1000000 --repeat 3``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import Result, print_results, timed
from mesh_assets import get_spark
from mesh_assets.model.kinds import Changes
from mesh_assets.settings import S3Settings
from mesh_assets.storage.strategies.changes import ApplyChanges, tombstones_location
from mesh_assets.storage.strategies.target import Target

KIND = {"unique_key": "id", "sequence_by": "seq", "delete": "op = 'D'", "except_columns": ["op"]}


def feed(spark: SparkSession, events: int, keys: int) -> DataFrame:
    """``events`` events: ids spread over twice the table's keys (half new), 10 % deletes, 10 % late (seq < 0)."""
    rows = spark.range(events).select(
        ((F.col("id") * 7919) % (2 * keys)).alias("id"),
        F.when(F.col("id") % 10 == 0, F.lit("D")).otherwise(F.lit("U")).alias("op"),
        F.when(F.col("id") % 10 == 1, -F.col("id") - 1).otherwise(F.col("id") + 1).alias("seq"),
        F.concat(F.lit("name "), F.col("id").cast("string")).alias("name"),
        (F.col("id") % 1000).alias("score"),
    )
    return rows


def table(spark: SparkSession, keys: int) -> DataFrame:
    return spark.range(keys).select(
        "id",
        F.lit(0).cast("long").alias("seq"),
        F.concat(F.lit("first "), F.col("id").cast("string")).alias("name"),
        (F.col("id") % 1000).alias("score"),
    )


def raw_scd1(spark: SparkSession, events: DataFrame, location: str) -> None:
    """The SCD type 1 statements by hand: latest event per key, deletes into the tombstones, then the table."""
    events.createOrReplaceTempView("raw_events")
    spark.sql(
        "CREATE OR REPLACE TEMP VIEW raw_latest AS SELECT id, seq, name, score, op = 'D' AS is_delete FROM ("
        "SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) AS r FROM raw_events) WHERE r = 1"
    )
    tombs = tombstones_location(location)
    spark.sql(
        f"MERGE INTO delta.`{tombs}` t USING (SELECT id, seq FROM raw_latest WHERE is_delete) s ON t.id <=> s.id "
        "WHEN MATCHED AND s.seq > t.seq THEN UPDATE SET t.seq = s.seq WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(
        f"MERGE INTO delta.`{location}` t USING (SELECT l.* FROM raw_latest l LEFT JOIN delta.`{tombs}` d "
        "ON l.id <=> d.id WHERE d.seq IS NULL OR l.seq > d.seq OR (l.is_delete AND l.seq >= d.seq)) s "
        "ON t.id <=> s.id "
        "WHEN MATCHED AND s.is_delete AND s.seq > t.seq THEN DELETE "
        "WHEN MATCHED AND NOT s.is_delete AND s.seq > t.seq THEN UPDATE SET t.id = s.id, t.seq = s.seq, "
        "t.name = s.name, t.score = s.score "
        "WHEN NOT MATCHED AND NOT s.is_delete THEN INSERT (id, seq, name, score) VALUES (s.id, s.seq, s.name, s.score)"
    )


def raw_scd2(spark: SparkSession, events: DataFrame, location: str) -> None:
    """The SCD type 2 statement by hand: events newer than the key's held sequence, as versions, and closes."""
    events.createOrReplaceTempView("raw_events")
    spark.sql(
        "CREATE OR REPLACE TEMP VIEW raw_new AS SELECT e.id, e.seq, e.name, e.score, e.op = 'D' AS is_delete "
        "FROM raw_events e LEFT JOIN (SELECT id, max(coalesce(valid_to, valid_from)) AS held "
        f"FROM delta.`{location}` GROUP BY id) h ON e.id <=> h.id WHERE h.held IS NULL OR e.seq > h.held"
    )
    spark.sql(
        "CREATE OR REPLACE TEMP VIEW raw_source AS "
        "SELECT id, seq, name, score, seq AS valid_from, valid_to, valid_to IS NULL AS is_current, false AS close "
        "FROM (SELECT *, lead(seq) OVER (PARTITION BY id ORDER BY seq) AS valid_to FROM raw_new) WHERE NOT is_delete "
        "UNION ALL SELECT id, NULL, NULL, NULL, NULL, min(seq), NULL, true FROM raw_new GROUP BY id"
    )
    spark.sql(
        f"MERGE INTO delta.`{location}` t USING raw_source s ON t.id <=> s.id AND t.is_current AND s.close "
        "WHEN MATCHED THEN UPDATE SET t.valid_to = s.valid_to, t.is_current = false "
        "WHEN NOT MATCHED AND NOT s.close THEN INSERT (id, seq, name, score, valid_from, valid_to, is_current) "
        "VALUES (s.id, s.seq, s.name, s.score, s.valid_from, s.valid_to, s.is_current)"
    )


def run(
    events: int = 1_000_000, keys: int = 1_000_000, repeat: int = 3, scd_types: tuple[int, ...] = (1, 2)
) -> list[Result]:
    spark = get_spark()
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-changes-"))
    results = []
    for scd in scd_types:
        kind = Changes(**KIND, scd_type=scd)
        strategy = ApplyChanges(kind)
        seed = str(base / f"seed{scd}")
        start = table(spark, keys).withColumn("op", F.lit("I"))
        target = Target(seed, "bench.customers", S3Settings(), commit_info={"run": "seed"})
        strategy.commit(spark, start.select("op", "id", "seq", "name", "score"), target)
        if scd == 1:  # a tombstones table to merge into, as after a first run with deletes
            spark.createDataFrame([(-1, -1)], "id long, seq long").write.format("delta").save(tombstones_location(seed))
        staged = feed(spark, events, keys).cache()
        staged.count()
        mesh_times, raw_times = [], []
        for i in range(repeat):
            for who in ("mesh", "raw"):
                location = str(base / f"{who}{scd}-{i}")
                shutil.copytree(seed, location)
                if who == "mesh":
                    target = Target(  # with the rows' count, as the audit gives it to the commit in a run
                        location, "bench.customers", S3Settings(), commit_info={"run": f"{i}"}, counts={"*": events}
                    )
                    mesh_times.append(timed(lambda t=target, s=strategy, e=staged: s.commit(spark, e, t)))
                else:
                    apply = raw_scd1 if scd == 1 else raw_scd2
                    raw_times.append(timed(lambda loc=location, f=apply, e=staged: f(spark, e, loc)))
                if i == 0 and who == "raw":
                    mine = spark.read.format("delta").load(str(base / f"mesh{scd}-0")).drop("p_date")
                    theirs = spark.read.format("delta").load(location)
                    assert mine.exceptAll(theirs).isEmpty() and theirs.exceptAll(mine).isEmpty(), "different rows"
        mesh, raw = statistics.median(mesh_times), statistics.median(raw_times)
        results.append(
            Result(
                "kind changes",
                f"apply {events:,} events to {keys:,} keys, SCD type {scd} (median of {repeat})",
                mesh,
                "the same MERGE by hand",
                raw,
                "Mesh/raw <= 1.10",
                mesh <= 1.10 * raw,
            )
        )
        staged.unpersist()
    shutil.rmtree(base, ignore_errors=True)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scd", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print_results(run(args.events, args.keys, args.repeat, tuple(args.scd)))
