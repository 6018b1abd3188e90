"""Delta table facts that hold on every engine.

Classic sessions ask Delta in the driver: the table's log for its latest version and the commit file for a
commit's metadata, which costs milliseconds, where ``history()`` runs a Spark job. A Spark Connect session
has no JVM handle, and Delta's own Connect client needs a server plugin (``delta-connect-server``) that is
not published for Spark 4.2; there the same facts come from SQL that any Delta-enabled server answers.
"""

from __future__ import annotations

import json
from typing import Any

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from mesh_assets.engine.session import is_connect


def path_identifier(location: str) -> str:
    """``delta.`<location>``` with backticks in the location escaped, for SQL that addresses a table by path."""
    return "delta.`" + location.replace("`", "``") + "`"


def is_delta_table(spark: SparkSession, location: str) -> bool:
    if not is_connect(spark):
        return DeltaTable.isDeltaTable(spark, location)
    try:
        spark.sql(f"DESCRIBE DETAIL {path_identifier(location)}").collect()
    except AnalysisException:
        return False
    return True


def _delta_log(spark: SparkSession, location: str) -> Any:
    """Delta's log of the table at ``location``, brought up to date (JVM object; classic sessions only)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, location)  # type: ignore[attr-defined]
    log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())
    return log


def _commit_info(spark: SparkSession, log: Any, version: int) -> dict[str, Any]:
    """The ``commitInfo`` action of one commit file, read from its first lines (Delta writes it first)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    path = jvm.org.apache.hadoop.fs.Path(log.logPath(), f"{version:020d}.json")
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(fs.open(path), "UTF-8"))
    try:
        while (line := reader.readLine()) is not None:
            action = json.loads(line)
            if "commitInfo" in action:
                return action["commitInfo"]
    finally:
        reader.close()
    return {}


def version_or_none(spark: SparkSession, location: str) -> int | None:
    """The table's latest version; None when there is no Delta table at ``location``."""
    if is_connect(spark):
        try:
            return latest_version(spark, location)
        except AnalysisException:
            return None
    version = _delta_log(spark, location).unsafeVolatileSnapshot().version()
    return None if version < 0 else version


def latest_version(spark: SparkSession, location: str) -> int:
    if not is_connect(spark):
        return _delta_log(spark, location).unsafeVolatileSnapshot().version()
    return spark.sql(f"DESCRIBE HISTORY {path_identifier(location)} LIMIT 1").collect()[0]["version"]


def committed_version(spark: SparkSession, location: str, metadata: str | None, after: int | None = None) -> int:
    """The version a write just committed, found by its commit metadata: a writer of other partitions may
    have committed after it, so the latest version is not necessarily this write's. ``after`` is the version
    before the write (no older commit can be it); at most 20 commits are looked at."""
    if is_connect(spark):
        history = spark.sql(f"DESCRIBE HISTORY {path_identifier(location)} LIMIT 20").collect()
        return next((row["version"] for row in history if metadata and row["userMetadata"] == metadata), history[0][0])
    log = _delta_log(spark, location)
    latest = log.unsafeVolatileSnapshot().version()
    oldest = max(latest - 20, -1 if after is None else after)
    for version in range(latest, oldest, -1):
        if metadata and _commit_info(spark, log, version).get("userMetadata") == metadata:
            return version
    return latest
