"""A Spark standalone cluster (a master and one worker from PySpark's own distribution): Mesh pointed at
``spark://`` by settings alone writes the same rows as local mode, with its Delta jars shipped to executors."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
import shop
from delta.tables import DeltaTable
from processes import free_port, start, stop, tail, wait_for_port
from shop import RANGE, LocalShop

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

SPARK_HOME = Path(pyspark.__file__).parent


def alive_workers(ui_port: int) -> int:
    """Workers registered with the master, from its web UI's JSON (0 while the UI is still starting)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``spark://127.0.0.1:<port>`` of a running master with one registered worker, and the worker's work dir."""
    base = tmp_path_factory.mktemp("standalone")
    work = base / "work"
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base)}
    env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"  # no submission server on its fixed port 6066
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    master_args = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)]
    master = start([spark_class, "org.apache.spark.deploy.master.Master", *master_args], base / "master.log", env)
    worker = None
    try:
        wait_for_port(port, master, base / "master.log")
        worker_args = [f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g"]
        worker_args += ["--webui-port", str(free_port()), "--work-dir", str(work)]
        worker = start([spark_class, "org.apache.spark.deploy.worker.Worker", *worker_args], base / "worker.log", env)
        deadline = time.monotonic() + 180
        while alive_workers(ui) < 1:
            assert worker.poll() is None, tail(base / "worker.log")
            assert time.monotonic() < deadline, f"no worker registered:\n{tail(base / 'worker.log')}"
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}", work
    finally:
        if worker is not None:
            stop(worker)
        stop(master)


def test_a_standalone_cluster_writes_what_local_mode_writes(spark, cluster, local_shop: LocalShop, tmp_path) -> None:
    master, work = cluster
    env = shop.run_env(tmp_path / "home", MESH_SPARK__MASTER=master, MESH_WAREHOUSE=local_shop.registry.warehouse)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver is reached by the executors; keep it on loopback
    out = shop.run(tmp_path / "run.log", env, "--partitions", RANGE, "--assets", "shop/orders")

    assert out["master"] == master and out["session"] == "pyspark.sql.session"
    assert [r["success"] for r in out["runs"]] == [True]
    # the cluster's runs replaced local mode's partitions with identical rows
    assert shop.rows(spark, local_shop.registry, shop.ORDERS) == local_shop.rows["shop/orders"]
    location = local_shop.registry.location(*shop.ORDERS)
    latest = DeltaTable.forPath(spark, location).history(1).collect()[0]
    assert json.loads(latest["userMetadata"])["dagster_run_id"] == out["runs"][0]["run_id"]
    # the work ran in an executor on the worker, which fetched Delta's jars from the driver
    executors = list(work.glob("app-*/*"))
    assert executors, tail(tmp_path / "run.log")
    assert any(e.glob("delta-spark_*.jar") for e in executors)
