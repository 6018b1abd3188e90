"""Alerts that did not get through wait in the instance and are retried: a down webhook or mail server loses none.

Whoever sends an alert (a domain's run-failure, deadline, observer or alert sensor) sends it once; each way it
did not travel (webhook, email) is kept under that sender's own key of the instance's key-value storage, which
the daemon, code servers and the command line share. The domain's alert sensor retries them on each tick and
records what became of each (delivered, or given up after ``alerts.attempts`` tries) under a key of its own.
Every key has one writer, so sensors evaluated at once on the daemon's threads never overwrite each other: a
sender drops from its key what the record says is done, and the record forgets what no sender keeps.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import dagster as dg

from mesh_assets.alerts.notify import SENDERS, Alert, AlertNotSent, deliver, describe_failure, linked
from mesh_assets.compat import kv_get, kv_set
from mesh_assets.settings import AlertSettings

PREFIX = "mesh/alerts/"
SENDERS_OF_A_DOMAIN = ("failures", "deadlines", "observer", "alerts")
"""The sensors of a domain that send alerts, each with its own queue key."""
DELIVERED, GAVE_UP, DROPPED = "delivered", "gave up", "no longer configured"
"""What became of a queued alert; ``DROPPED``: alerts were turned off, or its webhook or mail server unset."""


def queue_key(domain: str, sender: str) -> str:
    return f"{PREFIX}queue/{domain}/{sender}"


def record_key(domain: str) -> str:
    return f"{PREFIX}retried/{domain}"


def _load(raw: str | None, default: object) -> object:
    return json.loads(raw) if raw else default


@dataclass(frozen=True)
class Outbox:
    """One sender's way to the queue: what it could not deliver waits for its domain's alert sensor."""

    instance: dg.DagsterInstance
    domain: str
    sender: str

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


def _queued(instance: dg.DagsterInstance, domain: str) -> tuple[dict, list[dict]]:
    """The domain's record of retried alerts, and every alert its senders keep queued."""
    found = kv_get(instance, {record_key(domain), *(queue_key(domain, s) for s in SENDERS_OF_A_DOMAIN)})
    record: dict = _load(found.get(record_key(domain)), {})  # type: ignore[assignment]
    queued = [e for s in SENDERS_OF_A_DOMAIN for e in _load(found.get(queue_key(domain, s)), [])]  # type: ignore[union-attr]
    return record, queued


def retry(
    instance: dg.DagsterInstance, domain: str, settings: AlertSettings, warn: Callable[[str], None]
) -> list[Alert]:
    """Try each of the domain's queued alerts once more; the ones delivered. An alert tried ``alerts.attempts``
    times in all is given up with a warning naming it."""
    record, queued = _queued(instance, domain)
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
    return delivered
