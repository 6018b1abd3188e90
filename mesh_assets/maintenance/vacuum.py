"""Clean-up with retention: Delta's ``VACUUM`` deletes the files no version within the retention needs.

The retention is per tier (``maintenance.retention_hours``, never under a week), and the table's own properties
say the same (``delta.deletedFileRetentionDuration``), with its log kept at least as long
(``delta.logRetentionDuration``, 30 days at least): a version within the retention can still be read and
restored (``mesh restore``). A run reads its inputs at the versions they had when it started, so a table that a
running run reads, or that one writes, is skipped with the run named: its pinned version's files stay until a
later pass. A table whose Change Data Feed a ``changes`` output has not consumed in full keeps longer, its
properties and log too: back to the version that output consumed (:mod:`~mesh_assets.maintenance.feeds`) and a
week more. A clean-up commits no data change (its log entries are ``VACUUM START`` / ``VACUUM END``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import dagster as dg
from pyspark.sql import SparkSession

from mesh_assets.maintenance.files import stored_bytes
from mesh_assets.settings import MIN_RETENTION_HOURS, MaintenanceSettings, S3Settings
from mesh_assets.storage.delta import path_identifier
from mesh_assets.storage.lake import open_table

LOG_RETENTION_HOURS = 720
"""Delta's default log retention (30 days); kept at least this long, and never shorter than the files'."""
RUNNING = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dataclass(frozen=True)
class Cleaned:
    """One table's clean-up: the retention kept, the bytes its directory held before and after (None on an
    object store), or why it was skipped."""

    hours: int
    before: int | None = None
    after: int | None = None
    skipped: str | None = None
    held: str | None = None
    """Why the retention is longer than the tier's: the change feed reader it keeps versions for."""


def retention_hours(tier: str, settings: MaintenanceSettings) -> int:
    """How long a table of ``tier`` keeps replaced files: its tier's setting, never under a week."""
    return max(settings.retention_hours.get(tier, MIN_RETENTION_HOURS), MIN_RETENTION_HOURS)


def retention_properties(hours: int, log_hours: int = LOG_RETENTION_HOURS) -> dict[str, str]:
    """The table properties that make Delta keep what ``hours`` of retention promise (and its log ``log_hours``)."""
    return {
        "delta.deletedFileRetentionDuration": f"interval {hours} hours",
        "delta.logRetentionDuration": f"interval {max(hours, log_hours, LOG_RETENTION_HOURS)} hours",
    }


def log_hours_for(retain: int) -> int:
    """The log retention that covers ``retain`` hours, in whole steps of 30 days (so a retention held back for a
    change feed reader changes the table's properties, a commit, at most once a month)."""
    return LOG_RETENTION_HOURS * max(1, math.ceil(retain / LOG_RETENTION_HOURS))


def keep_retention(spark: SparkSession, location: str, hours: int, s3: S3Settings, log_hours: int = 0) -> bool:
    """Set the retention properties on the table unless it has them already (each change is a commit, with no
    data change); whether it set them."""
    table = open_table(location, s3)
    current = table.metadata().configuration if table is not None else {}
    wanted = retention_properties(hours, log_hours)
    if all(current.get(k) == v for k, v in wanted.items()):
        return False
    pairs = ", ".join(f"'{k}' = '{v}'" for k, v in wanted.items())
    spark.sql(f"ALTER TABLE {path_identifier(location)} SET TBLPROPERTIES ({pairs})")
    return True


def _planned(instance: dg.DagsterInstance, run: dg.DagsterRun) -> set[dg.AssetKey]:
    """The assets a run materializes: its selection, or (a job of assets run whole, as ``dg.materialize`` runs
    one) the materializations it planned when it started; none for an op job (maintenance, invalidation)."""
    if run.asset_selection:  # empty, not None, for a job of assets run whole
        return set(run.asset_selection)
    records = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED)
    return {r.event_log_entry.dagster_event.asset_key for r in records.records if r.event_log_entry.dagster_event}


def runs_reading(instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey]) -> list[str]:
    """The ids of the running runs that materialize any of ``keys`` (a table's readers, or the table)."""
    wanted = set(keys)
    running = instance.get_runs(filters=dg.RunsFilter(statuses=RUNNING))
    return [run.run_id for run in running if wanted & _planned(instance, run)]


def held_retention(hours: int, held: int) -> int:
    """The retention that keeps versions ``held`` hours old readable until the next pass, whole weeks of it: Delta
    refuses to read (time travel, a change feed) a version older than the table's ``deletedFileRetentionDuration``,
    so a version a reader still needs keeps it a week past its age (the table's properties change, a commit, at
    most once a week while the reader lags)."""
    week = MIN_RETENTION_HOURS
    return max(hours, week * math.ceil((held + week) / week))


def vacuum(
    spark: SparkSession, location: str, hours: int, s3: S3Settings, held: tuple[int, str] | None = None
) -> Cleaned:
    """Delete the files no version of the last ``hours`` needs, after setting the table's retention to match;
    ``held``: the age in hours of the oldest version a reader still needs, and why (:func:`held_retention`)."""
    retain = held_retention(hours, held[0]) if held else hours
    keep_retention(spark, location, retain, s3, log_hours_for(retain))
    before = stored_bytes(location)
    spark.sql(f"VACUUM {path_identifier(location)} RETAIN {retain} HOURS").collect()
    return Cleaned(retain, before, stored_bytes(location), held=held[1] if held and retain > hours else None)


def vacuum_unless_read(
    spark: SparkSession,
    instance: dg.DagsterInstance,
    location: str,
    hours: int,
    s3: S3Settings,
    readers: Iterable[dg.AssetKey],
    held: tuple[int, str] | None = None,
) -> Cleaned:
    """:func:`vacuum`, or skipped, naming the runs, while a running run reads or writes the table (``readers``:
    its key and its readers' keys)."""
    running = runs_reading(instance, readers)
    if running:
        return Cleaned(hours, skipped=f"read by running run(s) {', '.join(running)}: cleaned up by a later pass")
    return vacuum(spark, location, hours, s3, held)
