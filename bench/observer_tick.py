"""Readiness at scale: the Delta-log observer's tick over 100 external tables that 500 consumers wait on.

The observer's cost does not depend on consumers (they are served by Dagster's automation from the
reported events), so the case measures a tick with no new commit and with 1, 10 and 100 new commits (one per
table, landed by delta-rs as an outside writer would), through the sensor itself (its cursor, its instance's
earlier reports, its events), against the naive alternative: polling each table's partitions through Spark, as
a sensor per consumer would. A tick's cost must grow with the new commits only, not with the tables or their
history. Run alone: ``python -m bench.observer_tick --tables 100``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import dagster as dg
import pyarrow as pa
from deltalake import write_deltalake
from pyspark.sql import functions as F

from bench.common import Result, median_of, print_results
from mesh_assets import MeshResource, get_spark
from mesh_assets.automation.observer import build_observer
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.product import Contact, DataProduct, ExternalTable
from mesh_assets.settings import get_settings

NEW_COMMITS = (1, 10, 100)


def run(tables: int = 100, days: int = 30) -> list[Result]:
    spark = get_spark()
    mesh = MeshResource(warehouse=str(Path(tempfile.mkdtemp(prefix="mesh-bench-obs-")) / "warehouse"))
    registry = mesh.registry
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
    sensor = build_observer("ext", externals, get_settings().automation)
    assert sensor is not None
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> dg.SensorResult:
        with dg.build_sensor_context(instance=instance, cursor=cursor, resources={"mesh": mesh}) as context:
            return sensor(context)

    first = tick(None)  # every table's 30 days, kept by the instance as the daemon keeps a sensor's events
    for event in first.asset_events:
        instance.report_runless_asset_event(event)
    cursor = first.cursor
    idle = median_of(lambda: tick(cursor), 7)

    per_commit: dict[int, float] = {}
    seconds: dict[int, float] = {}
    for n in NEW_COMMITS:
        day = date(2024, 2, 1 + NEW_COMMITS.index(n))
        for i in range(n):  # one new commit in each of n tables
            batch = pa.table({"id": pa.array([1, 2], pa.int64()), "p_date": pa.array([day, day], pa.date32())})
            write_deltalake(registry.location("ext", f"t{i % tables:03d}"), batch, mode="append")
        times = []
        for _ in range(5):  # the same tick again: it reads the same new commits from the same cursor
            start = time.perf_counter()
            result = tick(cursor)
            times.append(time.perf_counter() - start)
        assert len(result.asset_events) == min(n, tables), [e.partition for e in result.asset_events]
        seconds[n] = statistics.median(times)
        per_commit[n] = (seconds[n] - idle) / n
        cursor = result.cursor
        for event in result.asset_events:
            instance.report_runless_asset_event(event)
    assert json.loads(cursor)  # the cursor stays one small entry per table

    def poll() -> None:
        for i in range(tables):
            spark.read.format("delta").load(registry.location("ext", f"t{i:03d}")).select("p_date").distinct().count()

    polling = median_of(poll, 1)
    results = [
        Result(
            "readiness",
            f"observer tick, {tables} tables, no new commit",
            idle,
            f"polling {tables} tables' partitions with Spark",
            polling,
            "<= 50 ms",
            idle <= 0.05,
        )
    ]
    for n in NEW_COMMITS:
        grows = None if n == NEW_COMMITS[0] else per_commit[n] <= 2 * per_commit[NEW_COMMITS[0]]
        results.append(
            Result(
                "readiness",
                f"observer tick, {tables} tables, {n} new commit{'s' if n > 1 else ''}",
                seconds[n],
                "observer tick without commits",
                idle,
                "grows with new commits only (per commit <= 2x one commit's)",
                grows,
                notes=f"{per_commit[n] * 1000:.1f} ms per new commit",
            )
        )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=100)
    args = parser.parse_args()
    print_results(run(args.tables))
