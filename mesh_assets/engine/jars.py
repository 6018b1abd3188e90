"""Delta Lake's JVM jars: fetched once from Maven Central at setup, read from the cache at run time.

Spark resolving ``spark.jars.packages`` would reach the network on every new session; Mesh instead
resolves the jars with Maven during ``make setup`` and passes the cached files as ``spark.jars``.
Artefacts that PySpark already ships (Scala, Jackson, Parquet, Hadoop ...) are left out so that one
version of each class is on the classpath.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyspark

POM = Path(__file__).with_name("jars.pom.xml")
_VERSIONED = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")


class JarsMissingError(RuntimeError):
    """Raised when Spark would need jars that setup has not fetched yet."""


def _artifact(jar: str) -> str:
    match = _VERSIONED.match(jar)
    return match.group("name") if match else jar.removesuffix(".jar")


def pyspark_artifacts() -> set[str]:
    return {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def provision(dest: Path) -> list[Path]:
    """Resolve the pom with Maven into ``dest`` (idempotent: a complete cache is left as it is)."""
    marker = dest / ".complete"
    if marker.exists() and marker.read_text() == POM.read_text():
        return cached(dest)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(POM),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={tmp}",
                "-DincludeScope=runtime",
            ],
            check=True,
        )
        shipped = pyspark_artifacts()
        dest.mkdir(parents=True, exist_ok=True)
        for old in dest.glob("*.jar"):
            old.unlink()
        for jar in sorted(Path(tmp).glob("*.jar")):
            if _artifact(jar.name) not in shipped:
                shutil.copy2(jar, dest / jar.name)
    marker.write_text(POM.read_text())
    return cached(dest)


def cached(dest: Path) -> list[Path]:
    """The cached jars, or a clear error telling how to fetch them."""
    jars = sorted(dest.glob("*.jar"))
    if not (dest / ".complete").exists() or not any("delta-spark" in j.name for j in jars):
        raise JarsMissingError(f"Delta Lake jars are not in {dest}; run `make setup` (or `mesh setup`) once.")
    return jars
