"""Per-run start-up: a run process's first query on a fresh local SparkSession versus through an
already-running Spark Connect server (``sc://``), which pays the JVM and Spark's initialisation once.

Each case is a fresh interpreter timing import -> session -> first query over a Delta table, i.e. what
every run process pays before its product's own work starts. The server's own start-up is reported beside.
Run alone: ``python -m bench.connect_startup --repeat 3``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, connect_server, print_results, python_seconds

FIRST_QUERY = """
import time; t0 = time.perf_counter()
from mesh_assets.engine.session import get_spark
from mesh_assets.settings import MeshSettings
spark = get_spark(MeshSettings())
assert spark.read.format("delta").load({table!r}).count() == 1000
print(time.perf_counter() - t0)
"""

PREPARE = """
from mesh_assets.engine.session import get_spark
from mesh_assets.settings import MeshSettings
get_spark(MeshSettings()).range(1000).write.format("delta").save({table!r})
print(0)
"""


def run(repeat: int = 3) -> list[Result]:
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-connect-"))
    table = str(base / "warehouse" / "t")
    env = {"MESH_HOME": str(base / "local"), "MESH_PROJECT_ROOT": str(ROOT)}
    python_seconds(PREPARE.format(table=table), env)
    started = time.perf_counter()
    with connect_server(base) as url:
        code = FIRST_QUERY.format(table=table)
        connect_env = {**env, "MESH_SPARK__MASTER": url}
        python_seconds(code, connect_env)  # the server's first session warms its own caches
        server_ready = time.perf_counter() - started
        local = statistics.median(python_seconds(code, env) for _ in range(repeat))
        connect = statistics.median(python_seconds(code, connect_env) for _ in range(repeat))
    return [
        Result(
            "connect start-up",
            "fresh run process: first Delta query through Spark Connect",
            connect,
            "fresh local SparkSession",
            local,
            "Connect/local <= 0.5",
            connect / local <= 0.5,
            notes=f"per-run start-up saved {local - connect:.1f} s; the server took {server_ready:.1f} s once",
            extra={"saved_seconds": local - connect, "server_ready_seconds": server_ready},
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    print_results(run(parser.parse_args().repeat))
