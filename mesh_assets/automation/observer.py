"""One sensor per domain with external tables: report what each new Delta commit published.

The cursor is ``{"<domain>.<table>": last version seen}``. Each tick reads only the commits after it,
collects the partitions their ``add``/``remove`` actions name and reports each as a runless, partitioned
``AssetMaterialization`` (one per partition per tick, with the commit versions), so the automation
sensors downstream react to external data the way they react to Mesh's own writes. A table with checks
also gets one check run per tick over the partitions reported; its consumers wait for that result. A
partition value that is not a UTC day (or hour) of the table's partitioning, or that lies in the future, is an
outside writer's mistake: it is reported by table, version and value and skipped, never turned into a
partition key, and never stops the observer at that commit.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import dagster as dg

from mesh_assets.automation.delta_log import new_commits, partition_key
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


def observer_name(domain: str) -> str:
    return f"{domain}{OBSERVER_SUFFIX}"


def observe_table(
    table: Table,
    location: str,
    after: int | None,
    warn: Callable[[str], None] = log.warning,
    files: LogFiles = LOCAL,
) -> tuple[list[dg.AssetMaterialization], int | None]:
    """Materializations for the partitions the commits after ``after`` touched, and the last version read."""
    commits = new_commits(files, location, after)
    if not commits:
        return [], after
    now = datetime.now(UTC)
    versions: dict[str | None, list[int]] = {}
    for commit in commits:
        if not commit.touched:
            continue
        if not table.grain.partitioned:
            versions.setdefault(None, []).append(commit.version)
            continue
        for values in commit.partitions:
            found = dict(values)
            value = found.get(table.partition_column)
            try:
                key = partition_key(value, table.grain, now)
            except ValueError as exc:
                warn(
                    f"{table.ref} version {commit.version}: partition value {value!r} of "
                    f"{table.partition_column} {exc}; skipped"
                )
                continue
            if key is None or key[:10] < table.start_date.isoformat():
                continue
            if table.regions:
                region = found.get(table.region_column)
                if region not in table.regions:
                    continue  # a region the table does not declare: not a partition consumers wait for
                key = region_key(key, region)
            versions.setdefault(key, []).append(commit.version)
    events = [
        dg.AssetMaterialization(
            asset_key=table.key,
            partition=key,
            metadata={"delta_versions": sorted(set(v)), "delta_version": max(v), "location": location},
        )
        for key, v in sorted(versions.items(), key=lambda item: item[0] or "")
    ]
    return events, commits[-1].version


def observe(
    tables: list[Table],
    registry: TableRegistry,
    cursor: dict[str, int],
    warn: Callable[[str], None] = log.warning,
    files: LogFiles = LOCAL,
) -> tuple[list[dg.AssetMaterialization], dict[str, int]]:
    """One tick over the external ``tables`` (their logs read through ``files``)."""
    events: list[dg.AssetMaterialization] = []
    cursor = dict(cursor)
    for table in tables:
        location = registry.location(table.domain, table.name)
        found, last = observe_table(table, location, cursor.get(table.ref), warn, files)
        events += found
        if last is not None:
            cursor[table.ref] = last
    return events, cursor


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
        events, cursor = observe(tables, mesh.registry, cursor, context.log.warning, LogFiles(mesh.settings.s3))
        requests = check_requests(events, {k: j.name for k, j in jobs.items()})
        return dg.SensorResult(asset_events=events, run_requests=requests, cursor=json.dumps(cursor, sort_keys=True))

    return _observer
