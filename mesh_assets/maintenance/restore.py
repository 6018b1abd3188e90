"""Restore: a table brought back to an earlier version with Delta's ``RESTORE``, in one commit.

A restore is a publication: every partition whose data any commit after the target changed (for a keyed table,
merge, history or changes: every partition a commit after the target published) gets a materialization with
the restore's data version (``delta-v<N>``, the new commit), carrying the code version and revision of the
materialization that published it at the target, and its checks are judged again on the
restored rows. What was computed from the withdrawn versions downstream is marked suspect, as ``mesh
invalidate`` marks it, until a backfill recomputes it. A version Delta no longer holds is refused with the
reason: its log was cleaned up, or its files were (VACUUM, after the retention).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg
from pyspark.sql import SparkSession

from mesh_assets.automation.delta_log import Seen, changes_since, partition_key
from mesh_assets.automation.log_files import LogFiles
from mesh_assets.compat import CODE_VERSION_TAG, DATA_VERSION_TAG
from mesh_assets.graph.resolve import Table
from mesh_assets.graph.revisions import REVISION_KEY
from mesh_assets.settings import S3Settings
from mesh_assets.storage.delta import path_identifier
from mesh_assets.storage.lake import is_object_store, local_path, open_table


class RestoreRefused(ValueError):
    """The restore cannot be done as asked; the message says why."""


@dataclass(frozen=True)
class Target:
    """The version to restore and the partitions (Dagster keys; ``None``: the unpartitioned table) whose data
    changed after it."""

    version: int
    latest: int
    partitions: tuple[str | None, ...]


def _parse_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise RestoreRefused(f"--to-timestamp {text!r} is not an ISO time (2021-06-03T10:00, UTC)") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def version_at(location: str, s3: S3Settings, timestamp: str) -> int:
    """The newest version committed at or before ``timestamp`` (ISO; UTC unless it names a zone)."""
    moment = _parse_time(timestamp)
    table = open_table(location, s3)
    if table is None:
        raise RestoreRefused(f"no Delta table at {location}")
    ms = moment.timestamp() * 1000
    versions = [e["version"] for e in table.history() if e.get("timestamp", 0) <= ms]
    if not versions:
        raise RestoreRefused(f"no version of the table was committed at or before {moment.isoformat()}")
    return max(versions)


def _missing_files(location: str, s3: S3Settings, version: int) -> list[str]:
    """Data files of ``version`` that are gone from a local table's directory (an object store is not listed:
    Delta's RESTORE refuses missing files itself)."""
    if is_object_store(location):
        return []
    table = open_table(location, s3, version=version, files=True)
    if table is None:
        return []
    root = local_path(location)
    paths = table.get_add_actions(flatten=True).column("path").to_pylist()
    return [p for p in paths if not os.path.exists(p if os.path.isabs(p) else os.path.join(root, p))]


def target(table: Table, location: str, s3: S3Settings, version: int) -> Target:
    """What restoring ``table`` to ``version`` brings back, or why it cannot."""
    found = open_table(location, s3)
    if found is None:
        raise RestoreRefused(f"{table.ref} has no Delta table at {location}")
    latest = found.version()
    if latest == 0:
        raise RestoreRefused(f"{table.ref} has one version (0): there is no earlier one to restore")
    if version < 0 or version >= latest:
        raise RestoreRefused(f"{table.ref} is at version {latest}: restore to an earlier one (0..{latest - 1})")
    try:
        open_table(location, s3, version=version)
    except Exception as exc:  # delta-rs: the version's commit and every checkpoint before it are gone
        raise RestoreRefused(
            f"{table.ref} version {version} is no longer in the table's log (cleaned up after the log retention): "
            f"{str(exc).splitlines()[0]}"
        ) from None
    missing = _missing_files(location, s3, version)
    if missing:
        raise RestoreRefused(
            f"{table.ref} version {version} was cleaned up: {len(missing)} of its data files were deleted by "
            f"VACUUM after the retention (e.g. {missing[0]}); restore a version within the retention"
        )
    changes = changes_since(LogFiles(s3), location, Seen(version))
    keys: set[str | None] = set()
    for partition in changes.partitions if changes is not None else {}:
        value = dict(partition).get(table.partition_column) if table.grain.partitioned else None
        keys.add(partition_key(value, table.grain) if value is not None else None)
    return Target(version, latest, tuple(sorted(keys, key=lambda k: k or "")))


def restore(spark: SparkSession, location: str, version: int, s3: S3Settings) -> int:
    """Restore the table to ``version`` in one commit; the version that commit made."""
    spark.sql(f"RESTORE TABLE {path_identifier(location)} TO VERSION AS OF {version}").collect()
    found = open_table(location, s3)
    assert found is not None
    return found.version()


def rows_by_key(table: Table, location: str, s3: S3Settings, version: int) -> dict[str | None, int | None]:
    """Rows per partition key at ``version``, from the files' record counts (None where a file has none); a keyed
    table's files are not laid out by its partitions: all its rows under ``None``."""
    found = open_table(location, s3, version=version, files=True)
    out: dict[str | None, int | None] = {}
    if found is None:
        return out
    actions = found.get_add_actions(flatten=True)
    records = actions.column("num_records").to_pylist()
    column = f"partition.{table.partition_column}"
    by_partition = table.grain.partitioned and not table.table_kind.keyed
    values = actions.column(column).to_pylist() if by_partition else [None] * len(records)
    for value, n in zip(values, records, strict=True):
        key = None
        if value is not None:
            key = partition_key(value.isoformat() if hasattr(value, "isoformat") else str(value), table.grain)
        before = out.get(key, 0)
        out[key] = None if before is None or n is None else before + n
    return out


def _published_at(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None, version: int):
    """The newest materialization of ``partition`` that a version at or before ``version`` published."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition else None), limit=100
    ).records
    for record in records:
        event = record.asset_materialization
        recorded = event.metadata.get("delta_version") if event else None
        if recorded is not None and int(getattr(recorded, "value", recorded)) <= version:
            return event
    return None


def materializations(
    instance: dg.DagsterInstance, table: Table, location: str, s3: S3Settings, restored: Target, version: int
) -> Iterator[dg.AssetMaterialization]:
    """One materialization per partition the restore changed, with the restore's data version."""
    rows = rows_by_key(table, location, s3, version)
    for partition in restored.partitions:
        before = _published_at(instance, table.key, partition, restored.version)
        tags = {DATA_VERSION_TAG: f"delta-v{version}"}
        metadata: dict = {"delta_version": version, "location": location, "restored_to_version": restored.version}
        if table.table_kind.keyed:  # its runs' changes withdrawn: the table's rows, not the partition's
            metadata["table_rows"] = rows.get(None) or 0
        else:
            metadata["dagster/row_count"] = rows.get(partition) or 0
        if before is not None:
            if code := before.tags.get(CODE_VERSION_TAG):
                tags[CODE_VERSION_TAG] = code
            if (revision := before.metadata.get(REVISION_KEY)) is not None:
                metadata[REVISION_KEY] = getattr(revision, "value", revision)
        yield dg.AssetMaterialization(asset_key=table.key, partition=partition, metadata=metadata, tags=tags)
