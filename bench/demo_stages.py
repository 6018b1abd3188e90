"""A newcomer's ``make demo``, stage by stage, each against the raw Spark work the demo contains.

Each stage runs as the Makefile runs it, in a process of its own, over an empty ``.mesh`` of its own (a
temporary ``MESH_HOME``, ``DAGSTER_HOME`` and jar folder; the virtual environment and Maven's local
repository are the checkout's, warm, as after a first clone's ``make setup``):

- setup: ``mesh setup --no-archive`` (Delta's core jars from Maven, the Dagster instance) and ``dbt parse``
  into a fresh target folder, as ``make setup`` does after the environment;
- the class-data archive, which ``make test`` and ``make bench`` add (``mesh setup``), and the
  first demo again with it, for what it saves over the demo's one driver;
- the first ``mesh demo`` (14 days), then a second one with nothing changed.

The baseline is the demo's Spark work done raw: one fresh process that starts a session as the demo does
(``spark.jit: quick``), lands the same sources and writes every PySpark and SQL product's rows straight to
Delta, upstream first (:func:`bench.demo_end_to_end.raw_mesh`; the dbt models are left out, their raw
equivalent being dbt itself). Run alone: ``python -m bench.demo_stages``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Result, print_results

BIN = Path(sys.executable).parent
RAW = """
import sys
from bench.demo_end_to_end import raw_mesh
from mesh_assets import MeshResource, mesh_definitions
from mesh_assets.engine.session import get_spark
from mesh_assets.settings import Jit, MeshSettings
from mesh_examples.generator import days
from mesh_examples.landing import land_all
from mesh_examples.run import DEMO_START

spark = get_spark(MeshSettings(spark={"jit": Jit.QUICK}))
mesh = MeshResource(warehouse=sys.argv[1])
window = days(DEMO_START, int(sys.argv[2]))
land_all(spark, mesh.registry, window)
raw_mesh(mesh, mesh_definitions(dbt=False), window[0].isoformat(), window[-1].isoformat())
"""


def _timed(command: list[str], env: dict[str, str], log: Path) -> float:
    """Wall seconds of ``command`` in a process of its own, its output in ``log``; a failure shows its tail."""
    start = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {log.read_text()[-2000:]}")
    return seconds


def _env(base: Path, name: str) -> dict[str, str]:
    """An empty ``.mesh`` under ``base/name``: home, Dagster instance and jars; nothing else of the caller's."""
    home = base / name
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("MESH_", "DAGSTER_"))}
    return {
        **inherited,
        "MESH_PROJECT_ROOT": str(ROOT),
        "MESH_HOME": str(home),
        "DAGSTER_HOME": str(home / "dagster"),
        "MESH_JARS_DIR": str(base / "jars"),
    }


def run(day_count: int = 14) -> list[Result]:
    base = Path(tempfile.mkdtemp(prefix="mesh-bench-stages-"))
    logs = base / "logs"
    logs.mkdir()
    mesh, demo = [str(BIN / "mesh"), "setup"], [str(BIN / "mesh"), "demo", "--days", str(day_count)]

    env = _env(base, "first")
    jars = _timed([*mesh, "--no-archive"], env, logs / "setup.log")
    raw_command = [sys.executable, "-c", RAW, str(base / "raw" / "warehouse"), str(day_count)]
    raw = _timed(raw_command, _env(base, "raw"), logs / "raw.log")  # the same jars, no archive yet
    parse = [sys.executable, "-m", "mesh_assets.dbt.prepare"]  # into a fresh target folder: a full parse
    manifest = _timed(parse, {**env, "DBT_TARGET_PATH": str(base / "dbt-target")}, logs / "dbt-parse.log")
    first = _timed(demo, env, logs / "first-demo.log")
    second = _timed(demo, env, logs / "second-demo.log")

    archive = _timed(mesh, env, logs / "archive.log")  # the jars are there: the archive and the instance
    archived = _env(base, "archived")
    first_archived = _timed(demo, archived, logs / "first-demo-archived.log")

    baseline = f"raw PySpark: land and write the same {day_count} days, one fresh process (dbt models excluded)"
    setup = jars + manifest
    return [
        Result(
            "demo stages",
            "setup from an empty .mesh: Delta's core jars, the Dagster instance, the dbt manifest",
            setup,
            baseline,
            raw,
            notes=f"jars and instance {jars:.1f} s, dbt parse {manifest:.1f} s; the environment excluded",
            extra={"jars_seconds": jars, "manifest_seconds": manifest},
        ),
        Result(
            "demo stages",
            f"first mesh demo, {day_count} days, fresh home",
            first,
            baseline,
            raw,
            target="setup + first demo <= 240 s",
            met=setup + first <= 240,
            notes=f"setup + first demo {setup + first:.1f} s",
        ),
        Result(
            "demo stages",
            "second mesh demo, nothing changed (nothing landed or computed, no Spark session)",
            second,
            baseline,
            raw,
            target="<= 60 s",
            met=second <= 60,
        ),
        Result(
            "demo stages",
            "class-data archive (make test and make bench only)",
            archive,
            baseline,
            raw,
            notes=f"first demo with it {first_archived:.1f} s against {first:.1f} s without: "
            f"{first - first_archived:.1f} s saved for {archive:.1f} s spent",
            extra={"first_demo_with_archive_seconds": first_archived},
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=14)
    print_results(run(parser.parse_args().days))
