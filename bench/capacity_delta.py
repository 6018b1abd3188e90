"""Capacity of the Delta side: the observer's tick per watched table and per new commit, and a table's log growth.

The observer (mesh_assets/automation/observer.py) is ticked through the sensor itself, as
bench/observer_tick.py ticks it, against external tables written by delta-rs as an outside writer would:
(1) a tick with no new commit over 1, 10 and 100 watched tables, the cost a domain pays every interval for
each table it watches; (2) a tick over 100 tables after 10, 100 and 1,000 new commits (spread over the
tables), the cost per commit. A table's ``_delta_log`` is then grown by daily replaces of one partition
(delta-rs ``overwrite`` with a predicate, as Mesh's ``replaceWhere`` write: one commit per day, a checkpoint
every 10 commits, as Spark's default ``checkpointInterval``) to 30, 365 and 1,095 commits, and at each size
its bytes (JSON commits and checkpoints apart) and the time to read its latest snapshot with deltalake (the
observer's first tick, ``mesh`` commands) are measured. Nothing here starts Spark or a JVM.
Run alone: ``python -m bench.capacity_delta``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bench.common import Result, median_of, print_results
from mesh_assets import MeshResource
from mesh_assets.automation.observer import build_observer
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.product import Contact, DataProduct, ExternalTable
from mesh_assets.settings import get_settings

WATCHED = (1, 10, 100, 1000)
NEW_COMMITS = (10, 100, 1000)
LOG_COMMITS = (30, 365, 1095)
CHECKPOINT_INTERVAL = 10
START = date(2024, 1, 1)


def _day(day: date, rows: int = 2) -> pa.Table:
    return pa.table({"id": pa.array(range(rows), pa.int64()), "p_date": pa.array([day] * rows, pa.date32())})


def _observer(mesh: MeshResource, tables: int, keep_reports: bool = True):
    """The observer of domain ``ext`` over ``tables`` external tables, each with 30 days already written and
    observed once. ``keep_reports``: the first tick's reports kept by the instance, as the daemon keeps them (a
    later tick reads them only for the row counts of partitions that change)."""
    template = mesh.registry.location("ext", "t000")
    for d in range(30):
        write_deltalake(template, _day(START + timedelta(d)), mode="append", partition_by=["p_date"])
    for i in range(1, tables):  # the same history in every table, copied as bench/observer_tick.py copies it
        shutil.copytree(template, mesh.registry.location("ext", f"t{i:03d}"))
    products = [
        DataProduct(
            domain="ext",
            name=f"p{i:03d}",
            owner="bench@example.com",
            contacts=[Contact(kind="chat", value="#bench")],
            start_date=START,
            external=[ExternalTable(table=f"t{i:03d}")],
        )
        for i in range(tables)
    ]
    sensor = build_observer("ext", [t for p in products for t in tables_of(p)], get_settings().automation)
    assert sensor is not None
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor: str | None) -> dg.SensorResult:
        with dg.build_sensor_context(instance=instance, cursor=cursor, resources={"mesh": mesh}) as context:
            result = sensor(context)
        return result

    first = tick(None)
    for event in first.asset_events if keep_reports else ():
        instance.report_runless_asset_event(event)
    return tick, first.cursor, instance


def _mesh() -> MeshResource:
    return MeshResource(warehouse=str(Path(tempfile.mkdtemp(prefix="mesh-bench-capd-")) / "warehouse"))


def _marginal(idle: dict[int, float], n: int) -> float:
    """Seconds each watched table adds to a tick, beyond the one-table tick (the sensor's fixed cost)."""
    return (idle[n] - idle[WATCHED[0]]) / (n - 1) if n > 1 else idle[n]


def per_table() -> list[Result]:
    idle: dict[int, float] = {}
    for n in WATCHED:
        tick, cursor, _ = _observer(_mesh(), n, keep_reports=False)  # no commit: nothing to count
        idle[n] = median_of(lambda tick=tick, cursor=cursor: tick(cursor), 7)
    return [
        Result(
            "capacity",
            f"observer tick, {n} watched table{'s' if n > 1 else ''}, no new commit",
            idle[n],
            f"the same with {WATCHED[0]} table",
            idle[WATCHED[0]],
            notes=f"{_marginal(idle, n) * 1000:.3f} ms per table beyond the first" if n > 1 else "a tick's fixed cost",
            extra={"ms per table": _marginal(idle, n) * 1000},
        )
        for n in WATCHED
    ]


def per_commit(tables: int = 100) -> list[Result]:
    mesh = _mesh()
    tick, cursor, instance = _observer(mesh, tables)
    idle = median_of(lambda: tick(cursor), 7)
    results = []
    for k, n in enumerate(NEW_COMMITS):
        for i in range(n):  # n new commits spread over the tables, each a new day of one table
            day = START + timedelta(days=40 + 40 * k + i // tables)
            write_deltalake(mesh.registry.location("ext", f"t{i % tables:03d}"), _day(day), mode="append")
        times = []
        for _ in range(3):  # the same tick again from the same cursor: it reads the same new commits
            start = time.perf_counter()
            result = tick(cursor)
            times.append(time.perf_counter() - start)
        reported = [e for e in result.asset_events if isinstance(e, dg.AssetMaterialization)]
        assert len(reported) == n, len(reported)  # each commit a new partition of its table
        seconds = statistics.median(times)
        results.append(
            Result(
                "capacity",
                f"observer tick, {tables} watched tables, {n:,} new commits",
                seconds,
                "the same tick without commits",
                idle,
                notes=f"{(seconds - idle) / n * 1000:.2f} ms per new commit",
                extra={"ms per commit": (seconds - idle) / n * 1000},
            )
        )
        cursor = result.cursor
        for event in result.asset_events:
            instance.report_runless_asset_event(event)
    return results


def _log_bytes(location: str) -> tuple[int, int, int, int]:
    """Bytes of the JSON commits, of all checkpoints and of the latest one; the number of files in ``_delta_log``."""
    files = list((Path(location) / "_delta_log").iterdir())
    commits = sum(f.stat().st_size for f in files if f.suffix == ".json")
    kept = sorted((f for f in files if ".checkpoint." in f.name), key=lambda f: f.name)
    return commits, sum(f.stat().st_size for f in kept), kept[-1].stat().st_size, len(files)


def log_growth() -> list[Result]:
    location = str(Path(tempfile.mkdtemp(prefix="mesh-bench-log-")) / "t")
    write_deltalake(location, _day(START), partition_by=["p_date"])  # commit 0: the table's creation
    results = []
    first_read = None
    for version in range(1, LOG_COMMITS[-1]):
        day = START + timedelta(days=version)
        write_deltalake(location, _day(day), mode="overwrite", predicate=f"p_date = '{day}'")
        if (version + 1) % CHECKPOINT_INTERVAL == 0:
            DeltaTable(location).create_checkpoint()
        if version + 1 in LOG_COMMITS:
            commits, checkpoints, latest, count = _log_bytes(location)
            read = median_of(lambda: len(DeltaTable(location).file_uris()), 5)
            first_read = first_read or read
            results.append(
                Result(
                    "capacity",
                    f"Delta log after {version + 1:,} daily replaces of one partition: {count:,} files, "
                    f"{commits / 2**10:,.0f} KiB JSON commits + {checkpoints / 2**10:,.0f} KiB checkpoints, the latest "
                    f"{latest / 2**10:,.0f} KiB "
                    f"(time: read the latest snapshot with deltalake)",
                    read,
                    f"the same at {LOG_COMMITS[0]} commits",
                    first_read,
                    notes=f"{(commits + checkpoints) / (version + 1):,.0f} log bytes per commit kept",
                    extra={
                        "json bytes": float(commits),
                        "checkpoint bytes": float(checkpoints),
                        "latest checkpoint bytes": float(latest),
                    },
                )
            )
    return results


def run() -> list[Result]:
    return [*per_table(), *per_commit(), *log_growth()]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=["tables", "commits", "log"], nargs="*", default=["tables", "commits", "log"])
    args = parser.parse_args()
    parts = {"tables": per_table, "commits": per_commit, "log": log_growth}
    print_results([r for p in args.part for r in parts[p]()])
