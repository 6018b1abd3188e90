"""A short-lived driver: a fresh process that starts a session, creates a partitioned Delta table, replaces a
partition five times and reads it back, as a launched run, a test or the demo does on small data.

Three ways of starting the JVM, alternated: as the JVM starts by default (the baseline: Mesh's own options
only), with the class-data archive ``mesh setup`` makes, and with the archive and ``spark.jit: quick``
(:mod:`mesh_assets.engine.jvm`). Wall seconds are the rows' figures; CPU seconds (the whole machine's busy time
over the run, so measure on a quiet machine) are in the notes, since several drivers at once on two cores
are bound by CPU, not by any one's wall time. Run alone: ``python -m bench.jvm_start --repeat 3``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, print_results
from mesh_assets.engine.jvm import archive_path
from mesh_assets.engine.session import LOG4J
from mesh_assets.settings import MeshSettings

WORK = """
import sys
from mesh_assets.engine.session import get_spark
from mesh_assets.settings import MeshSettings
spark = get_spark(MeshSettings())
table = sys.argv[1]
days = spark.range(0, 1000).selectExpr("id", "date_add(date'2021-06-01', cast(id % 3 as int)) AS p_date")
days.write.format("delta").mode("overwrite").partitionBy("p_date").save(table)
for _ in range(5):
    one = days.where("p_date = date'2021-06-01'")
    one.write.format("delta").mode("overwrite").option("replaceWhere", "p_date = date'2021-06-01'").save(table)
    assert spark.read.format("delta").load(table).count() == 1000
"""


def _busy() -> float:
    """The machine's busy CPU seconds so far (every core, from ``/proc/stat``)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _once(env: dict[str, str], base: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process doing the work, its JVM's exit included."""
    table = base / f"t-{time.monotonic_ns()}"
    cpu, start = _busy(), time.perf_counter()
    subprocess.run([sys.executable, "-c", WORK, str(table)], check=True, capture_output=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    time.sleep(1.0)  # the JVM exits after its Python: its last CPU lands in this (otherwise idle) second
    return wall, _busy() - cpu


def run(repeat: int = 3) -> list[Result]:
    settings = MeshSettings()
    archive = archive_path(settings.jars_path)
    if archive is None or not archive.exists():
        raise RuntimeError("no class-data archive: run `mesh setup` first")
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-jvm-"))
    common = {**os.environ, "MESH_HOME": str(base / "home"), "MESH_PROJECT_ROOT": str(ROOT)}
    plain = json.dumps({"spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={LOG4J}"})
    cases = {
        "default": {**common, "MESH_SPARK__CONF": plain},
        "archive": {**common, "MESH_SPARK__JIT": "tiered"},
        "archive+quick": {**common, "MESH_SPARK__JIT": "quick"},
    }
    for env in cases.values():
        _once(env, base)  # file caches warm for every case
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, env in cases.items():
            runs[name].append(_once(env, base))
    wall = {name: statistics.median(w for w, _ in r) for name, r in runs.items()}
    cpu = {name: statistics.median(c for _, c in r) for name, r in runs.items()}
    baseline = "the JVM's defaults (no archive, tiered compilation), same work"
    return [
        Result(
            "driver start-up",
            f"fresh process, small Delta work, {label} (median of {repeat}, alternated)",
            wall[name],
            baseline,
            wall["default"],
            notes=f"CPU {cpu[name]:.1f} s against {cpu['default']:.1f} s",
            extra={"cpu_seconds": cpu[name], "baseline_cpu_seconds": cpu["default"]},
        )
        for name, label in (("archive", "class-data archive"), ("archive+quick", "archive and spark.jit quick"))
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    print_results(run(parser.parse_args().repeat))
