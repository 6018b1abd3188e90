"""Delta table facts that hold on every engine.

A table's versions and commit metadata come from its log through delta-rs (:mod:`~mesh_assets.storage.lake`),
which costs milliseconds where ``history()`` runs a Spark job, and needs no JVM handle: a Spark Connect session
has none, and Delta's own Connect client needs a server plugin (``delta-connect-server``) that is not published
for Spark 4.2. Whether a location holds a Delta table is still Spark's answer (a SQL one under Connect).
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from mesh_assets.engine.session import is_connect
from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import open_table


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


def version_or_none(location: str, s3: S3Settings) -> int | None:
    """The table's latest version; None when there is no Delta table at ``location`` (an object store's reached
    with ``s3``)."""
    table = open_table(location, s3)
    return None if table is None else table.version()


class CommitNotFound(RuntimeError):
    """A write committed, but its commit is not in the table's log where Mesh looks for it, so the version it
    would record (a materialization's ``delta_version`` and data version) is unknown: refused rather than guessed."""


def committed_version(location: str, metadata: str | None, s3: S3Settings, after: int | None = None) -> int:
    """The version a write just committed, found by its commit metadata.

    A writer of other partitions may have committed after it, so the latest version is not necessarily this
    write's. ``after`` is the version before the write (no older commit can be it; every commit since is
    looked at), else the newest 20 commits are. Without ``metadata`` there is nothing to tell the write's commit
    by, and the latest version is the answer; with it, no matching commit raises :class:`CommitNotFound`.
    """
    table = open_table(location, s3)
    if table is None:
        raise FileNotFoundError(f"no Delta table at {location}")
    latest = table.version()
    if not metadata:
        return latest
    oldest = -1 if after is None else after
    for info in table.history(20 if after is None else max(latest - after, 1)):
        if info["version"] > oldest and info.get("userMetadata") == metadata:
            return info["version"]
    raise CommitNotFound(
        f"the commit of this write (userMetadata {metadata}) is not in the log of {location} after version "
        f"{oldest} (latest {latest}): its rows may be published, but which version published them is unknown"
    )
