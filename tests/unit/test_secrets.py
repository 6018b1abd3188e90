"""Secrets come from the environment only, and a failure to use one never repeats it in a message."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from mesh_assets.alerts.notify import DEFAULT_ALERTS, Alert, AlertNotSent, send

CANARY = f"canary-{uuid.uuid4().hex}"
ALERT = Alert(
    kind="run failed", domain="rel", product="events", table="events", owner="o@rel.org", channel="#rel", message="m"
)


@pytest.mark.parametrize(
    "url, reason",
    [
        (f"not-a-url-{CANARY}", "MESH_ALERT_WEBHOOK_REL is not an http(s) URL"),
        (f"file:///tmp/{CANARY}", "MESH_ALERT_WEBHOOK_REL is not an http(s) URL"),
        (f"http://127.0.0.1:1/{CANARY}", "the webhook in MESH_ALERT_WEBHOOK_REL is unreachable"),
        (f"http://127.0.0.1:notaport{CANARY}/", "the webhook in MESH_ALERT_WEBHOOK_REL failed (InvalidURL)"),
    ],
    ids=["not-a-url", "file-url", "unreachable", "invalid-port"],
)
def test_a_failed_alert_never_repeats_the_webhook_url(monkeypatch, url, reason):
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_REL", url)
    with pytest.raises(AlertNotSent) as raised:
        send(ALERT, DEFAULT_ALERTS)
    assert reason in str(raised.value)
    error = raised.value
    assert CANARY not in str(error)
    # nothing chained either: a traceback would print the original exception, which may quote the URL
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_an_error_answer_is_reported_without_the_url(monkeypatch, webhook):
    received, point = webhook
    point("rel")
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_REL", os.environ["MESH_ALERT_WEBHOOK_REL"].replace("/hook", f"/{CANARY}"))
    assert send(ALERT, DEFAULT_ALERTS) is True  # the test receiver answers every path
    assert CANARY not in json.dumps(received)
