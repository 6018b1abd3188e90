"""A domain's failure alerts for a finished run, evaluated as the daemon evaluates its run-failure sensor."""

from __future__ import annotations

import logging
import logging.handlers

import dagster as dg

from mesh_assets.alerts.sensor import failure_sensor_name


def alert_failed_run(defs: dg.Definitions, instance: dg.DagsterInstance, run_id: str, domain: str) -> list[str]:
    """Evaluate ``domain``'s run-failure sensor on the failed run ``run_id``; the warnings it logged."""
    sensor = defs.resolve_sensor_def(failure_sensor_name(domain))
    [failure] = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.RUN_FAILURE).records
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_event=failure.event_log_entry.dagster_event,
        dagster_instance=instance,
        dagster_run=instance.get_run_by_id(run_id),
    )
    handler = logging.handlers.BufferingHandler(capacity=100)
    context.log.addHandler(handler)
    sensor(context)
    return [r.getMessage() for r in handler.buffer if r.levelno == logging.WARNING]
