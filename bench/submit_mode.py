"""A run in engine mode ``submit`` versus the same job submitted raw with spark-submit.

Mesh: ``dagster asset materialize`` of one partition in its own process, with ``engine.mode: submit``: the
process loads the code location, gates the run on a persistent instance, launches the product as a Spark
application (``spark-submit --deploy-mode client`` at the settings' master) through Dagster Pipes, and records
the events the application reports. Raw: ``spark-submit`` of a script doing the same read-aggregate-
replaceWhere (``bench.workload.raw_work``) with the same Spark configuration. Both pay a JVM and a Python
driver; the gap is what Mesh adds: the Dagster process, the gate, staging and checks, the Pipes round trip and
the events. Run alone: ``python -m bench.submit_mode``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import dagster as dg

from bench.common import ROOT, Result, print_results
from bench.partition_overhead import launch_command, launch_env
from bench.workload import DOMAINS, Workload
from mesh_assets import MeshResource, get_spark, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.engine.submit import submit_command
from mesh_assets.settings import MeshSettings

MASTER = "local[2]"


def _wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env={**os.environ, **env})
    return time.perf_counter() - start


def run(rows_per_day: int = 400_000, repeat: int = 5) -> list[Result]:
    work = Workload(get_spark(), days=3, rows_per_day=rows_per_day)
    day = work.key(2)
    env = launch_env(work, "submit", MESH_ENGINE__MODE="submit", MESH_SPARK__MASTER=MASTER)
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:  # the events landed, as observed
        observe_now(mesh_definitions(DOMAINS, dbt=False), instance, MeshResource(warehouse=env["MESH_WAREHOUSE"]))
    launched = launch_command(day)
    settings = MeshSettings(home=work.base / "raw", spark={"master": MASTER})
    args = [work.location("events"), work.location("raw_submitted"), day, day]
    raw = [*submit_command(settings, "raw", ROOT / "bench" / "submit_raw.py"), *args]
    raw_env = {"PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    _wall(launched, env)  # warm the file caches of both
    _wall(raw, raw_env)
    mesh_runs, raw_runs = [], []
    for _ in range(repeat):  # alternated: the machine's speed drifts
        mesh_runs.append(_wall(launched, env))
        raw_runs.append(_wall(raw, raw_env))
    mesh, baseline = sorted(mesh_runs)[len(mesh_runs) // 2], sorted(raw_runs)[len(raw_runs) // 2]
    return [
        Result(
            "engine mode submit",
            f"run launched in its own process, body submitted with spark-submit ({MASTER}), {rows_per_day:,} rows",
            mesh,
            f"the same job submitted raw with spark-submit ({MASTER})",
            baseline,
            "Mesh/raw <= 1.2",
            mesh <= 1.2 * baseline,
            extra={"overhead_seconds": mesh - baseline},
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows-per-day", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_results(run(args.rows_per_day, args.repeat))
