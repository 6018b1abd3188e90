"""One sensor per domain with external tables: report the partitions each new Delta commit changed.

The cursor holds, per table (``"<domain>.<table>"``), the version read up to, its commit time and the newest
data file time (:class:`~mesh_assets.automation.delta_log.Seen`). Each tick reports the partitions whose data
changed since (see :mod:`~mesh_assets.automation.delta_log`) as runless, partitioned ``AssetMaterialization``
events (one per partition per tick, with the versions and, where the log's stats tell, the partition's rows),
so the automation sensors downstream react to external data the way they react to Mesh's own writes. A table
with checks also gets one check run per tick over the partitions reported; its consumers wait for that result.

Each reported partition carries a data version, ``delta-v<N>`` of the newest commit that changed it, like
a Mesh output's. Dagster reads an external asset's partition versions from *observations* (it compares the
observations after what a consumer read with those before), so the tick reports each partition as an
``AssetObservation`` with that version too, all of them before the tick's materializations: what a consumer
reads is the table's latest materialization, so the tick's own observations are never "newer" than it.

A table the cursor does not know yet starts where this instance's last report of it left off (the demo
reports what it landed, and ``make dev`` must not recompute it), else from its whole current snapshot. When
the log was cleaned up past the cursor, the snapshot is compared with the partitions reported before
(:mod:`~mesh_assets.automation.reports`): new and removed partitions and those whose rows changed are reported,
rewrites that kept the rows are not, and the comparison is logged.
A partition value that is not a partition of the table (off its UTC grid, in the future, before its start
date, an undeclared region) is an outside writer's mistake: it is reported by table, version and value and
skipped, never a partition key. A log that cannot be read is that table's problem: it is skipped for the
tick with a log line, its owner gets one alert, the other tables are observed, and it is read again next tick.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.alerts.notify import DEFAULT_ALERTS, Alert, chat_channel, email_addresses, send_or_warn
from mesh_assets.alerts.queue import Outbox
from mesh_assets.automation.delta_log import Changes, Read, Seen, changes_since, partition_key
from mesh_assets.automation.log_files import LogFiles
from mesh_assets.automation.reports import (
    ROWS,
    THROUGH_FILES_MS,
    THROUGH_MS,
    THROUGH_VERSION,
    InstanceReports,
    NoReports,
    Reports,
)
from mesh_assets.checks.external import build_checks_job, checks_run_config
from mesh_assets.compat import DATA_VERSION_TAG
from mesh_assets.graph.resolve import Table
from mesh_assets.model.grain import region_key
from mesh_assets.model.names import observer_name
from mesh_assets.run.record import data_version
from mesh_assets.settings import AlertSettings, AutomationSettings, S3Settings
from mesh_assets.storage.resource import MeshResource

if TYPE_CHECKING:
    from mesh_assets.storage.tables import TableRegistry

log = logging.getLogger(__name__)
LOCAL = LogFiles(S3Settings())
"""Log files on the local disk (or in the default AWS S3 configuration)."""

NO_REPORTS = NoReports()


@dataclass
class Found:
    """One partition key's change: the versions that changed it, its rows now (None: unknown) and, after a
    clean-up, whether it has files written after the cursor's."""

    versions: set[int] = field(default_factory=set)
    rows: int | None = 0
    newer: bool = False


def _keys(table: Table, changes: Changes, warn: Callable[[str], None]) -> dict[str | None, Found]:
    """Partition key -> what changed, for the changed partitions that are partitions of ``table``."""
    now = datetime.now(UTC)
    out: dict[str | None, Found] = {}
    for partition, versions in changes.partitions.items():
        key: str | None = None
        if table.grain.partitioned:
            found = dict(partition)
            value = found.get(table.partition_column)
            where = f"{table.ref} version {max(versions)}: partition value {value!r} of {table.partition_column}"
            try:
                key = partition_key(value, table.grain, now)
            except ValueError as exc:
                warn(f"{where} {exc}; skipped")
                continue
            if key is None or key[:10] < table.start_date.isoformat():
                warn(f"{where} is before the table's start date {table.start_date}; skipped")
                continue
            if table.end_date is not None and key[:10] >= table.end_date.isoformat():
                warn(f"{where} is on or after the table's end date {table.end_date} (its partitions stop); skipped")
                continue
            if table.regions:
                region = found.get(table.region_column)
                if region not in table.regions:
                    warn(f"{where}: region {region!r} is not one of {', '.join(table.regions)}; skipped")
                    continue
                key = region_key(key, region)
        entry = out.setdefault(key, Found())
        entry.versions |= versions
        entry.newer |= partition in changes.newer
        rows = changes.rows.get(partition)
        entry.rows = None if entry.rows is None or rows is None else entry.rows + rows
    return out


def _after_commits(table: Table, found: dict[str | None, Found], reports: Reports) -> dict[str | None, Found]:
    """The commits gave each partition's change in rows; its rows now add the rows it had when last reported."""
    before = reports.rows(table, [k for k, f in found.items() if f.rows is not None])
    for key, entry in found.items():
        had = before.get(key)
        entry.rows = None if had is None or entry.rows is None else had + entry.rows
    return found


def _changed(entry: Found, rows_before: int | None) -> bool:
    """Whether a partition in both the reports and the snapshot changed: its rows differ, or, where either
    count is unknown, it has files written after the cursor's."""
    if entry.rows is None or rows_before is None:
        return entry.newer
    return entry.rows != rows_before


def _after_clean_up(
    table: Table, changes: Changes, found: dict[str | None, Found], reports: Reports, warn: Callable[[str], None]
) -> dict[str | None, Found]:
    """The partitions whose data changed while the commits that said so were cleaned up, by comparing the
    snapshot with the partitions already reported: new ones, removed ones (reported with no rows), and those
    whose rows differ. A partition with files written after the cursor but the rows it had is a rewrite
    (OPTIMIZE, ZORDER) and is not reported. Without earlier reports, every partition with newer files is."""
    known = reports.reported(table)
    if known is None:
        return {key: entry for key, entry in found.items() if entry.newer}
    out = {key: entry for key, entry in found.items() if key not in known or _changed(entry, known[key])}
    removed = {key: Found({changes.seen.version}) for key, rows in known.items() if key not in found and rows != 0}
    rewritten = sum(1 for key, entry in found.items() if entry.newer and key not in out)
    warn(
        f"the Delta log of {table.ref} was cleaned up past the observer's cursor; its snapshot at version "
        f"{changes.seen.version} was compared with the partitions reported before: "
        f"{sum(k not in known for k in out)} new, {len(out) - sum(k not in known for k in out)} changed, "
        f"{len(removed)} removed, {rewritten} rewritten with the same rows (not reported)"
    )
    return out | removed


def observe_table(
    table: Table,
    location: str,
    seen: Seen | None,
    warn: Callable[[str], None] = log.warning,
    files: LogFiles = LOCAL,
    reports: Reports = NO_REPORTS,
) -> tuple[list[dg.AssetMaterialization], Seen | None]:
    """Materializations for the partitions that changed after ``seen``, and how far the log was read."""
    changes = changes_since(files, location, seen)
    if changes is None:
        return [], seen
    found = _keys(table, changes, warn)
    if changes.read is Read.COMMITS:
        found = _after_commits(table, found, reports)
    elif changes.read is Read.CLEANED_UP:
        found = _after_clean_up(table, changes, found, reports, warn)
    through = {
        THROUGH_VERSION: changes.seen.version,
        THROUGH_MS: changes.seen.committed_ms,
        THROUGH_FILES_MS: changes.seen.files_ms,
    }
    events = [
        dg.AssetMaterialization(
            asset_key=table.key,
            partition=key,
            metadata={
                "delta_versions": sorted(entry.versions),
                "delta_version": max(entry.versions),
                "location": location,
                **({ROWS: entry.rows} if entry.rows is not None else {}),
                **{k: v for k, v in through.items() if v is not None},
            },
            tags={DATA_VERSION_TAG: data_version(max(entry.versions)).value},
        )
        for key, entry in sorted(found.items(), key=lambda item: item[0] or "")
    ]
    return events, changes.seen


def _entry(value: Any) -> tuple[Seen | None, str | None]:
    """A cursor entry: how far the table was read, and the error its log gave last tick (if any)."""
    if isinstance(value, int):  # a cursor written before commit times were kept
        return Seen(value), None
    if "version" not in value:
        return None, value.get("unreadable")
    return Seen(value["version"], value.get("committed_ms"), value.get("files_ms")), value.get("unreadable")


def _store(seen: Seen | None, unreadable: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if seen is not None:
        out = {"version": seen.version, "committed_ms": seen.committed_ms, "files_ms": seen.files_ms}
    return out | ({"unreadable": unreadable} if unreadable else {})


def _unreadable(table: Table, location: str, exc: Exception) -> Alert:
    message = (
        f"the Delta log of {table.ref} at {location} cannot be read ({type(exc).__name__}: {exc}); "
        "the table is skipped until it reads again"
    )
    return Alert(
        "external log unreadable",
        table.domain,
        table.product,
        table.name,
        table.owner,
        chat_channel(table.contacts),
        message,
        emails=email_addresses(table.contacts),
    )


def observe(
    tables: list[Table],
    registry: TableRegistry,
    cursor: dict[str, Any],
    warn: Callable[[str], None] = log.warning,
    files: LogFiles = LOCAL,
    reports: Reports = NO_REPORTS,
    alerts: AlertSettings = DEFAULT_ALERTS,
    outbox: Outbox | None = None,
) -> tuple[list[dg.AssetMaterialization], dict[str, Any]]:
    """One tick over the external ``tables`` (their logs read through ``files``); ``reports`` are this
    instance's earlier reports: where a table the cursor does not know starts, and each partition's rows.
    ``outbox``: where an alert that did not get through waits for a retry (None: it is only warned)."""
    events: list[dg.AssetMaterialization] = []
    cursor = dict(cursor)
    for table in tables:
        location = registry.location(table.domain, table.name)
        seen, failed = _entry(cursor[table.ref]) if table.ref in cursor else (reports.through(table), None)
        try:
            found, seen = observe_table(table, location, seen, warn, files, reports)
        except Exception as exc:  # any failure to read one table's log is that table's, not the domain's
            alert = _unreadable(table, location, exc)
            warn(alert.message)
            if failed is None and outbox is not None:
                outbox.send(alert, alerts, warn)
            elif failed is None:
                send_or_warn(alert, alerts, warn)
            cursor[table.ref] = _store(seen, alert.message)
            continue
        events += found
        if seen is not None:
            cursor[table.ref] = _store(seen)
        else:
            cursor.pop(table.ref, None)
    return events, cursor


def with_observations(events: list[dg.AssetMaterialization]) -> list[dg.AssetObservation | dg.AssetMaterialization]:
    """The tick's asset events: each reported partition observed with its data version, then the reports."""
    observed = [dg.AssetObservation(e.asset_key, partition=e.partition, tags=dict(e.tags)) for e in events]
    return [*observed, *events]


def check_requests(events: list[dg.AssetMaterialization], jobs: dict[dg.AssetKey, str]) -> list[dg.RunRequest]:
    """One check run per table with checks, over the partitions this tick reported, keyed by the commits."""
    by_table: dict[dg.AssetKey, list[dg.AssetMaterialization]] = {}
    for event in events:
        if event.asset_key in jobs:
            by_table.setdefault(event.asset_key, []).append(event)
    requests = []
    for key, found in by_table.items():
        domain, table = key.path
        version = max(e.metadata["delta_version"].value for e in found)
        partitions = [e.partition for e in found if e.partition is not None]
        requests.append(
            dg.RunRequest(
                run_key=f"{key.to_user_string()}@{version}",
                job_name=jobs[key],
                run_config=checks_run_config(domain, table, partitions),
                tags={"mesh/checks_of": key.to_user_string(), "mesh/partitions": ",".join(partitions)[:200]},
            )
        )
    return requests


def build_observer(domain: str, tables: list[Table], settings: AutomationSettings) -> dg.SensorDefinition | None:
    """The observer of ``domain``'s external ``tables``; None when it has none."""
    if not tables:
        return None
    jobs = {t.key: job for t in tables if (job := build_checks_job(t)) is not None}

    @dg.sensor(
        name=observer_name(domain),
        description=f"Reports new commits of {domain}'s external Delta tables as materializations.",
        jobs=list(jobs.values()) or None,
        minimum_interval_seconds=settings.observer_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
    )
    def _observer(context: dg.SensorEvaluationContext, mesh: MeshResource) -> dg.SensorResult:
        cursor = json.loads(context.cursor) if context.cursor else {}
        files = LogFiles(mesh.settings.s3)
        events, cursor = observe(
            tables,
            mesh.registry,
            cursor,
            context.log.warning,
            files,
            InstanceReports(context.instance),
            mesh.settings.alerts,
            Outbox(context.instance, domain, "observer"),
        )
        requests = check_requests(events, {k: j.name for k, j in jobs.items()})
        return dg.SensorResult(
            asset_events=with_observations(events), run_requests=requests, cursor=json.dumps(cursor, sort_keys=True)
        )

    return _observer
