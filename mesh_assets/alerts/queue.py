"""Alerts that did not get through wait in the instance and are retried: a down webhook or mail server loses none.

Whoever sends an alert (a domain's run-failure, deadline, observer or alert sensor) sends it once; each way it
did not travel (webhook, email) is kept under that sender's own key of the instance's key-value storage, which
the daemon, code servers and the command line share. The domain's alert sensor retries them on each tick and
records what became of each (delivered, or given up after ``alerts.attempts`` tries) under a key of its own.
Every key has one writer, so sensors evaluated at once on the daemon's threads never overwrite each other: a
sender drops from its key what the record says is done, and the record forgets what no sender keeps.

A run that alerts (an invalidation, a restore) queues under a key of its own (``run-<run id>``) and tags itself
``mesh/alerts_queued/<domain>: pending``; the alert sensor finds such runs by that tag and, once a finished run's
alerts are all delivered or given up, tags it ``done``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import dagster as dg

from mesh_assets.alerts.notify import SENDERS, Alert, AlertNotSent, deliver, describe_failure, linked
from mesh_assets.compat import add_run_tags, kv_get, kv_set
from mesh_assets.settings import AlertSettings

PREFIX = "mesh/alerts/"
SENDERS_OF_A_DOMAIN = ("failures", "deadlines", "observer", "alerts")
"""The sensors of a domain that send alerts, each with its own queue key."""
DELIVERED, GAVE_UP, DROPPED = "delivered", "gave up", "no longer configured"
"""What became of a queued alert; ``DROPPED``: alerts were turned off, or its webhook or mail server unset."""


PENDING, DONE = "pending", "done"


def run_tag(domain: str) -> str:
    """The tag of a run whose alerts to ``domain`` wait in its own queue (``pending``) or no longer (``done``)."""
    return f"mesh/alerts_queued/{domain}"


def run_sender(run_id: str) -> str:
    return f"run-{run_id}"


def queue_key(domain: str, sender: str) -> str:
    return f"{PREFIX}queue/{domain}/{sender}"


def record_key(domain: str) -> str:
    return f"{PREFIX}retried/{domain}"


def _load(raw: str | None, default: object) -> object:
    return json.loads(raw) if raw else default


@dataclass(frozen=True)
class Outbox:
    """One sender's way to the queue: what it could not deliver waits for its domain's alert sensor. A run's
    outbox (``run_id``) tags the run so that the sensor finds its queue."""

    instance: dg.DagsterInstance
    domain: str
    sender: str
    run_id: str | None = None

    @classmethod
    def of_run(cls, instance: dg.DagsterInstance, domain: str, run_id: str) -> Outbox:
        return cls(instance, domain, run_sender(run_id), run_id)

    def send(self, alert: Alert, settings: AlertSettings, warn: Callable[[str], None]) -> None:
        """Deliver ``alert`` (with its link) every way it travels; each way that failed is warned and queued."""
        alert = linked(alert, settings)
        failed = deliver(alert, settings)
        for via, reason in failed.items():
            warn(describe_failure(alert, via, reason) + "; it will be retried")
        if failed:
            self._queue([(alert, via, reason) for via, reason in failed.items()])

    def _queue(self, failed: list[tuple[Alert, str, str]]) -> None:
        key, done = queue_key(self.domain, self.sender), record_key(self.domain)
        found = kv_get(self.instance, {key, done})
        record: dict = _load(found.get(done), {})  # type: ignore[assignment]
        waiting = [e for e in _load(found.get(key), []) if record.get(e["id"], {}).get("state") is None]  # type: ignore[union-attr]
        now = datetime.now(UTC).isoformat(timespec="seconds")
        waiting += [
            {"id": uuid.uuid4().hex, "via": via, "alert": asdict(alert), "error": reason, "queued": now}
            for alert, via, reason in failed
        ]
        kv_set(self.instance, {key: json.dumps(waiting)})
        if self.run_id is not None:
            add_run_tags(self.instance, self.run_id, {run_tag(self.domain): PENDING})


def _queued(instance: dg.DagsterInstance, domain: str, runs: list[str]) -> tuple[dict, dict[str, list[dict]]]:
    """The domain's record of retried alerts, and every alert its senders (its sensors', ``runs``') keep queued,
    by sender."""
    senders = [*SENDERS_OF_A_DOMAIN, *map(run_sender, runs)]
    found = kv_get(instance, {record_key(domain), *(queue_key(domain, s) for s in senders)})
    record: dict = _load(found.get(record_key(domain)), {})  # type: ignore[assignment]
    return record, {s: _load(found.get(queue_key(domain, s)), []) for s in senders}  # type: ignore[misc]


def _pending_runs(instance: dg.DagsterInstance, domain: str) -> dict[str, bool]:
    """The runs whose alerts to ``domain`` wait in their own queues, and whether each has finished."""
    records = instance.get_run_records(dg.RunsFilter(tags={run_tag(domain): PENDING}))
    return {r.dagster_run.run_id: r.dagster_run.is_finished for r in records}


def retry(
    instance: dg.DagsterInstance, domain: str, settings: AlertSettings, warn: Callable[[str], None]
) -> list[Alert]:
    """Try each of the domain's queued alerts once more; the ones delivered. An alert tried ``alerts.attempts``
    times in all is given up with a warning naming it."""
    runs = _pending_runs(instance, domain)
    record, by_sender = _queued(instance, domain, list(runs))
    queued = [e for entries in by_sender.values() for e in entries]
    delivered = []
    for entry in queued:
        state = record.setdefault(entry["id"], {"attempts": 1, "state": None})
        if state["state"] is not None:
            continue
        alert = Alert(**entry["alert"])
        state["attempts"] += 1
        try:
            sent = SENDERS[entry["via"]](alert, settings)
        except AlertNotSent as exc:
            if state["attempts"] >= settings.attempts:
                state["state"] = GAVE_UP
                warn(describe_failure(alert, entry["via"], str(exc)) + f"; given up after {state['attempts']} attempts")
            continue
        state["state"] = DELIVERED if sent else DROPPED
        delivered += [alert] if sent else []
    kept = {e["id"] for e in queued}
    kv_set(instance, {record_key(domain): json.dumps({k: v for k, v in record.items() if k in kept})})
    for run_id, finished in runs.items():
        if finished and all(record[e["id"]]["state"] is not None for e in by_sender[run_sender(run_id)]):
            add_run_tags(instance, run_id, {run_tag(domain): DONE})  # its queue is spent: no longer read
    return delivered
