"""What a Spark driver's JVM is started with: Spark's classes from a class-data archive, and the settings' JIT.

A JVM that starts Spark and Delta loads and verifies some 15,000 classes and compiles the hot ones twice (C1,
then C2) before a small job is done, which costs a short-lived driver (a launched run, a test, the demo) more
CPU than its work. ``mesh setup`` makes a class-data archive (the JDK's AppCDS, ``-XX:ArchiveClassesAtExit``)
from a session that writes and reads a partitioned Delta table; every later driver on this machine maps the
classes instead of loading them. ``spark.jit: quick`` stops at C1 (``-XX:TieredStopAtLevel=1``) and interprets Spark's
per-operator projections (:data:`QUICK_CONF`), for drivers whose data is small: together about half the CPU of a
short session (``bench/jvm_start.py``).

The archive belongs to one JDK and one PySpark (its file is named by both) and to the class path Spark's
launcher builds (PySpark's ``conf`` and ``jars``): a driver given more (``spark.driver.extraClassPath``) starts
without it, and a JVM that cannot map it starts as it would have without it.

The archiving session is :mod:`mesh_assets.engine.archiving`, which ``mesh setup`` runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from mesh_assets.settings import Jit, MeshSettings

QUICK = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")
"""C1 only; with the code cache C1 and C2 share by default, since C1 alone gets a fifth of it, which a long
session's generated code fills (the JVM then stops compiling and Spark's tasks fail)."""
QUICK_CONF = {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
"""Spark's per-operator projections interpreted rather than generated (whole-stage code generation stays): on
small data a task spent more CPU writing and compiling a projection than using it, most of all Delta's log
replay, which generated one for its whole action schema in every task (over a quarter of a test file's CPU)."""
ARCHIVE_SECONDS = 600
"""How long the archiving session may take (a JVM start and a few Delta commits; minutes on a busy machine)."""


def _java() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on the ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home, "bin", "java") if home else (Path(p) if (p := shutil.which("java")) else None)
    return found.resolve() if found is not None and found.exists() else None


def archive_path(jars_dir: Path) -> Path | None:
    """Where the class-data archive of this JDK and PySpark is kept; None without a ``java`` to run."""
    java = _java()
    if java is None:
        return None
    key = f"{java}\0{java.stat().st_mtime_ns}\0{version('pyspark')}"
    return jars_dir.parent / "jvm" / f"spark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def java_options(settings: MeshSettings, conf: dict[str, str]) -> list[str]:
    """The driver's JVM options beyond Mesh's logging: the archive when it exists and the driver's class path
    is Spark's own (``conf``: the driver's Spark configuration), and the settings' JIT."""
    options = []
    archive = archive_path(settings.jars_path)
    if archive is not None and archive.exists() and "spark.driver.extraClassPath" not in conf:
        options.append(f"-XX:SharedArchiveFile={archive}")
    if settings.spark.jit is Jit.QUICK:
        options += QUICK
    return options


def make_archive(settings: MeshSettings) -> Path | None:
    """Make the class-data archive if this JDK and PySpark have none yet; its path (None without ``java``).

    The archiving session runs in a process of its own (its JVM writes the archive when it exits, told so by
    ``SPARK_SUBMIT_OPTS``, which Spark's launcher adds to the driver's options) into a temporary file, renamed
    into place only when complete, so a failed or concurrent setup leaves no half archive.
    """
    archive = archive_path(settings.jars_path)
    if archive is None or archive.exists():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=archive.parent, prefix=".archiving-") as scratch:
        partial, log = Path(scratch) / archive.name, Path(scratch) / "session.log"
        env = {
            **os.environ,
            "MESH_HOME": str(Path(scratch) / "home"),
            "MESH_SPARK__MASTER": "local[2]",
            "MESH_SPARK__JIT": Jit.QUICK.value,  # the archive holds classes, not compiled code: C2 would be spent
            "SPARK_SUBMIT_OPTS": f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={partial}",
        }
        with log.open("wb") as out:
            done = subprocess.run(
                [sys.executable, "-m", "mesh_assets.engine.archiving", str(Path(scratch) / "table")],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                timeout=ARCHIVE_SECONDS,
            )
        if done.returncode != 0 or not partial.exists() or partial.stat().st_size == 0:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the class-data archive was not made (exit status {done.returncode}):\n{tail}")
        partial.replace(archive)
    return archive
