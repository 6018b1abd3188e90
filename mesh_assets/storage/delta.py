"""Delta table facts that hold on every engine.

Classic sessions ask Delta's Python API. A Spark Connect session has no JVM handle, and Delta's own Connect
client needs a server plugin (``delta-connect-server``) that is not published for Spark 4.2; there the same
facts come from SQL that any Delta-enabled server answers.
"""

from __future__ import annotations

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


def latest_version(spark: SparkSession, location: str) -> int:
    if not is_connect(spark):
        return DeltaTable.forPath(spark, location).history(1).collect()[0]["version"]
    return spark.sql(f"DESCRIBE HISTORY {path_identifier(location)} LIMIT 1").collect()[0]["version"]


def committed_version(spark: SparkSession, location: str, metadata: str | None) -> int:
    """The version a write just committed, found by its commit metadata: a writer of other partitions may
    have committed after it, so the latest version is not necessarily this write's."""
    if not is_connect(spark):
        history = DeltaTable.forPath(spark, location).history(20).select("version", "userMetadata").collect()
    else:
        history = spark.sql(f"DESCRIBE HISTORY {path_identifier(location)} LIMIT 20").collect()
    return next((row["version"] for row in history if metadata and row["userMetadata"] == metadata), history[0][0])
