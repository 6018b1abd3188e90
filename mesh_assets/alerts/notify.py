"""Alerts to a domain's chat channel: a failed run or a failed blocking check reaches its owners.

The webhook URL is a secret, so it is read from the environment at send time
(``MESH_ALERT_WEBHOOK_<DOMAIN>``) and never stored in specs, run config or logs: a failed send raises
:class:`AlertNotSent`, whose message names the variable and the reason but never the URL. The rest of the
configuration (``alerts.*``) is passed in by whoever builds the sender: the composition root or a resource.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from mesh_assets.settings import AlertSettings


@dataclass(frozen=True)
class Alert:
    """What an owner needs to act: which product, partition and check, and where to look."""

    kind: str
    domain: str
    product: str
    table: str
    owner: str
    channel: str
    message: str
    partitions: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    run_id: str | None = None
    run_url: str | None = None
    source: str | None = None
    """For an alert to a consumer's owners: the ``<domain>.<table>`` whose partitions it concerns."""
    backfill_url: str | None = None
    """The backfill the run was part of, if any."""


DEFAULT_ALERTS = AlertSettings()
"""``alerts.*`` with nothing configured (on, links to the local webserver): for callers outside a code location."""


class AlertNotSent(RuntimeError):
    """The webhook did not take the alert; the message is safe to log (it never contains the URL)."""


def webhook_variable(domain: str) -> str:
    return f"MESH_ALERT_WEBHOOK_{domain.upper()}"


def run_url(run_id: str, settings: AlertSettings) -> str:
    return f"{settings.webserver_url.rstrip('/')}/runs/{run_id}"


def backfill_url(backfill_id: str, settings: AlertSettings) -> str:
    return f"{settings.webserver_url.rstrip('/')}/runs/b/{backfill_id}"


def payload(alert: Alert) -> dict:
    """A chat-webhook body (``text`` for Slack-compatible receivers) plus the structured alert."""
    where = f" partition(s) {', '.join(alert.partitions)}" if alert.partitions else ""
    checks = f" check(s) {', '.join(alert.checks)}" if alert.checks else ""
    link = f" <{alert.run_url}|run>" if alert.run_url else ""
    link += f" <{alert.backfill_url}|backfill>" if alert.backfill_url else ""
    reads = f" reads {alert.source}" if alert.source else ""
    text = f"[{alert.domain}/{alert.product}] {alert.kind}: {alert.domain}.{alert.table}{reads}{where}{checks}{link}"
    return {"text": text, "channel": alert.channel, "mesh": asdict(alert)}


def send(alert: Alert, settings: AlertSettings) -> bool:
    """Post ``alert`` to the domain's webhook; False (and nothing sent) when alerts are off or unset."""
    variable = webhook_variable(alert.domain)
    url = os.environ.get(variable)
    if not settings.enabled or not url:
        return False
    if urllib.parse.urlsplit(url).scheme not in {"http", "https"}:
        raise AlertNotSent(f"{variable} is not an http(s) URL")
    request = urllib.request.Request(
        url, data=json.dumps(payload(alert)).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    # ``from None`` everywhere: the original exceptions may quote the URL, which is a secret.
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout_seconds) as response:
            return 200 <= response.status < 300
    except urllib.error.HTTPError as exc:
        raise AlertNotSent(f"the webhook in {variable} answered HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        raise AlertNotSent(f"the webhook in {variable} is unreachable ({exc.reason})") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise AlertNotSent(f"the webhook in {variable} failed ({type(exc).__name__})") from None


def send_or_warn(alert: Alert, settings: AlertSettings, warn: Callable[[str], None]) -> None:
    """Send ``alert``; a channel that does not take it is a ``warn``-ing, so what raised it is still recorded."""
    try:
        send(alert, settings)
    except AlertNotSent as exc:
        warn(f"alert to {alert.domain}'s channel failed: {exc}")
