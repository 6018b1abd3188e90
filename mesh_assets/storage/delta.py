"""Delta table facts that hold on every engine.

A table's versions and commit metadata come from its log through delta-rs (:mod:`~mesh_assets.storage.lake`),
which costs milliseconds where ``history()`` runs a Spark job, and needs no JVM handle: a Spark Connect session
has none, and Delta's own Connect client needs a server plugin (``delta-connect-server``) that is not published
for Spark 4.2. Whether a location holds a Delta table is still Spark's answer (a SQL one under Connect).
"""

from __future__ import annotations

from datetime import datetime

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from mesh_assets.engine.session import is_connect
from mesh_assets.model.grain import Grain, midnight, region_key, utc
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import S3Settings
from mesh_assets.storage.lake import history, open_table


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
    for info in history(table, 20 if after is None else max(latest - after, 1)):
        if info["version"] > oldest and info.get("userMetadata") == metadata:
            return info["version"]
    raise CommitNotFound(
        f"the commit of this write (userMetadata {metadata}) is not in the log of {location} after version "
        f"{oldest} (latest {latest}): its rows may be published, but which version published them is unknown"
    )


def committed_rows(
    location: str, version: int, s3: S3Settings, column: str | None, part: PartitionRange | None
) -> dict[str, int] | None:
    """Rows per partition key of ``part`` (every key, 0 when empty) in the table at ``version``, from its files'
    own record counts in the log; the whole table's under one key when unpartitioned. None when a file has
    no count (stats not collected) or deletion vectors hide some of its rows: then only a query can tell."""
    table = open_table(location, s3, version=version, files=True)
    if table is None or "deletionVectors" in (table.protocol().reader_features or []):
        return None
    files = table.get_add_actions(flatten=True)
    records = files.column("num_records").to_pylist()
    if any(n is None for n in records):
        return None
    if part is None or column is None:
        return {"*": sum(records)}
    counts = dict.fromkeys(part.keys(), 0)
    for value, n in zip(files.column(f"partition.{column}").to_pylist(), records, strict=True):
        if value is None:
            continue
        moment = value if isinstance(value, datetime) else midnight(value)
        key = part.grain.key(part.grain.floor(utc(moment)))
        if key in counts:
            counts[key] += n
    return counts


def snapshot_keys(location: str, s3: S3Settings, grain: Grain, column: str, region_column: str | None) -> set[str]:
    """The partition keys (as Dagster spells them; ``day|region`` with a ``region_column``) the table's latest
    snapshot has files in, from its log; none without a table at ``location``."""
    table = open_table(location, s3, files=True)
    if table is None:
        return set()
    files = table.get_add_actions(flatten=True)
    values = files.column(f"partition.{column}").to_pylist()
    regions = files.column(f"partition.{region_column}").to_pylist() if region_column else [None] * len(values)
    keys = set()
    for value, region in zip(values, regions, strict=True):
        if value is None:
            continue
        key = grain.key(grain.floor(utc(value if isinstance(value, datetime) else midnight(value))))
        keys.add(key if region is None else region_key(key, str(region)))
    return keys
