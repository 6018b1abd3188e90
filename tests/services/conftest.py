"""Service tests: Mesh against real services (Postgres, a Spark standalone cluster, Spark Connect, an S3
server) that the tests start on 127.0.0.1 and stop afterwards, whatever the outcome.

The reference is local mode: the ``shop`` fixture mesh materialized by the pytest process's own session.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pyspark
import pytest
import shop
from last_use import until_last_use
from processes import free_port, start, stop, tail, wait_for_port
from shop import DAYS, RANGE, LocalShop

from mesh_assets import MeshResource
from mesh_assets.settings import get_settings

SPARK_HOME = Path(pyspark.__file__).parent


def alive_workers(ui_port: int) -> int:
    """Workers registered with the master, from its web UI's JSON (0 while the UI is still starting)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``spark://127.0.0.1:<port>`` of a running master with one registered worker, and the worker's work dir;
    started once for every test that uses it (the standalone and submit-mode tests), stopped after the last."""
    base = tmp_path_factory.mktemp("standalone")
    work = base / "work"
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base)}
    env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"  # no submission server on its fixed port 6066
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    master_args = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)]
    with until_last_use("cluster") as servers:
        master = start([spark_class, "org.apache.spark.deploy.master.Master", *master_args], base / "master.log", env)
        servers.callback(stop, master)
        wait_for_port(port, master, base / "master.log")
        worker_args = [f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g"]
        worker_args += ["--webui-port", str(free_port()), "--work-dir", str(work)]
        worker = start([spark_class, "org.apache.spark.deploy.worker.Worker", *worker_args], base / "worker.log", env)
        servers.callback(stop, worker)  # before the master
        deadline = time.monotonic() + 180
        while alive_workers(ui) < 1:
            assert worker.poll() is None, tail(base / "worker.log")
            assert time.monotonic() < deadline, f"no worker registered:\n{tail(base / 'worker.log')}"
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}", work


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local S3 (and EMR Serverless) API in its own process, moto in server mode: delta-rs holds the GIL while
    it loads a table, so a server thread in this process could not answer it."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with until_last_use("s3_endpoint") as servers:
        server = start([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], log)
        servers.callback(stop, server)
        wait_for_port(port, server, log)
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """Sets this deployment's environment (``MESH_*``, ``AWS_*`` ...) for the test; the process's settings are
    read again after each change and after the test."""

    def set_env(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()

    yield set_env
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def local_shop(spark, tmp_path_factory: pytest.TempPathFactory) -> LocalShop:
    """``shop`` landed and materialized in local mode for both :data:`shop.DAYS`: what every other engine must match."""
    mesh = MeshResource(warehouse=str(tmp_path_factory.mktemp("local-shop") / "warehouse"))
    shop.land(spark, mesh.registry, DAYS)
    with dg.DagsterInstance.ephemeral() as instance:
        assert shop.materialize(instance, mesh, [shop.ORDERS, shop.CITY_ORDERS], RANGE).success
    rows = {"/".join(k): shop.rows(spark, mesh.registry, k) for k in (shop.ORDERS, shop.CITY_ORDERS)}
    assert all(rows.values())
    return LocalShop(mesh.registry, rows)
