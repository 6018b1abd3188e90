"""Kind ``merge``: 1 % of the keys of a large table changed, published by Mesh versus a raw Delta ``MERGE``.

Mesh is the publisher of a run (:func:`mesh_assets.run.publish.publish`): the rows staged, audited (the
``unique_key`` check the kind implies, blocking) and merged by the kind's strategy in one commit. The baseline
is the ``MERGE`` a user would write for the same rows into a copy of the same table (same files, same
properties: deletion vectors on): ``WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``. Each
round changes other keys (``id % 100 == round``), the two alternate, and the median of the rounds is kept.
Peak memory (the JVM's heap and resident set: one JVM is driver and executor) is measured beside each.
Run alone: ``python -m bench.kind_merge --rows 20000000 --rounds 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import uuid
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import Result, print_results
from bench.spark_metrics import POLLING, Measured, describe, measured
from mesh_assets import MeshResource, get_spark
from mesh_assets.dbt.project import scoped_environ
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.run.publish import publish
from mesh_assets.settings import get_settings
from mesh_assets.storage.schema import ADDITIVE
from mesh_assets.storage.strategies.merging import KEYED_PROPERTIES

DOMAINS = Path(__file__).resolve().parent / "kind_domains"
CHANGED = 100
"""One key in ``CHANGED`` is changed by a round: 1 %."""


def table_rows(spark: SparkSession, rows: int) -> DataFrame:
    return spark.range(0, rows, 1, max(2, rows // 1_000_000)).select(
        "id",
        (F.col("id") % 1_000).alias("v"),
        F.concat(F.lit("customer-"), (F.col("id") % 100_003).cast("string")).alias("name"),
        (F.col("id") * 31 % 5_000 / 100).cast("decimal(10,2)").alias("amount"),
    )


def changes(spark: SparkSession, rows: int, round_: int) -> DataFrame:
    """1 % of the keys with a new ``v`` (each round other keys), as a run would compute them."""
    return table_rows(spark, rows).where(F.col("id") % CHANGED == round_).withColumn("v", F.col("v") + 1 + round_)


def landed(spark: SparkSession, rows: int, round_: int, location: str) -> DataFrame:
    """The round's changes as a run reads its input: landed in a Delta table first (untimed), so neither side's
    plan holds the generator's ``id % 100`` filter. Given the generator's plan, Spark would infer that filter on
    the target's keys through the raw ``MERGE``'s join (its source is not staged) and read 1 % of the table,
    which no ``MERGE`` of real input can do."""
    changes(spark, rows, round_).write.format("delta").mode("overwrite").save(location)
    return spark.read.format("delta").load(location)


def raw_merge(spark: SparkSession, rows: DataFrame, location: str) -> None:
    view = f"bench_changes_{uuid.uuid4().hex[:8]}"
    rows.createOrReplaceTempView(view)
    spark.sql(
        f"MERGE INTO delta.`{location}` AS t USING {view} AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.catalog.dropTempView(view)


def run(rows: int = 20_000_000, rounds: int = 3) -> list[Result]:
    conf = {**json.loads(os.environ.get("MESH_SPARK__CONF", "{}")), **POLLING}
    with scoped_environ({"MESH_SPARK__CONF": json.dumps(conf)}):
        get_settings.cache_clear()
        try:
            return _run(rows, rounds)
        finally:
            get_settings.cache_clear()


def _run(rows: int, rounds: int) -> list[Result]:
    spark = get_spark()
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-merge-"))
    mesh = MeshResource(warehouse=str(base / "warehouse"))
    node = MeshGraph(load_all(DOMAINS)).node("bm", "state")
    mine, raw = mesh.registry.location("bm", "state"), str(base / "raw")
    try:
        table_rows(spark, rows).write.format("delta").options(**KEYED_PROPERTIES).save(mine)
        shutil.copytree(mine, raw)
        timings: dict[str, list[Measured]] = {"mesh": [], "raw": []}
        for round_ in range(rounds + 1):  # the first round warms both paths (first reads, first plans)
            source = landed(spark, rows, round_, str(base / f"changes-{round_}"))
            with measured(spark) as m:
                published = publish(
                    spark,
                    mesh.registry,
                    node,
                    source,
                    None,
                    {},
                    run_id=f"bench-{round_}",
                    schema=ADDITIVE,
                )
            assert published.result is not None and published.result.changes["updated"] == rows // CHANGED
            timings["mesh"].append(m)
            with measured(spark) as m:
                raw_merge(spark, source, raw)
            timings["raw"].append(m)
        same = spark.read.format("delta").load(mine).exceptAll(spark.read.format("delta").load(raw)).isEmpty()
        assert same, "Mesh's table and the raw MERGE's differ"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    timings = {path: kept[1:] for path, kept in timings.items()}
    ours = statistics.median(m.seconds for m in timings["mesh"])
    theirs = statistics.median(m.seconds for m in timings["raw"])
    peak = lambda ms: {k: max(m.peaks.get(k, 0.0) for m in ms) for k in ms[0].peaks}  # noqa: E731
    return [
        Result(
            "kind_merge",
            f"merge 1% changed keys into {rows:,} rows (stage, audit unique_key, MERGE)",
            ours,
            "raw Delta MERGE of the same rows",
            theirs,
            "<= 1.10x raw",
            ours <= 1.10 * theirs,
            notes=f"Mesh peak {describe(peak(timings['mesh']))}; raw peak {describe(peak(timings['raw']))}",
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_results(run(args.rows, args.rounds))
