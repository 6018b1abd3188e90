"""Delta Lake's JVM jars: fetched once from Maven Central at setup, read from the cache at run time.

Spark resolving ``spark.jars.packages`` would reach the network on every new session; Mesh instead
resolves the jars with Maven during ``make setup`` and passes the cached files as ``spark.jars``.
Artefacts that PySpark already ships (Scala, Jackson, Parquet, Hadoop ...) are left out so that one
version of each class is on the classpath. Optional sets (the pom's profiles, e.g. ``s3a``, whose AWS SDK bundle
is 686 MB) are fetched only for settings that use them (:func:`extras_for`) or when asked for, each cached in a
folder of its own, and join the classpath only when settings use them: the local default fetches only the core.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mesh_assets.settings import MeshSettings

POM = Path(__file__).with_name("jars.pom.xml")
EXTRAS = ("s3a",)
"""The pom's profiles: ``<dest>/<profile>/`` holds what each adds beyond PySpark and the core set."""
_VERSIONED = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")


class JarsMissingError(RuntimeError):
    """Raised when Spark would need jars that setup has not fetched yet."""


def _artifact(jar: str) -> str:
    match = _VERSIONED.match(jar)
    return match.group("name") if match else jar.removesuffix(".jar")


def pyspark_artifacts() -> set[str]:
    import pyspark

    return {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def _resolve(out: Path, profile: str | None = None) -> list[Path]:
    """Maven's output is shown only when it fails: even quiet, it prints colour codes into a CI log."""
    command = ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", f"-DoutputDirectory={out}"]
    command += ["-DincludeScope=runtime", *(["-P", profile] if profile else [])]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if done.returncode != 0:
        tail = done.stdout[-4000:]
        raise RuntimeError(f"Maven could not resolve {POM.name} (exit status {done.returncode}):\n{tail}")
    return sorted(out.glob("*.jar"))


def _keep(jars: list[Path], dest: Path, drop: set[str]) -> set[str]:
    """Move the jars whose artefact is not in ``drop`` into a fresh ``dest``; returns the artefacts kept."""
    if dest.exists():
        for old in dest.glob("*.jar"):
            old.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    kept = {_artifact(j.name) for j in jars if _artifact(j.name) not in drop}
    for jar in jars:
        if _artifact(jar.name) in kept:
            shutil.move(jar, dest / jar.name)
    return kept


def extras_for(settings: MeshSettings) -> tuple[str, ...]:
    """The optional sets ``settings`` need: ``s3a`` for an ``s3a://`` warehouse or a configured S3 endpoint."""
    return ("s3a",) if settings.uses_s3a else ()


def _current(folder: Path, pom: str) -> bool:
    marker = folder / ".complete"
    return marker.exists() and marker.read_text() == pom


def provision(dest: Path, extras: Iterable[str] = ()) -> list[Path]:
    """Resolve the pom's core set, and each of ``extras`` (its profiles), with Maven into ``dest``; a set already
    cached from this pom is left as it is. Each set's folder is marked complete only once all of it is there."""
    pom, extras = POM.read_text(), [e for e in EXTRAS if e in set(extras)]
    with tempfile.TemporaryDirectory() as tmp:
        shipped = pyspark_artifacts()
        if not _current(dest, pom):
            (dest / ".complete").unlink(missing_ok=True)
            _keep(_resolve(Path(tmp) / "core"), dest, shipped)
            (dest / ".complete").write_text(pom)
        core = {_artifact(j.name) for j in cached(dest)}
        for extra in extras:
            if not _current(dest / extra, pom):
                (dest / extra / ".complete").unlink(missing_ok=True)
                _keep(_resolve(Path(tmp) / extra, extra), dest / extra, shipped | core)
                (dest / extra / ".complete").write_text(pom)
    return [*cached(dest), *(j for extra in extras for j in cached_extra(dest, extra))]


def cached(dest: Path) -> list[Path]:
    """The cached core jars, or a clear error telling how to fetch them."""
    jars = sorted(dest.glob("*.jar"))
    if not (dest / ".complete").exists() or not any("delta-spark" in j.name for j in jars):
        raise JarsMissingError(f"Delta Lake jars are not in {dest}; run `make setup` (or `mesh setup`) once.")
    return jars


def cached_extra(dest: Path, extra: str) -> list[Path]:
    """The cached jars of one optional set (a pom profile), or a clear error telling how to fetch them."""
    jars = sorted((dest / extra).glob("*.jar"))
    if not (dest / extra / ".complete").exists() or not jars:
        raise JarsMissingError(
            f"the {extra} jars are not in {dest / extra}; run `mesh setup` with these settings "
            f"(or `mesh setup --jars {extra}`)."
        )
    return jars
