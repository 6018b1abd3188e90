"""Per-partition overhead: one partition with about a second of Spark work, raw versus through Mesh.

Raw is the same read-aggregate-replaceWhere in a warm SparkSession; ``materialize`` runs the product
in-process (readiness, staging, checks, commit, events). A launched run is what a run worker does: a
fresh process loads the code location, records the run on a persistent instance, starts its
SparkSession and materializes the partition (``dagster asset materialize``); its baseline is the raw job
in a fresh process, so the gap shows what the run costs beyond starting Python and the JVM. The same launched
run through an already-running Spark Connect server (``sc://``) is the deployment for many short runs: the run
process is a thin client and the JVM is warm, like the raw baseline's. Run alone:
``python -m bench.partition_overhead --rows-per-day 400000``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, Result, connect_server, median_of, print_results
from bench.workload import Workload
from mesh_assets import get_spark

RAW_IN_FRESH_PROCESS = """
from mesh_assets.engine.session import get_spark
from mesh_assets.settings import MeshSettings
from bench.workload import raw_work
raw_work(get_spark(MeshSettings()), {events!r}, {out!r}, {day!r}, {day!r})
"""


def _wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env={**os.environ, **env})
    return time.perf_counter() - start


def launch_env(work: Workload, name: str, **extra: str) -> dict[str, str]:
    home = work.base / name
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    return {
        "MESH_HOME": str(home),
        "MESH_WAREHOUSE": str(work.base / "warehouse"),
        "DAGSTER_HOME": str(home / "dagster"),
        "MESH_PROJECT_ROOT": str(ROOT),
        **extra,
    }


def launch_command(day: str) -> list[str]:
    dagster = str(Path(sys.executable).parent / "dagster")
    run = [dagster, "asset", "materialize", "-f", str(ROOT / "bench" / "launch_definitions.py")]
    return [*run, "--select", "bench/daily_work", "--partition", day]


def launched(work: Workload, repeat: int) -> tuple[float, float]:
    """(a run launched in its own process, the raw job in its own process), medians of wall time."""
    env = launch_env(work, "launched")
    day = work.key(2)
    run = launch_command(day)
    raw = [
        sys.executable,
        "-c",
        RAW_IN_FRESH_PROCESS.format(events=work.location("events"), out=work.location("raw_fresh"), day=day),
    ]
    _wall(run, env)
    return median_of(lambda: _wall(run, env), repeat), median_of(lambda: _wall(raw, env), repeat)


def launched_through_connect(work: Workload, repeat: int) -> float:
    """A run launched in its own process whose Spark work goes to a warm Spark Connect server."""
    with connect_server(work.base) as url:
        env = launch_env(work, "launched-connect", MESH_SPARK__MASTER=url)
        run = launch_command(work.key(2))
        _wall(run, env)
        return median_of(lambda: _wall(run, env), repeat)


def run(rows_per_day: int = 400_000, repeat: int = 5) -> list[Result]:
    work = Workload(get_spark(), days=3, rows_per_day=rows_per_day)
    work.raw(1, 1)
    work.materialize(1)
    raw = median_of(lambda: work.raw(1, 1), repeat)
    mesh = median_of(lambda: work.materialize(1), repeat)
    launched_run, raw_fresh = launched(work, max(1, repeat // 2))
    through_connect = launched_through_connect(work, max(1, repeat // 2))
    return [
        Result(
            "per-partition overhead",
            f"materialize in-process, {rows_per_day:,} rows",
            mesh,
            "raw Spark job, warm session",
            raw,
            "<= 1.15x raw",
            mesh <= 1.15 * raw,
            extra={"overhead_seconds": mesh - raw},
        ),
        Result(
            "per-partition overhead",
            f"run launched in its own process, {rows_per_day:,} rows",
            launched_run,
            "raw Spark job, warm session",
            raw,
            "<= raw + 1.5 s",
            launched_run <= raw + 1.5,
            notes=f"the raw job in its own process (Python + JVM start) takes {raw_fresh:.1f} s",
            extra={"overhead_seconds": launched_run - raw, "raw_fresh_process_seconds": raw_fresh},
        ),
        Result(
            "per-partition overhead",
            f"run launched in its own process on a Spark Connect server, {rows_per_day:,} rows",
            through_connect,
            "raw Spark job, warm session",
            raw,
            "<= raw + 1.5 s",
            through_connect <= raw + 1.5,
            extra={"overhead_seconds": through_connect - raw},
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows-per-day", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_results(run(args.rows_per_day, args.repeat))
