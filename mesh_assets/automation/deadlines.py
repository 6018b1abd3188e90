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

from mesh_assets.alerts.notify import DEFAULT_ALERTS, Alert, send_or_warn
from mesh_assets.graph.resolve import Node
from mesh_assets.model.grain import midnight, utc
from mesh_assets.model.partitions import PartitionRange, read_region, window_range
from mesh_assets.model.product import DataProduct
from mesh_assets.model.regions import local_date
from mesh_assets.settings import AlertSettings, AutomationSettings

LOOKBACK_PARTITIONS = 7
log = logging.getLogger(__name__)


def late_inputs(instance: dg.DagsterInstance, nodes: list[Node], now: datetime) -> list[dict]:
    """Every (consumer partition, input, deadline kind) whose deadline has passed without the input.

    ``now`` is an instant (aware; a naive value is read as UTC): partitions are UTC days and hours, and a
    region's dates its local days, each due when its local day ends (:func:`recent_partitions`).
    """
    now = utc(now)
    flags = []
    for node in nodes:
        if not node.table.grain.partitioned:
            continue
        for read in node.reads:
            inp, upstream = read.input, read.table
            limits = [(k, h) for k, h in (("late", inp.freshness_hours), ("timed_out", inp.timeout_hours)) if h]
            if not limits:
                continue
            published = instance.get_materialized_partitions(upstream.key)
            complete = upstream.complete(published)
            for part in recent_partitions(node, now):
                region = read_region(inp.region, upstream.regions, part)
                needed = window_range(inp.window, upstream.grain, part, region)
                keys = [] if needed is None else needed.dagster_keys() if region else needed.keys()
                missing = [k for k in keys if k not in (published if region else complete)]
                window_end = part.bounds(part.start)[1]
                for label, hours in limits:
                    if missing and now >= window_end + timedelta(hours=hours):
                        flags.append(
                            {
                                "asset": list(node.table.key.path),
                                "partition": part.dagster_keys()[0],
                                "input": upstream.ref,
                                "kind": label,
                                "hours": hours,
                                "missing": missing,
                                "product": node.product,
                                "table": node.table.name,
                                "param": read.name,
                                "upstream": upstream,
                            }
                        )
    return flags


def recent_partitions(node: Node, now: datetime) -> list[PartitionRange]:
    """The consumer's last ``LOOKBACK_PARTITIONS`` partitions whose window closed before ``now``, from its first
    and before its end: of a table partitioned by date and region, each region's last local dates (eu's
    2024-03-31 closes at Madrid's next midnight, 2024-03-31 22:00 UTC)."""
    grain, table = node.table.grain, node.table
    assert grain.step is not None
    first = midnight(node.product.start_date)
    end = midnight(node.product.end_date) if node.product.end_date else None
    if table.regions:
        parts = []
        for region, zone in zip(table.regions, table.zones, strict=True):
            today = midnight(local_date(now, zone))
            parts += [
                PartitionRange(grain, today - back * grain.step, today - back * grain.step, region, zone)
                for back in range(1, LOOKBACK_PARTITIONS + 1)
            ]
    else:
        closed = grain.floor(now)
        parts = [
            PartitionRange(grain, closed - back * grain.step, closed - back * grain.step)
            for back in range(1, LOOKBACK_PARTITIONS + 1)
        ]
    # the consumer's partitions stopped at its end: nothing after it is late
    return [p for p in parts if p.start >= first and (end is None or p.start < end)]


def build_deadline_sensor(
    domain: str, nodes: list[Node], settings: AutomationSettings, alerts: AlertSettings = DEFAULT_ALERTS
) -> dg.SensorDefinition | None:
    """The deadline watcher of ``domain``'s outputs ``nodes``; None when no input sets a freshness or timeout."""
    watched = [n for n in nodes if any(r.input.freshness_hours or r.input.timeout_hours for r in n.reads)]
    if not watched:
        return None

    @dg.sensor(
        name=f"{domain}__input_deadlines",
        description=f"Flags {domain}'s partitions whose inputs miss their freshness or timeout.",
        minimum_interval_seconds=settings.observer_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if settings.enabled else dg.DefaultSensorStatus.STOPPED,
    )
    def _deadlines(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        return evaluate_deadlines(context.instance, watched, context.cursor, datetime.now(UTC), alerts)

    return _deadlines


def evaluate_deadlines(
    instance: dg.DagsterInstance,
    nodes: list[Node],
    cursor: str | None,
    now: datetime,
    alerts: AlertSettings = DEFAULT_ALERTS,
) -> dg.SensorResult:
    """One tick: new flags become observations and alerts; the cursor keeps them from repeating."""
    seen = set(json.loads(cursor)) if cursor else set()
    events = []
    for flag in late_inputs(instance, nodes, now):
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
        send_or_warn(
            Alert(
                kind=f"input {flag['kind']}",
                domain=product.domain,
                product=product.name,
                table=flag["table"],
                owner=product.owner,
                channel=channel,
                message=message,
                partitions=[flag["partition"]],
            ),
            alerts,
            log.warning,
        )
        if flag["kind"] == "timed_out":
            _tell_the_inputs_owner(flag, message, alerts)
    return dg.SensorResult(asset_events=events, cursor=json.dumps(sorted(seen)))


def _tell_the_inputs_owner(flag: dict, message: str, alerts: AlertSettings) -> None:
    """A timed-out input is the producer's to fix: its owners hear it on their own domain's channel too."""
    upstream = flag["upstream"]
    reader = f"{flag['product'].domain}.{flag['table']}"
    send_or_warn(
        Alert(
            kind="input timed out for a reader",
            domain=upstream.domain,
            product=upstream.product,
            table=upstream.name,
            owner=upstream.owner,
            channel=next((c.value for c in upstream.contacts if c.kind == "chat"), ""),
            message=f"{message} (read by {reader})",
            partitions=flag["missing"],
            source=reader,
        ),
        alerts,
        log.warning,
    )
