"""Readiness at scale: the Delta-log observer's tick over 100 external tables that 500 consumers wait on.

The observer's cost does not depend on consumers (they are served by Dagster's automation from the
reported events), so the case measures a tick with no new commit and with one, against the naive
alternative: polling each table's partitions through Spark, as a sensor per consumer would.
Run alone: ``python -m bench.observer_tick --tables 100``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

from pyspark.sql import functions as F

from bench.common import Result, median_of, print_results
from mesh_assets import get_spark
from mesh_assets.automation.observer import observe
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.product import Contact, DataProduct, ExternalTable
from mesh_assets.storage.tables import TableRegistry


def run(tables: int = 100, days: int = 30) -> list[Result]:
    spark = get_spark()
    registry = TableRegistry(str(Path(tempfile.mkdtemp(prefix="mesh-bench-obs-")) / "warehouse"))
    template = registry.location("ext", "t000")
    for day in range(days):
        (
            spark.range(100)
            .withColumn("p_date", F.date_add(F.lit(date(2024, 1, 1)), F.lit(day)))
            .write.format("delta")
            .mode("append")
            .partitionBy("p_date")
            .save(template)
        )
    for i in range(1, tables):
        shutil.copytree(template, registry.location("ext", f"t{i:03d}"))
    externals = [
        table
        for product in (
            DataProduct(
                domain="ext",
                name=f"p{i:03d}",
                owner="bench@example.com",
                contacts=[Contact(kind="chat", value="#bench")],
                start_date=date(2024, 1, 1),
                external=[ExternalTable(table=f"t{i:03d}")],
            )
            for i in range(tables)
        )
        for table in tables_of(product)
    ]
    _, cursor = observe(externals, registry, {})
    idle = median_of(lambda: observe(externals, registry, cursor), 7)

    def one_commit() -> float:
        (
            spark.range(100)
            .withColumn("p_date", F.lit(date(2024, 2, 1)))
            .write.format("delta")
            .mode("append")
            .partitionBy("p_date")
            .save(registry.location("ext", "t007"))
        )
        start = time.perf_counter()
        events, _ = observe(externals, registry, cursor)
        elapsed = time.perf_counter() - start
        assert [e.partition for e in events] == ["2024-02-01"]
        return elapsed

    with_commit = one_commit()

    def poll() -> None:
        for i in range(tables):
            spark.read.format("delta").load(registry.location("ext", f"t{i:03d}")).select("p_date").distinct().count()

    polling = median_of(poll, 1)
    return [
        Result(
            "readiness",
            f"observer tick, {tables} tables, no new commit",
            idle,
            f"polling {tables} tables' partitions with Spark",
            polling,
            "<= 50 ms",
            idle <= 0.05,
        ),
        Result(
            "readiness",
            f"observer tick, {tables} tables, one new commit",
            with_commit,
            "observer tick without commits",
            idle,
            "grows with new commits only",
            None,
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=100)
    args = parser.parse_args()
    print_results(run(args.tables))
