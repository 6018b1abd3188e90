"""Each domain's failure alerts: a run-failure sensor tells the owners of a failed run's assets what failed.

The sensor reads the run and its event log, not the asset body: a run that dies without running Python (its
worker killed for memory or lost, then failed by run monitoring) alerts like one whose step raised. Per failed
step, the step's assets that did not publish (all of them when each published some partitions, as a refusal
of some partitions does) get one alert each; with no failed step, every planned asset that did not publish.
A failed check run of an external table (killed, or its Spark job lost) alerts the table's owners and its
readers': its partitions stay unchecked and the readers wait.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import dagster as dg

from mesh_assets.alerts.notify import Alert, backfill_url, chat_channel, email_addresses, run_url
from mesh_assets.alerts.queue import Outbox
from mesh_assets.checks.external import checks_job_name, checks_op_name
from mesh_assets.graph.resolve import Table
from mesh_assets.settings import AlertSettings

BACKFILL_TAG = "dagster/backfill"
"""The tag Dagster gives every run of a backfill: its id."""
MESSAGE_LIMIT = 2000
"""A chat message, not a stack trace: the run's link leads to the rest."""


def failure_sensor_name(domain: str) -> str:
    return f"{domain}__failure_alerts"


@dataclass(frozen=True)
class Failed:
    """One asset a failed run did not deliver: why, and which partitions and checks."""

    key: dg.AssetKey
    kind: str
    message: str
    partitions: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)


@dataclass
class _RunLog:
    """What the event log says about a run: planned partitions by step and asset, what published, what failed."""

    planned: dict[str | None, dict[dg.AssetKey, list[str]]] = field(default_factory=dict)
    published: set[dg.AssetKey] = field(default_factory=set)
    step_failures: list[dg.DagsterEvent] = field(default_factory=list)


def _read_log(instance: dg.DagsterInstance, run_id: str) -> _RunLog:
    kinds = {
        dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
        dg.DagsterEventType.ASSET_MATERIALIZATION,
        dg.DagsterEventType.STEP_FAILURE,
    }
    log = _RunLog()
    for record in instance.get_records_for_run(run_id, of_type=kinds).records:
        event = record.event_log_entry.dagster_event
        if event is None:
            continue
        if event.is_step_failure:
            log.step_failures.append(event)
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            log.published.add(event.asset_key)
        elif event.asset_key is not None:
            partitions = log.planned.setdefault(event.step_key, {}).setdefault(event.asset_key, [])
            partitions += _planned_partitions(event)
    return log


def _planned_partitions(event: dg.DagsterEvent) -> list[str]:
    """One key per event, or (on storages that batch them) the planned subset of a range."""
    if event.partition is not None:
        return [event.partition]
    subset = event.asset_materialization_planned_data.partitions_subset
    return list(subset.get_partition_keys()) if subset is not None else []


def _undelivered(assets: dict[dg.AssetKey, list[str]], published: set[dg.AssetKey]) -> list[dg.AssetKey]:
    missing = [key for key in assets if key not in published]
    return missing or list(assets)


def _step_message(event: dg.DagsterEvent) -> str:
    """A ``dg.Failure``'s description, else the innermost error (the user's, under Dagster's wrapper)."""
    data = event.step_failure_data
    if data.user_failure_data is not None and data.user_failure_data.description:
        return data.user_failure_data.description
    error = data.error
    while error is not None and error.cause is not None:
        error = error.cause
    return error.message.strip() if error is not None else event.message or "step failed"


def _from_step(event: dg.DagsterEvent, key: dg.AssetKey, planned: list[str]) -> Failed:
    """A refusal (a ``failed_partitions`` metadata entry) names its partitions and checks; anything else failed
    the run's partitions of the asset."""
    user = event.step_failure_data.user_failure_data
    metadata = user.metadata if user is not None else {}
    message = _step_message(event)[:MESSAGE_LIMIT]
    refused = metadata.get("failed_partitions")
    if refused is None:
        return Failed(key, "run failed", message, planned)
    checks = list(metadata["checks"].value) if "checks" in metadata else []
    kind = "blocking check failed" if checks else "inputs not ready"
    return Failed(key, kind, message, list(refused.value), checks)


def failed_assets(instance: dg.DagsterInstance, run_id: str, run_failure: dg.DagsterEvent) -> list[Failed]:
    """The assets ``run_id`` failed to deliver, each with the failure that stopped it."""
    log = _read_log(instance, run_id)
    if not log.step_failures:
        message = (run_failure.message or "run failed")[:MESSAGE_LIMIT]
        every: dict[dg.AssetKey, list[str]] = {}
        for assets in log.planned.values():
            for key, partitions in assets.items():
                every.setdefault(key, []).extend(partitions)
        return [Failed(key, "run failed", message, every[key]) for key in _undelivered(every, log.published)]
    failed = []
    for event in log.step_failures:
        assets = log.planned.get(event.step_key, {})
        failed += [_from_step(event, key, assets[key]) for key in _undelivered(assets, log.published)]
    return failed


def check_run_failed(
    instance: dg.DagsterInstance, run: dg.DagsterRun, run_failure: dg.DagsterEvent, table: Table
) -> Failed:
    """An external table's check run that failed (killed, or its Spark job lost) judged none of its partitions:
    they stay unchecked, and its readers wait for them."""
    log = _read_log(instance, run.run_id)
    message = _step_message(log.step_failures[0]) if log.step_failures else (run_failure.message or "run failed")
    config = run.run_config.get("ops", {}).get(checks_op_name(table.domain, table.name), {}).get("config", {})
    partitions = list(config.get("partitions", []))
    return Failed(table.key, "check run failed", message[:MESSAGE_LIMIT], partitions, list(table.blocking_checks))


def _message(table: Table, failed: Failed) -> str:
    """The failure's message, unless ``table``'s classification keeps it out of alerts (a Spark error can quote a
    row): then what failed and where, and the run's page to read the rest."""
    if table.classification.alert_messages:
        return failed.message
    return f"{failed.kind}; message withheld: {table.ref} is classified {table.classification}, see the run"


def _alert(table: Table, failed: Failed, run_id: str, settings: AlertSettings) -> Alert:
    return Alert(
        kind=failed.kind,
        domain=table.domain,
        product=table.product,
        table=table.name,
        owner=table.owner,
        channel=chat_channel(table.contacts),
        message=_message(table, failed),
        partitions=failed.partitions,
        checks=failed.checks,
        run_id=run_id,
        run_url=run_url(run_id, settings),
        emails=email_addresses(table.contacts),
    )


def _consumer_alert(consumer: Table, table: Table, failed: Failed, run_id: str, settings: AlertSettings) -> Alert:
    """Tells ``consumer``'s owners that partitions of ``table`` they read were refused (and why)."""
    alert = _alert(consumer, failed, run_id, settings)
    if failed.kind == "check run failed":
        message = f"{table.ref}'s checks did not run; {consumer.ref} waits for them. {_message(table, failed)}"
        return replace(alert, kind="input check failed", message=message[:MESSAGE_LIMIT], source=table.ref)
    message = f"{table.ref} was not published ({failed.kind}); {consumer.ref} waits for it. {_message(table, failed)}"
    return replace(alert, kind="input refused", message=message[:MESSAGE_LIMIT], source=table.ref)


def build_failure_sensor(
    domain: str,
    tables: Iterable[Table],
    settings: AlertSettings,
    consumers: Mapping[dg.AssetKey, Sequence[Table]] | None = None,
    checked: Iterable[Table] = (),
) -> dg.SensorDefinition | None:
    """The run-failure sensor alerting the owners of ``tables`` (the domain's tables that runs build) and of
    ``checked`` (its external tables with checks, whose check runs fail too); None without any. It runs unless
    alerts are disabled, whatever the automation settings: a manual run's owners are told too. When partitions
    were refused (a failed blocking check, inputs not ready) or left unchecked, the owners of the tables that
    read them (``consumers``, any domain) are told too, once per run."""
    check_jobs = {checks_job_name(t.domain, t.name): t for t in checked}
    by_key = {t.key: t for t in tables} | {t.key: t for t in check_jobs.values()}
    readers = consumers or {}
    if not by_key:
        return None

    @dg.run_failure_sensor(
        name=failure_sensor_name(domain),
        description=f"Alerts the owners of {domain}'s tables when a run that builds them fails.",
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
    )
    def _failure_alerts(context: dg.RunFailureSensorContext) -> None:
        run_id = context.dagster_run.run_id
        backfill = context.dagster_run.tags.get(BACKFILL_TAG)
        run, event = context.dagster_run, context.failure_event
        if (external := check_jobs.get(run.job_name)) is not None:
            failures = [check_run_failed(context.instance, run, event, external)]
        else:
            failures = failed_assets(context.instance, run_id, event)
        for failed in failures:
            table = by_key.get(failed.key)
            if table is None:
                continue
            alerts = [_alert(table, failed, run_id, settings)]
            if failed.kind != "run failed":
                alerts += [_consumer_alert(c, table, failed, run_id, settings) for c in readers.get(failed.key, ())]
            if backfill:
                alerts = [replace(a, backfill_url=backfill_url(backfill, settings)) for a in alerts]
            outbox = Outbox(context.instance, domain, "failures")
            for alert in alerts:  # one that does not get through waits for the alert sensor's retry
                outbox.send(alert, settings, context.log.warning)

    return _failure_alerts
