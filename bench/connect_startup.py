"""Per-run start-up: a run process's first query on a fresh local SparkSession versus through an
already-running Spark Connect server (``sc://``), which pays the JVM and Spark's initialisation once.

Each case is a fresh interpreter timing import -> session -> first query over a Delta table, i.e. what
every run process pays before its product's own work starts. The server's own start-up is reported beside.
Run alone: ``python -m bench.connect_startup --repeat 3``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, print_results, python_seconds
from mesh_assets.engine.connect_server import server_command, server_env
from mesh_assets.settings import MeshSettings

FIRST_QUERY = """
import time; t0 = time.perf_counter()
from mesh_assets.engine.session import get_spark
spark = get_spark()
assert spark.read.format("delta").load({table!r}).count() == 1000
print(time.perf_counter() - t0)
"""

PREPARE = """
from mesh_assets.engine.session import get_spark
get_spark().range(1000).write.format("delta").save({table!r})
print(0)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, server: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the Connect server exited with {server.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the Connect server did not listen on {port} within {timeout:.0f}s")


def run(repeat: int = 3) -> list[Result]:
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-connect-"))
    table = str(base / "warehouse" / "t")
    env = {"MESH_HOME": str(base / "local"), "MESH_PROJECT_ROOT": str(ROOT)}
    python_seconds(PREPARE.format(table=table), env)
    port = _free_port()
    started = time.perf_counter()
    with (base / "server.log").open("wb") as log:
        server = subprocess.Popen(
            server_command(MeshSettings(home=base / "server"), port=port),
            env=server_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_for(port, server)
        code = FIRST_QUERY.format(table=table)
        connect_env = {**env, "MESH_SPARK__MASTER": f"sc://127.0.0.1:{port}"}
        python_seconds(code, connect_env)  # the server's first session warms its own caches
        server_ready = time.perf_counter() - started
        local = statistics.median(python_seconds(code, env) for _ in range(repeat))
        connect = statistics.median(python_seconds(code, connect_env) for _ in range(repeat))
    finally:
        os.killpg(server.pid, 15)
        server.wait(60)
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
