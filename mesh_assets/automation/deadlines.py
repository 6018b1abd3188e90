"""Input deadlines (Glovo's ``freshness_hours`` / ``timeout_hours``): flag consumer partitions whose inputs
are late, visibly in the UI and to the owner's channel.

For a consumer partition P (due when its time window closes), an input with ``freshness_hours`` is *late*
when the input partitions P needs are not all published ``freshness_hours`` after P's window closed; with
``timeout_hours`` it has *timed out*. An input read whole (a dimension, a snapshot) older than its
``freshness_hours`` (or the product's ``input_freshness_hours``) is *stale* while due partitions of its
consumer wait for it (readiness holds them back): it is flagged on those partitions and told to the consumer's
owners and the input's, once per publication of the input that went stale. Each flag is a runless
observation on the consumer's partition (it shows on the partition's timeline in the UI) and one alert; the
sensor's cursor remembers what it flagged, so a flag is raised once. A timed-out input declared
``on_timeout: fail`` also launches its reader's partition once, for readiness to refuse it: the partition shows
failed rather than waiting.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import dagster as dg

from mesh_assets.alerts.notify import DEFAULT_ALERTS, Alert, chat_channel, email_addresses
from mesh_assets.alerts.queue import Outbox
from mesh_assets.automation.ready import limits_age
from mesh_assets.graph.resolve import Node, Table
from mesh_assets.model.grain import midnight, region_key, utc
from mesh_assets.model.partitions import PartitionRange, read_region, window_range
from mesh_assets.model.product import DataProduct
from mesh_assets.model.regions import local_date
from mesh_assets.run.readiness import unready
from mesh_assets.settings import AlertSettings, AutomationSettings

LOOKBACK_PARTITIONS = 7
TIMED_OUT_TAG = "mesh/timed_out"
"""On the run launched to fail a partition whose input timed out: the input's name."""
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
            due: list[tuple[PartitionRange, list[str]]] = []
            one_region: set[str] = set()
            for part in recent_partitions(node, now):
                region = read_region(inp.region, upstream.regions, part)
                needed = window_range(inp.window, upstream.grain, part, region)
                keys = [] if needed is None else needed.dagster_keys() if region else needed.keys()
                due.append((part, keys))
                one_region |= set(keys) if region else set()
            every = {k for _, keys in due for k in keys if k not in one_region}
            done = published_of(instance, upstream, every) | exactly_published(instance, upstream, one_region)
            for part, keys in due:
                missing = [k for k in keys if k not in done]
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
                                "fail": label == "timed_out" and inp.on_timeout == "fail",
                            }
                        )
    return flags


def recent_partitions(node: Node, now: datetime) -> list[PartitionRange]:
    """The consumer's last ``LOOKBACK_PARTITIONS`` partitions whose window closed before ``now``, from its first
    and before its end: of a table partitioned by date and region, each region's last local dates (eu's
    2024-03-31 closes at Madrid's next midnight, 2024-03-31 22:00 UTC)."""
    grain, table = node.table.grain, node.table
    first = midnight(node.product.start_date)
    end = midnight(node.product.end_date) if node.product.end_date else None
    if table.regions:
        parts = []
        for region, zone in zip(table.regions, table.zones, strict=True):
            today = midnight(local_date(now, zone))
            starts = [grain.shift(today, -back) for back in range(1, LOOKBACK_PARTITIONS + 1)]
            parts += [PartitionRange(grain, start, start, region, zone) for start in starts]
    else:
        closed = grain.floor(now)
        starts = [grain.shift(closed, -back) for back in range(1, LOOKBACK_PARTITIONS + 1)]
        parts = [PartitionRange(grain, start, start) for start in starts]
    # the consumer's partitions stopped at its end: nothing after it is late
    return [p for p in parts if p.start >= first and (end is None or p.start < end)]


def exactly_published(instance: dg.DagsterInstance, upstream: Table, keys: set[str]) -> set[str]:
    """Which of ``keys`` (Dagster's own keys: one region's dates) are published, asked for those alone."""
    if not keys:
        return set()
    return set(
        instance.get_latest_storage_id_by_partition(upstream.key, dg.DagsterEventType.ASSET_MATERIALIZATION, keys)
    )


def published_of(instance: dg.DagsterInstance, upstream: Table, keys: set[str]) -> set[str]:
    """Which of ``keys`` are published, as consumers count them (a regional day only with every region).

    Only these partitions are asked of the instance, not every partition the table ever published: a tick
    then costs the same for a table of a month's hours as for one of three years' (BENCHMARKS.md, "capacity").
    """
    if not keys:
        return set()  # no partitions named: the instance would answer for every partition
    asked = {region_key(k, r) for k in keys for r in upstream.regions} if upstream.regions else keys
    found = instance.get_latest_storage_id_by_partition(upstream.key, dg.DagsterEventType.ASSET_MATERIALIZATION, asked)
    return upstream.complete(set(found))


def _due(node: Node, instance: dg.DagsterInstance, now: datetime) -> list[str]:
    """The consumer's partitions of the last few closed windows that were never published (only those asked of
    the instance, as :func:`published_of` does)."""
    grain = node.table.grain
    first = midnight(node.product.start_date)
    end = midnight(node.product.end_date) if node.product.end_date else None
    closed = grain.floor(now)
    starts = [grain.shift(closed, -back) for back in range(LOOKBACK_PARTITIONS, 0, -1)]
    keys = [grain.key(s) for s in starts if s >= first and (end is None or s < end)]
    if node.table.regions:  # each region's date is a partition of its own
        keys = [region_key(k, r) for k in keys for r in node.table.regions]
    if not keys:
        return []
    found = instance.get_latest_storage_id_by_partition(
        node.table.key, dg.DagsterEventType.ASSET_MATERIALIZATION, set(keys)
    )
    return [k for k in keys if k not in found]


def stale_inputs(instance: dg.DagsterInstance, nodes: list[Node], now: datetime) -> list[dict]:
    """Every (consumer, input read whole) whose input is older than allowed while due partitions wait for it."""
    now = utc(now)
    flags = []
    for node in nodes:
        if not node.table.grain.partitioned:
            continue
        default = node.product.input_freshness_hours
        for read in node.reads:
            hours = read.input.freshness_hours or default
            if not hours or not limits_age(node, read):
                continue
            problems = unready(instance, [(read.input, read.table)], None, default_hours=default, now=now)
            stale = [p for p in problems.get(None, []) if "(stale:" in p]
            waiting = _due(node, instance, now) if stale else []
            if not waiting:
                continue
            latest = instance.get_latest_materialization_event(read.table.key)
            flags.append(
                {
                    "asset": list(node.table.key.path),
                    "partitions": waiting,
                    "input": read.table.ref,
                    "kind": "stale",
                    "hours": hours,
                    "why": stale[0],
                    "since": latest.timestamp if latest is not None else 0.0,
                    "product": node.product,
                    "table": node.table.name,
                    "upstream": read.table,
                }
            )
    return flags


def build_deadline_sensor(
    domain: str, nodes: list[Node], settings: AutomationSettings, alerts: AlertSettings = DEFAULT_ALERTS
) -> dg.SensorDefinition | None:
    """The deadline watcher of ``domain``'s outputs ``nodes``; None when no input sets a freshness or timeout."""
    watched = [
        n
        for n in nodes
        if n.product.input_freshness_hours or any(r.input.freshness_hours or r.input.timeout_hours for r in n.reads)
    ]
    if not watched:
        return None

    failing = [n.table.key for n in watched if any(r.input.on_timeout == "fail" for r in n.reads)]

    @dg.sensor(
        name=f"{domain}__input_deadlines",
        description=f"Flags {domain}'s partitions whose inputs miss their freshness or timeout; fails those whose "
        "input timed out with on_timeout: fail.",
        asset_selection=failing or None,
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
    events, failed = [], []
    for flag in late_inputs(instance, nodes, now):
        ident = f"{'/'.join(flag['asset'])}|{flag['partition']}|{flag['input']}|{flag['kind']}"
        if ident in seen:
            continue
        seen.add(ident)
        if flag["fail"]:
            failed.append(_fail(flag))
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
        outbox = Outbox(instance, product.domain, "deadlines")
        outbox.send(
            Alert(
                kind=f"input {flag['kind']}",
                domain=product.domain,
                product=product.name,
                table=flag["table"],
                owner=product.owner,
                channel=chat_channel(product.contacts),
                message=message,
                partitions=[flag["partition"]],
                emails=email_addresses(product.contacts),
            ),
            alerts,
            log.warning,
        )
        if flag["kind"] == "timed_out":
            _tell_the_inputs_owner(flag, message, alerts, outbox)
    for flag in stale_inputs(instance, nodes, now):
        ident = f"{'/'.join(flag['asset'])}|{flag['input']}|stale|{flag['since']}"
        if ident in seen:
            continue
        seen.add(ident)
        events += _flag_stale(flag, alerts, Outbox(instance, flag["product"].domain, "deadlines"))
    return dg.SensorResult(run_requests=failed, asset_events=events, cursor=json.dumps(sorted(seen)))


def _fail(flag: dict) -> dg.RunRequest:
    """A run of the timed-out partition (``on_timeout: fail``): readiness refuses it for the missing input, so
    the partition shows failed, the failure is alerted, and automation stops waiting until the input lands."""
    return dg.RunRequest(
        run_key=f"timed_out|{'/'.join(flag['asset'])}|{flag['partition']}|{flag['input']}",
        asset_selection=[dg.AssetKey(flag["asset"])],
        partition_key=flag["partition"],
        tags={TIMED_OUT_TAG: flag["input"]},
    )


def _flag_stale(flag: dict, alerts: AlertSettings, outbox: Outbox) -> list[dg.AssetObservation]:
    """One stale input: an observation on each waiting partition, the consumer's owners and the input's told."""
    product: DataProduct = flag["product"]
    waiting = flag["partitions"]
    message = (
        f"input {flag['input']} stale for {product.domain}.{flag['table']}: {flag['why']}; "
        f"{', '.join(waiting)} wait until {flag['input']} is published again"
    )
    metadata = {"input_deadline": "stale", "late_input": flag["input"], "hours": flag["hours"], "message": message}
    outbox.send(
        Alert(
            kind="input stale",
            domain=product.domain,
            product=product.name,
            table=flag["table"],
            owner=product.owner,
            channel=chat_channel(product.contacts),
            message=message,
            partitions=waiting,
            emails=email_addresses(product.contacts),
        ),
        alerts,
        log.warning,
    )
    _tell_the_inputs_owner({**flag, "missing": []}, message, alerts, outbox, kind="input stale for a reader")
    return [dg.AssetObservation(dg.AssetKey(flag["asset"]), partition=p, metadata=metadata) for p in waiting]


def _tell_the_inputs_owner(
    flag: dict, message: str, alerts: AlertSettings, outbox: Outbox, kind: str = "input timed out for a reader"
) -> None:
    """A timed-out or stale input is the producer's to fix: its owners hear it on their own domain's channel too."""
    upstream = flag["upstream"]
    reader = f"{flag['product'].domain}.{flag['table']}"
    outbox.send(
        Alert(
            kind=kind,
            domain=upstream.domain,
            product=upstream.product,
            table=upstream.name,
            owner=upstream.owner,
            channel=chat_channel(upstream.contacts),
            message=f"{message} (read by {reader})",
            partitions=flag["missing"],
            source=reader,
            emails=email_addresses(upstream.contacts),
        ),
        alerts,
        log.warning,
    )
