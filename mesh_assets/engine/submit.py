"""The command that launches a run as a Spark application: ``spark-submit`` in client mode at the settings'
master, with the configuration a session of this process would get (Delta, its jars, sizes, UTC).

Client mode keeps the driver on this machine, beside the Dagster step that reads its Pipes messages; it is the
only mode Spark allows for Python applications on a standalone cluster. Executors run wherever the master
places them and fetch Delta's jars from the driver.
"""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from pathlib import Path

from mesh_assets.engine.session import spark_conf
from mesh_assets.settings import MeshSettings


def spark_submit(settings: MeshSettings) -> str:
    """The ``spark-submit`` to run: the settings', else the one PySpark ships."""
    if settings.engine.spark_submit:
        return settings.engine.spark_submit
    spec = find_spec("pyspark")
    assert spec is not None and spec.origin is not None
    return str(Path(spec.origin).parent / "bin" / "spark-submit")


def submit_command(settings: MeshSettings, name: str, application: Path) -> list[str]:
    """``spark-submit`` of the Python file ``application``, in client mode, configured as a local session."""
    command = [spark_submit(settings), "--master", settings.spark.master, "--deploy-mode", "client", "--name", name]
    for key, value in spark_conf(settings).items():
        command += ["--conf", f"{key}={value}"]
    return [*command, str(application)]


def submit_env() -> dict[str, str]:
    """The driver's and executors' Python: this one (it has Mesh and the domains' dependencies), unless the
    environment names another."""
    python = os.environ.get("PYSPARK_PYTHON", sys.executable)
    return {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": os.environ.get("PYSPARK_DRIVER_PYTHON", python)}
