"""Alerts to a domain's chat channel and to a table's email contacts: what failed reaches its owners.

The webhook URL and the mail server's password are secrets, so they are read from the environment at send time
(``MESH_ALERT_WEBHOOK_<DOMAIN>``, ``MESH_ALERT_SMTP_PASSWORD``) and never stored in specs, run config or logs: a
failed send raises :class:`AlertNotSent`, whose message names the variable or server and the reason but never
the URL or password. The rest of the configuration (``alerts.*``) is passed in by whoever builds the sender:
the composition root or a resource.
"""

from __future__ import annotations

import http.client
import json
import os
import smtplib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from email.message import EmailMessage

from mesh_assets.model.product import Contact
from mesh_assets.settings import AlertSettings

WEBHOOK, EMAIL = "webhook", "email"
"""The two ways an alert travels; each is delivered (and retried) on its own."""
PASSWORD_VARIABLE = "MESH_ALERT_SMTP_PASSWORD"


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
    emails: list[str] = field(default_factory=list)
    """The table's ``email`` contacts: the mail goes to them."""
    asset_url: str | None = None
    """The table's page in the UI: the link of an alert that no run raised."""


DEFAULT_ALERTS = AlertSettings()
"""``alerts.*`` with nothing configured (on, links to the local webserver): for callers outside a code location."""


class AlertNotSent(RuntimeError):
    """The webhook did not take the alert; the message is safe to log (it never contains the URL)."""


def webhook_variable(domain: str) -> str:
    return f"MESH_ALERT_WEBHOOK_{domain.upper()}"


def chat_channel(contacts: Iterable[Contact]) -> str:
    return next((c.value for c in contacts if c.kind == "chat"), "")


def email_addresses(contacts: Iterable[Contact]) -> list[str]:
    return [c.value for c in contacts if c.kind == "email"]


def asset_url(domain: str, table: str, settings: AlertSettings) -> str:
    return f"{settings.webserver_url.rstrip('/')}/assets/{domain}/{table}"


def linked(alert: Alert, settings: AlertSettings) -> Alert:
    """``alert`` with the table's page in the UI: every alert carries a link, a run's or else the table's."""
    return alert if alert.asset_url else replace(alert, asset_url=asset_url(alert.domain, alert.table, settings))


def run_url(run_id: str, settings: AlertSettings) -> str:
    return f"{settings.webserver_url.rstrip('/')}/runs/{run_id}"


def backfill_url(backfill_id: str, settings: AlertSettings) -> str:
    return f"{settings.webserver_url.rstrip('/')}/runs/b/{backfill_id}"


def text(alert: Alert) -> str:
    """One line an owner reads: the table, what it reads, partitions, checks, what failed, where to look."""
    where = f" partition(s) {', '.join(alert.partitions)}" if alert.partitions else ""
    checks = f" check(s) {', '.join(alert.checks)}" if alert.checks else ""
    reads = f" reads {alert.source}" if alert.source else ""
    head = f"[{alert.domain}/{alert.product}] {alert.kind}: {alert.domain}.{alert.table}{reads}{where}{checks}"
    return f"{head}: {alert.message}" if alert.message else head


def payload(alert: Alert) -> dict:
    """A chat-webhook body (``text`` for Slack-compatible receivers) plus the structured alert."""
    link = f" <{alert.run_url}|run>" if alert.run_url else ""
    link += f" <{alert.backfill_url}|backfill>" if alert.backfill_url else ""
    link += f" <{alert.asset_url}|asset>" if alert.asset_url else ""
    return {"text": text(alert) + link, "channel": alert.channel, "mesh": asdict(alert)}


def mail(alert: Alert, sender: str) -> EmailMessage:
    """The alert as a plain-text mail to the table's email contacts, its links on lines of their own."""
    message = EmailMessage()
    message["Subject"] = f"[mesh] {alert.kind}: {alert.domain}.{alert.table}"
    message["From"] = sender
    message["To"] = ", ".join(alert.emails)
    links = [
        f"{name}: {url}"
        for name, url in (("run", alert.run_url), ("backfill", alert.backfill_url), ("asset", alert.asset_url))
        if url
    ]
    message.set_content("\n".join([text(alert), "", f"owner: {alert.owner}", *links]) + "\n")
    return message


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


def send_email(alert: Alert, settings: AlertSettings) -> bool:
    """Mail ``alert`` to its email contacts; False (and nothing sent) when alerts are off, no mail server is set
    or the table has no email contact."""
    smtp = settings.smtp
    if not settings.enabled or not smtp.host or not alert.emails:
        return False
    server = f"the mail server {smtp.host}:{smtp.port}"
    # ``from None``: an SMTP error may echo what was sent during login.
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=settings.timeout_seconds) as client:
            if smtp.starttls:
                client.starttls()
            if smtp.user:
                client.login(smtp.user, os.environ.get(PASSWORD_VARIABLE, ""))
            client.send_message(mail(alert, smtp.sender))
    except smtplib.SMTPAuthenticationError as exc:
        raise AlertNotSent(f"{server} refused the login of {smtp.user} (SMTP {exc.smtp_code})") from None
    except smtplib.SMTPResponseException as exc:
        raise AlertNotSent(f"{server} answered SMTP {exc.smtp_code}") from None
    except (OSError, smtplib.SMTPException) as exc:
        raise AlertNotSent(f"{server} is unreachable ({type(exc).__name__})") from None
    return True


SENDERS: dict[str, Callable[[Alert, AlertSettings], bool]] = {WEBHOOK: send, EMAIL: send_email}


def deliver(alert: Alert, settings: AlertSettings) -> dict[str, str]:
    """Send ``alert`` every way it travels; why each way that did not take it failed (none: all delivered or
    not configured)."""
    failed = {}
    for via, sender in SENDERS.items():
        try:
            sender(alert, settings)
        except AlertNotSent as exc:
            failed[via] = str(exc)
    return failed


def describe_failure(alert: Alert, via: str, reason: str) -> str:
    where = f"{alert.domain}'s channel" if via == WEBHOOK else f"{alert.domain}.{alert.table}'s email contacts"
    return f"alert to {where} failed: {reason}"


def send_or_warn(alert: Alert, settings: AlertSettings, warn: Callable[[str], None]) -> None:
    """Send ``alert``; a way that does not take it is a ``warn``-ing, so what raised it is still recorded."""
    for via, reason in deliver(linked(alert, settings), settings).items():
        warn(describe_failure(alert, via, reason))
