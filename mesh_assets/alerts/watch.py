"""Each domain's alert sensor: what no failed run reports, and what did not get through the first time.

On each tick it judges the freshness objective of the domain's products (the ``freshness`` check, which the
table carries as Dagster's ``FreshnessPolicy.time_window``: the UI shows the policy and Dagster's freshness
daemon its state): a table whose last publication is older than ``max_lag_hours`` is a breach, recorded as an
observation on the table (``freshness: FAIL``, shown in the UI) and told once to its owners and to the owners of
every table that reads it. The breach is the last publication's: its id is kept in the instance's key-value
storage, so the next ticks stay quiet until a new publication goes stale. Dagster 1.13 keeps its freshness
state behind private types, so the sensor judges the same rule from the last materialization, a public record.

It tells the owners of an external table, and of every table reading it, when a check run of the table failed a
blocking check (that run succeeds: it judged, it did not fail), and it retries the domain's queued alerts
(:mod:`mesh_assets.alerts.queue`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import dagster as dg

from mesh_assets.alerts.notify import Alert, chat_channel, email_addresses, run_url
from mesh_assets.alerts.queue import Outbox, retry
from mesh_assets.checks.external import checks_job_name
from mesh_assets.compat import kv_get, kv_set
from mesh_assets.graph.resolve import Table
from mesh_assets.model.checks import Freshness
from mesh_assets.model.product import Output
from mesh_assets.settings import AlertSettings

BREACH_PREFIX = "mesh/alerts/freshness/"
FRESHNESS_METADATA = "freshness"
"""The metadata key of the observation that shows a table's freshness breach (``FAIL``) and its end (``PASS``)."""
CHECK_RUNS_LOOKBACK = timedelta(days=1)
"""A sensor with no cursor yet tells of the check runs that finished this long ago at most."""
BATCH = 100


def clock() -> datetime:
    """The sensor's clock: UTC."""
    return datetime.now(UTC)


def alert_sensor_name(domain: str) -> str:
    return f"{domain}__alerts"


def freshness_objective(table: Table) -> Freshness | None:
    """The table's ``freshness`` check: the objective its ``FreshnessPolicy`` states."""
    if isinstance(table.spec, Output):
        return next((c for c in table.spec.checks if isinstance(c, Freshness)), None)
    return None


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _recipient(table: Table) -> dict:
    """The fields of an alert that address ``table``'s owners."""
    return {
        "domain": table.domain,
        "product": table.product,
        "table": table.name,
        "owner": table.owner,
        "channel": chat_channel(table.contacts),
        "emails": email_addresses(table.contacts),
    }


def _to(table: Table, kind: str, message: str, partitions: list[str], **extra: str | None) -> Alert:
    return Alert(kind=kind, message=message, partitions=partitions, **_recipient(table), **extra)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Breach:
    """A table whose last publication is older than its freshness objective allows."""

    table: Table
    publication: int
    """The last materialization's storage id: what identifies the breach."""
    published_at: float
    partition: str | None
    max_lag_hours: float
    age_hours: float

    def describe(self) -> str:
        where = f" (partition {self.partition})" if self.partition else ""
        return (
            f"{self.table.ref} missed its freshness objective: last published {_stamp(self.published_at)}{where}, "
            f"{self.age_hours:.3g} h ago; max_lag_hours is {self.max_lag_hours:g} h"
        )

    def observation(self) -> dg.AssetObservation:
        return dg.AssetObservation(
            asset_key=self.table.key,
            metadata={
                FRESHNESS_METADATA: "FAIL",
                "last_published": _stamp(self.published_at),
                "age_hours": round(self.age_hours, 3),
                "max_lag_hours": self.max_lag_hours,
                "message": self.describe(),
            },
        )


def breaches(instance: dg.DagsterInstance, tables: Sequence[Table], at: datetime) -> tuple[list[Breach], set[Table]]:
    """The tables past their freshness objective now, and those within it (never-published ones are neither:
    there is no publication to be late from, as for Dagster's own ``UNKNOWN``)."""
    late, fresh = [], set()
    for table in tables:
        objective = freshness_objective(table)
        if objective is None:
            continue
        records = instance.fetch_materializations(table.key, limit=1).records
        if not records:
            continue
        last = records[0]
        age = (at.timestamp() - last.timestamp) / 3600
        if age >= objective.max_lag_hours:
            late.append(
                Breach(table, last.storage_id, last.timestamp, last.partition_key, objective.max_lag_hours, age)
            )
        else:
            fresh.add(table)
    return late, fresh


def _freshness(
    instance: dg.DagsterInstance,
    tables: Sequence[Table],
    readers: Mapping[dg.AssetKey, Sequence[Table]],
    now: datetime,
    send: Callable[[Alert], None],
) -> list[dg.AssetObservation]:
    """Tell each new breach once, to the table's owners and its readers'; mark breaches and their ends."""
    late, fresh = breaches(instance, tables, now)
    keys = {f"{BREACH_PREFIX}{t.domain}/{t.name}": t for t in tables if freshness_objective(t) is not None}
    told = kv_get(instance, set(keys)) if keys else {}
    events, updates = [], {}
    for breach in late:
        key = f"{BREACH_PREFIX}{breach.table.domain}/{breach.table.name}"
        if told.get(key) == str(breach.publication):
            continue
        updates[key] = str(breach.publication)
        events.append(breach.observation())
        partitions = [breach.partition] if breach.partition else []
        send(_to(breach.table, "freshness objective missed", breach.describe(), partitions))
        for reader in readers.get(breach.table.key, ()):
            message = f"{breach.describe()}; {reader.ref} reads it"
            send(_to(reader, "input freshness objective missed", message, partitions, source=breach.table.ref))
    for key, table in keys.items():
        if told.get(key) and table in fresh:
            updates[key] = ""
            events.append(dg.AssetObservation(asset_key=table.key, metadata={FRESHNESS_METADATA: "PASS"}))
    if updates:
        kv_set(instance, updates)
    return events


@dataclass(frozen=True)
class CheckFailure:
    """A check run's failed blocking checks on one external table."""

    table: Table
    run_id: str
    partitions: list[str]
    checks: list[str]
    message: str


def _withheld(table: Table, message: str) -> str:
    if table.classification.alert_messages:
        return message
    return f"message withheld: {table.ref} is classified {table.classification}, see the run"


def failed_checks(
    instance: dg.DagsterInstance, external: Sequence[Table], cursor: int | None, now: datetime
) -> tuple[list[CheckFailure], int | None]:
    """The failed blocking checks of the ``external`` tables' check runs that succeeded after ``cursor`` (a
    storage id; None: those of the last day), and the new cursor."""
    jobs = {checks_job_name(t.domain, t.name): t for t in external}
    if not jobs:
        return [], cursor
    since = None if cursor is not None else (now - CHECK_RUNS_LOOKBACK).timestamp()
    records = instance.fetch_run_status_changes(
        dg.RunStatusChangeRecordsFilter(
            dg.DagsterEventType.RUN_SUCCESS, after_storage_id=cursor, after_timestamp=since
        ),
        limit=BATCH,
        ascending=True,
    ).records
    found = []
    for record in records:  # every run's success: SQLite and Postgres storages cannot filter by job
        cursor = record.storage_id
        table = jobs.get(record.event_log_entry.job_name or "")
        if table is None:
            continue
        run_id = record.event_log_entry.run_id
        evaluations = [
            r.event_log_entry.dagster_event.event_specific_data
            for r in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
            if r.event_log_entry.dagster_event is not None
        ]
        failed = [e for e in evaluations if not e.passed and e.blocking and e.asset_key == table.key]
        if failed:
            found.append(
                CheckFailure(
                    table=table,
                    run_id=run_id,
                    partitions=sorted({e.partition for e in failed if e.partition}),
                    checks=sorted({e.check_name for e in failed}),
                    message=_withheld(table, "; ".join(dict.fromkeys(e.description or e.check_name for e in failed))),
                )
            )
    return found, cursor


def _check_alerts(
    failure: CheckFailure, readers: Mapping[dg.AssetKey, Sequence[Table]], settings: AlertSettings
) -> list[Alert]:
    table, link = failure.table, run_url(failure.run_id, settings)
    owner = _to(table, "blocking check failed", failure.message, failure.partitions, run_url=link)
    owner = replace(owner, checks=failure.checks, run_id=failure.run_id)
    alerts = [owner]
    for reader in readers.get(table.key, ()):
        message = (
            f"{table.ref} failed its blocking checks; {reader.ref} waits for it (its runs refuse these partitions). "
            f"{failure.message}"
        )
        alerts.append(
            replace(owner, **_recipient(reader), kind="input check failed", message=message, source=table.ref)
        )
    return alerts


def evaluate_alerts(
    instance: dg.DagsterInstance,
    domain: str,
    tables: Sequence[Table],
    external: Sequence[Table],
    readers: Mapping[dg.AssetKey, Sequence[Table]],
    settings: AlertSettings,
    cursor: str | None,
    now: datetime,
    warn: Callable[[str], None],
) -> dg.SensorResult:
    """One tick of ``domain``'s alert sensor: retry what waits, then tell new breaches and failed checks."""
    retry(instance, domain, settings, warn)
    outbox = Outbox(instance, domain, "alerts")

    def send(alert: Alert) -> None:
        outbox.send(alert, settings, warn)

    events = _freshness(instance, tables, readers, now, send)
    state = json.loads(cursor) if cursor else {}
    failures, state["check_runs"] = failed_checks(instance, external, state.get("check_runs"), now)
    for failure in failures:
        for alert in _check_alerts(failure, readers, settings):
            send(alert)
    return dg.SensorResult(asset_events=events, cursor=json.dumps(state))


def build_alert_sensor(
    domain: str,
    tables: Sequence[Table],
    external: Sequence[Table],
    readers: Mapping[dg.AssetKey, Sequence[Table]],
    settings: AlertSettings,
) -> dg.SensorDefinition:
    """``domain``'s alert sensor over its products' tables and external tables with blocking checks; running
    unless alerts are off. ``readers``: the tables (any domain) that read each of them."""
    checked = [t for t in external if t.blocking_checks]

    @dg.sensor(
        name=alert_sensor_name(domain),
        description=f"Tells {domain}'s owners and readers of missed freshness objectives and failed checks of its "
        "external tables, and retries alerts that did not get through.",
        minimum_interval_seconds=settings.interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
    )
    def _alerts(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate_alerts(
            context.instance,
            domain,
            tables,
            checked,
            readers,
            settings,
            context.cursor,
            clock(),
            context.log.warning,
        )

    return _alerts
