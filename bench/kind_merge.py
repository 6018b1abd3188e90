"""Kind ``merge``: 1 % of the keys of a large table changed, published by Mesh versus a raw Delta ``MERGE``.

Mesh is the publisher of a run (:func:`mesh_assets.run.publish.publish`): the rows staged, audited (the
``unique_key`` check the kind implies, blocking) and merged by the kind's strategy in one commit. The baseline
is the ``MERGE`` a user would write for the same effect into a copy of the same table (same files, same
properties: deletion vectors on): a matched row updated only where a value differs, so that equal rows are
not rewritten and a re-run of the same input commits nothing, as the kind promises
(``WHEN MATCHED AND NOT (t.v <=> s.v AND ...) THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``). Beside it,
the ``MERGE`` that updates every match (``WHEN MATCHED THEN UPDATE SET *``): cheaper, as it reads only the
table's keys, but it rewrites equal rows and commits again on a re-run. Each round changes other keys
(``id % 100 == round``), the three take turns, and the median of the rounds is kept.
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
    landed = spark.read.format("delta").load(location)
    landed.count()  # its log's state computed once, untimed: else the side that reads it first pays for both
    return landed


def raw_merge(spark: SparkSession, rows: DataFrame, location: str, only_differing: bool = True) -> None:
    """The hand-written ``MERGE``; ``only_differing``: a matched row is updated only where a value differs."""
    view = f"bench_changes_{uuid.uuid4().hex[:8]}"
    rows.createOrReplaceTempView(view)
    values = [c for c in rows.columns if c != "id"]
    differs = f" AND NOT ({' AND '.join(f't.{c} <=> s.{c}' for c in values)})" if only_differing else ""
    spark.sql(
        f"MERGE INTO delta.`{location}` AS t USING {view} AS s ON t.id = s.id "
        f"WHEN MATCHED{differs} THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
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
    mine, raw, every = mesh.registry.location("bm", "state"), str(base / "raw"), str(base / "every")
    try:
        table_rows(spark, rows).write.format("delta").options(**KEYED_PROPERTIES).save(mine)
        shutil.copytree(mine, raw)
        shutil.copytree(mine, every)
        timings: dict[str, list[Measured]] = {"mesh": [], "raw": [], "every": []}
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
            with measured(spark) as m:
                raw_merge(spark, source, every, only_differing=False)
            timings["every"].append(m)
        ours_read = spark.read.format("delta").load(mine)
        for other in (raw, every):
            same = ours_read.exceptAll(spark.read.format("delta").load(other)).isEmpty()
            assert same, f"Mesh's table and the raw MERGE's at {other} differ"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    timings = {path: kept[1:] for path, kept in timings.items()}
    median = {path: statistics.median(m.seconds for m in kept) for path, kept in timings.items()}
    peak = lambda ms: {k: max(m.peaks.get(k, 0.0) for m in ms) for k in ms[0].peaks}  # noqa: E731
    case = f"merge 1% changed keys into {rows:,} rows (stage, audit unique_key, MERGE)"
    return [
        Result(
            "kind_merge",
            case,
            median["mesh"],
            "raw Delta MERGE of the same rows, updating a match only where a value differs",
            median["raw"],
            "<= 1.10x raw",
            median["mesh"] <= 1.10 * median["raw"],
            notes=f"Mesh peak {describe(peak(timings['mesh']))}; raw peak {describe(peak(timings['raw']))}",
        ),
        Result(
            "kind_merge",
            case,
            median["mesh"],
            "raw Delta MERGE updating every match (equal rows rewritten, a re-run commits again)",
            median["every"],
            notes=f"raw peak {describe(peak(timings['every']))}",
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_results(run(args.rows, args.rounds))
