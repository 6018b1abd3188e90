"""One sensor per domain with external tables: report the partitions each new Delta commit changed.

The cursor holds, per table (``"<domain>.<table>"``), the version read up to and its commit time
(:class:`~mesh_assets.automation.delta_log.Seen`). Each tick reports the partitions whose data changed
since (see :mod:`~mesh_assets.automation.delta_log`) as runless, partitioned ``AssetMaterialization``
events (one per partition per tick, with the versions), so the automation sensors downstream react to
external data the way they react to Mesh's own writes. A table with checks also gets one check run per
tick over the partitions reported; its consumers wait for that result.

A table the cursor does not know yet starts where this instance's last report of it left off (the demo
reports what it landed, and ``make dev`` must not recompute it), else from its whole current snapshot.
A partition value that is not a partition of the table (off its UTC grid, in the future, before its start
date, an undeclared region) is an outside writer's mistake: it is reported by table, version and value and
skipped, never a partition key. A log that cannot be read is that table's problem: it is skipped for the
tick with a log line, its owner gets one alert, the other tables are observed, and it is read again next tick.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from mesh_assets.alerts.notify import Alert, send_or_warn
from mesh_assets.automation.delta_log import Changes, Seen, changes_since, partition_key
from mesh_assets.automation.log_files import LogFiles
from mesh_assets.checks.external import build_checks_job, checks_run_config
from mesh_assets.graph.resolve import Table
from mesh_assets.model.grain import region_key
from mesh_assets.settings import AutomationSettings, S3Settings
from mesh_assets.storage.resource import MeshResource

if TYPE_CHECKING:
    from mesh_assets.storage.tables import TableRegistry

log = logging.getLogger(__name__)
LOCAL = LogFiles(S3Settings())
"""Log files on the local disk (or in the default AWS S3 configuration)."""

OBSERVER_SUFFIX = "__observe_external_tables"
THROUGH_VERSION, THROUGH_MS = "observed_through_version", "observed_through_ms"
"""Event metadata: how far the log was read when the event was reported (where a later first tick starts)."""

Recorded = Callable[[Table], Seen | None]


def observer_name(domain: str) -> str:
    return f"{domain}{OBSERVER_SUFFIX}"


def _keys(table: Table, changes: Changes, warn: Callable[[str], None]) -> dict[str | None, set[int]]:
    """Partition key -> versions, for the changed partitions that are partitions of ``table``."""
    now = datetime.now(UTC)
    out: dict[str | None, set[int]] = {}
    for partition, versions in changes.partitions.items():
        if not table.grain.partitioned:
            out.setdefault(None, set()).update(versions)
            continue
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
        out.setdefault(key, set()).update(versions)
    return out


def observe_table(
    table: Table,
    location: str,
    seen: Seen | None,
    warn: Callable[[str], None] = log.warning,
    files: LogFiles = LOCAL,
) -> tuple[list[dg.AssetMaterialization], Seen | None]:
    """Materializations for the partitions that changed after ``seen``, and how far the log was read."""
    changes = changes_since(files, location, seen)
    if changes is None:
        return [], seen
    through = {THROUGH_VERSION: changes.seen.version, THROUGH_MS: changes.seen.committed_ms}
    events = [
        dg.AssetMaterialization(
            asset_key=table.key,
            partition=key,
            metadata={
                "delta_versions": sorted(versions),
                "delta_version": max(versions),
                "location": location,
                **{k: v for k, v in through.items() if v is not None},
            },
        )
        for key, versions in sorted(_keys(table, changes, warn).items(), key=lambda item: item[0] or "")
    ]
    return events, changes.seen


def _entry(value: Any) -> tuple[Seen | None, str | None]:
    """A cursor entry: how far the table was read, and the error its log gave last tick (if any)."""
    if isinstance(value, int):  # a cursor written before commit times were kept
        return Seen(value), None
    seen = Seen(value["version"], value.get("committed_ms")) if "version" in value else None
    return seen, value.get("unreadable")


def _store(seen: Seen | None, unreadable: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {} if seen is None else {"version": seen.version, "committed_ms": seen.committed_ms}
    return out | ({"unreadable": unreadable} if unreadable else {})


def _unreadable(table: Table, location: str, exc: Exception) -> Alert:
    message = (
        f"the Delta log of {table.ref} at {location} cannot be read ({type(exc).__name__}: {exc}); "
        "the table is skipped until it reads again"
    )
    channel = next((c.value for c in table.contacts if c.kind == "chat"), "")
    return Alert("external log unreadable", table.domain, table.product, table.name, table.owner, channel, message)


def observe(
    tables: list[Table],
    registry: TableRegistry,
    cursor: dict[str, Any],
    warn: Callable[[str], None] = log.warning,
    files: LogFiles = LOCAL,
    recorded: Recorded = lambda _table: None,
) -> tuple[list[dg.AssetMaterialization], dict[str, Any]]:
    """One tick over the external ``tables`` (their logs read through ``files``); ``recorded`` is where a
    table the cursor does not know starts (how far this instance's reports of it already went)."""
    events: list[dg.AssetMaterialization] = []
    cursor = dict(cursor)
    for table in tables:
        location = registry.location(table.domain, table.name)
        seen, failed = _entry(cursor[table.ref]) if table.ref in cursor else (recorded(table), None)
        try:
            found, seen = observe_table(table, location, seen, warn, files)
        except Exception as exc:  # any failure to read one table's log is that table's, not the domain's
            alert = _unreadable(table, location, exc)
            warn(alert.message)
            if failed is None:
                send_or_warn(alert, warn)
            cursor[table.ref] = _store(seen, alert.message)
            continue
        events += found
        if seen is not None:
            cursor[table.ref] = _store(seen)
        else:
            cursor.pop(table.ref, None)
    return events, cursor


def recorded_in(instance: dg.DagsterInstance) -> Recorded:
    """How far ``instance``'s last report of a table read its log (None: never reported)."""

    def recorded(table: Table) -> Seen | None:
        event = instance.get_latest_materialization_event(table.key)
        metadata = event.asset_materialization.metadata if event and event.asset_materialization else {}
        if THROUGH_VERSION not in metadata:
            return None
        committed = metadata.get(THROUGH_MS)
        return Seen(metadata[THROUGH_VERSION].value, committed.value if committed else None)

    return recorded


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
            tables, mesh.registry, cursor, context.log.warning, files, recorded_in(context.instance)
        )
        requests = check_requests(events, {k: j.name for k, j in jobs.items()})
        return dg.SensorResult(asset_events=events, run_requests=requests, cursor=json.dumps(cursor, sort_keys=True))

    return _observer
