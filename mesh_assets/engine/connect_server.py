"""A Spark Connect server with Delta: the always-on engine that runs reach through ``sc://host:port``.

A local session pays a JVM start and Spark's initialisation in every run process; with a Connect server
that cost is paid once, and a run only opens a gRPC channel (``bench/connect_startup.py`` measures the
difference). The server is PySpark's own (``SparkConnectServer`` ships in ``pyspark/jars``) started with the
same jars and Delta configuration a Mesh session gets, so products read and write the same tables either way.

``python -m mesh_assets.engine.connect_server --port 15002`` runs it in the foreground (a service unit, a
container); ``--master spark://...`` puts its executors on a standalone cluster.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pyspark

from mesh_assets.engine.session import spark_conf
from mesh_assets.settings import MeshSettings

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002


def spark_home() -> Path:
    return Path(pyspark.__file__).parent


def server_command(
    settings: MeshSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, master: str = "local[*]"
) -> list[str]:
    """``spark-submit`` arguments for a Connect server whose sessions are configured like Mesh's own."""
    if master.startswith("sc://"):
        raise ValueError("a Connect server needs a local[*] or spark:// master, not another Connect server")
    engine = settings.model_copy(update={"spark": settings.spark.model_copy(update={"master": master})})
    conf = {
        **spark_conf(engine),
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--class", SERVER_CLASS]
    command += ["--name", f"{settings.spark.app_name}-connect"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def server_env() -> dict[str, str]:
    """The environment ``spark-submit`` needs: PySpark's own Spark home."""
    return {**os.environ, "SPARK_HOME": str(spark_home())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address the gRPC endpoint binds to")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", default="local[*]", help="where the server's executors run")
    args = parser.parse_args(argv)
    # This process's own entry point: it reads the configuration once and passes it on.
    command = server_command(MeshSettings(), host=args.host, port=args.port, master=args.master)
    return subprocess.run(command, env=server_env(), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
