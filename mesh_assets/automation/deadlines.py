"""Input deadlines (Glovo's ``freshness_hours`` / ``timeout_hours``): flag consumer partitions whose inputs
are late, visibly in the UI and to the owner's channel.

For a consumer partition P (due when its time window closes), an input with ``freshness_hours`` is *late*
when the input partitions P needs are not all published ``freshness_hours`` after P's window closed; with
``timeout_hours`` it has *timed out*. Each flag is a runless observation on the consumer's partition (it
shows on the partition's timeline in the UI) and one alert; the sensor's cursor remembers what it flagged,
so a flag is raised once.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import dagster as dg

from mesh_assets.alerts.notify import Alert, AlertNotSent, send
from mesh_assets.factory.partitions import complete_days
from mesh_assets.settings import get_settings
from mesh_assets.spec.catalog import Catalog
from mesh_assets.spec.model import DataProduct
from mesh_assets.storage.partitions import PartitionRange, format_key, midnight, step, utc

LOOKBACK_PARTITIONS = 7
log = logging.getLogger(__name__)


def late_inputs(
    instance: dg.DagsterInstance, products: list[DataProduct], catalog: Catalog, now: datetime
) -> list[dict]:
    """Every (consumer partition, input, deadline kind) whose deadline has passed without the input.

    ``now`` is an instant (aware; a naive value is read as UTC): partitions are UTC days and hours.
    """
    from mesh_assets.factory.compute import input_range  # the run-side module: not loaded with the definitions

    now = utc(now)
    flags = []
    for product in products:
        for t in product.transformations:
            if t.output.partitioning == "none":
                continue
            kind = t.output.partitioning
            first = midnight(product.start_date)
            for name, inp in t.inputs.items():
                limits = [(k, h) for k, h in (("late", inp.freshness_hours), ("timed_out", inp.timeout_hours)) if h]
                upstream = catalog.get(*inp.ref(product.domain))
                if not limits or upstream is None:
                    continue
                done = complete_days(
                    instance.get_materialized_partitions(dg.AssetKey([upstream.domain, upstream.table])), upstream
                )
                closed = now.replace(minute=0, second=0, microsecond=0)
                if kind == "daily":
                    closed = closed.replace(hour=0)
                for back in range(1, LOOKBACK_PARTITIONS + 1):
                    start = closed - back * step(kind)
                    if start < first:
                        break
                    part = PartitionRange(kind, start, start)
                    needed = input_range(inp, upstream, part)
                    keys = [format_key(v, needed.kind) for v in needed.values()] if needed else []
                    missing = [k for k in keys if k not in done]
                    window_end = start + step(kind)
                    for label, hours in limits:
                        if missing and now >= window_end + timedelta(hours=hours):
                            flags.append(
                                {
                                    "asset": [product.domain, t.output.table],
                                    "partition": format_key(start, kind),
                                    "input": upstream.ref,
                                    "kind": label,
                                    "hours": hours,
                                    "missing": missing,
                                    "product": product,
                                    "table": t.output.table,
                                    "param": name,
                                }
                            )
    return flags


def build_deadline_sensor(domain: str, products: list[DataProduct], catalog: Catalog) -> dg.SensorDefinition | None:
    """The deadline watcher of ``domain``; None when no input sets a freshness or timeout."""
    watched = [
        p
        for p in products
        if any(i.freshness_hours or i.timeout_hours for t in p.transformations for i in t.inputs.values())
    ]
    if not watched:
        return None
    settings = get_settings().automation

    @dg.sensor(
        name=f"{domain}__input_deadlines",
        description=f"Flags {domain}'s partitions whose inputs miss their freshness or timeout.",
        minimum_interval_seconds=settings.observer_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
    )
    def _deadlines(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate_deadlines(context.instance, watched, catalog, context.cursor, datetime.now(UTC))

    return _deadlines


def evaluate_deadlines(
    instance: dg.DagsterInstance, products: list[DataProduct], catalog: Catalog, cursor: str | None, now: datetime
) -> dg.SensorResult:
    """One tick: new flags become observations and alerts; the cursor keeps them from repeating."""
    seen = set(json.loads(cursor)) if cursor else set()
    events = []
    for flag in late_inputs(instance, products, catalog, now):
        ident = f"{'/'.join(flag['asset'])}|{flag['partition']}|{flag['input']}|{flag['kind']}"
        if ident in seen:
            continue
        seen.add(ident)
        product: DataProduct = flag["product"]
        message = (
            f"input {flag['input']} {flag['kind'].replace('_', ' ')} ({flag['hours']} h) for "
            f"{product.domain}.{flag['table']} {flag['partition']}: missing {', '.join(flag['missing'])}"
        )
        events.append(
            dg.AssetObservation(
                asset_key=dg.AssetKey(flag["asset"]),
                partition=flag["partition"],
                metadata={
                    "input_deadline": flag["kind"],
                    "late_input": flag["input"],
                    "hours": flag["hours"],
                    "missing_input_partitions": flag["missing"],
                    "message": message,
                },
            )
        )
        channel = next((c.value for c in product.contacts if c.kind == "chat"), "")
        _send_or_warn(
            Alert(
                kind=f"input {flag['kind']}",
                domain=product.domain,
                product=product.name,
                table=flag["table"],
                owner=product.owner,
                channel=channel,
                message=message,
                partitions=[flag["partition"]],
            )
        )
    return dg.SensorResult(asset_events=events, cursor=json.dumps(sorted(seen)))


def _send_or_warn(alert: Alert) -> None:
    """An unreachable channel must not stop the flags from being recorded (the sensor would fail every tick)."""
    try:
        send(alert)
    except AlertNotSent as exc:
        log.warning(f"alert to {alert.domain}'s channel failed: {exc}")
