"""Alerts reach people: a missed freshness objective and a failed check of an external table are told once to the
table's owners and its readers', by chat webhook and by mail, each with what failed, where and a link; a webhook
or mail server that is down loses nothing: the alert waits in the instance and the domain's alert sensor delivers
it once the server is back. None needs Spark: publications and check runs are recorded as Dagster records them."""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from failure_alerts import alert_failed_run
from receiver import json_receiver
from smtp_server import Mailbox, free_port

from mesh_assets.alerts import watch
from mesh_assets.alerts.notify import Alert
from mesh_assets.alerts.queue import Outbox, retry, run_tag
from mesh_assets.alerts.watch import alert_sensor_name
from mesh_assets.checks.external import checks_job_name, checks_op_name, checks_run_config
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.settings import AlertSettings

SHOP = """\
name: orders
owner: team@example.com
contacts: [{kind: chat, value: "#orders"}, {kind: email, value: orders-oncall@example.com}]
start_date: "2021-06-01"
external:
  - table: raw_orders
    checks: [{kind: not_null, columns: [id]}]
tables:
  - table: orders
    published: true
    inputs: [{table: shop.raw_orders}]
    sql: SELECT id FROM shop.raw_orders
    checks: [{kind: freshness, max_lag_hours: 30}]
"""
BILLING = """\
name: invoices
owner: billing@example.com
contacts: [{kind: chat, value: "#billing"}, {kind: email, value: billing-oncall@example.com}]
start_date: "2021-06-01"
tables:
  - table: invoices
    inputs: [{table: shop.orders}]
    sql: SELECT id FROM shop.orders
"""
ORDERS, RAW = dg.AssetKey(["shop", "orders"]), dg.AssetKey(["shop", "raw_orders"])
DAY = "2021-06-04"
PASSWORD = "s3cret-canary"


@pytest.fixture
def mailbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Mailbox]:
    """A mail server that takes only Mesh's login, whose password is in the environment alone."""
    server = Mailbox(login=("mesh", PASSWORD))
    monkeypatch.setenv("MESH_ALERT_SMTP_PASSWORD", PASSWORD)
    monkeypatch.setenv("MESH_ALERTS__SMTP__HOST", "127.0.0.1")
    monkeypatch.setenv("MESH_ALERTS__SMTP__PORT", str(server.port))
    monkeypatch.setenv("MESH_ALERTS__SMTP__USER", "mesh")
    monkeypatch.setenv("MESH_ALERTS__WEBSERVER_URL", "http://dagster.example.com")
    yield server
    server.stop()


@pytest.fixture
def mesh(tmp_path: Path, webhook, mailbox) -> tuple[dg.Definitions, list[dict], Mailbox]:
    """The ``shop`` domain (an external table with a blocking check, a product with a freshness objective) and
    its reader ``billing``, their chat alerts going to the test's receiver and their mail to its mailbox."""
    from mesh_assets.settings import get_settings

    received, point = webhook
    for domain, spec in {"shop": SHOP, "billing": BILLING}.items():
        point(domain)
        (tmp_path / domain).mkdir()
        (tmp_path / domain / f"{domain}.yaml").write_text(spec)
    get_settings.cache_clear()
    try:
        return build_definitions(load_all(tmp_path), extra=[]), received, mailbox
    finally:
        get_settings.cache_clear()


def tick(defs: dg.Definitions, instance: dg.DagsterInstance, domain: str, cursor: str | None = None):
    """One evaluation of ``domain``'s alert sensor, as the daemon runs it; its result and the warnings it logged."""
    sensor = defs.resolve_sensor_def(alert_sensor_name(domain))
    context = dg.build_sensor_context(instance=instance, cursor=cursor)
    handler = logging.handlers.BufferingHandler(capacity=100)
    context.log.addHandler(handler)
    result = sensor(context)
    return result, [r.getMessage() for r in handler.buffer if r.levelno == logging.WARNING]


def published(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str, hours_ago: float, monkeypatch) -> None:
    """A publication of ``key`` recorded as a run records it, the alert sensor's clock set ``hours_ago`` later."""
    instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=partition))
    at = instance.fetch_materializations(key, limit=1).records[0].timestamp + hours_ago * 3600
    monkeypatch.setattr(watch, "clock", lambda: datetime.fromtimestamp(at, UTC))


def test_a_missed_freshness_objective_is_told_once_to_owners_and_readers_and_shown_on_the_table(mesh, monkeypatch):
    defs, received, mailbox = mesh
    instance = dg.DagsterInstance.ephemeral()
    published(instance, ORDERS, DAY, 1, monkeypatch)
    result, warnings = tick(defs, instance, "shop")
    assert (received, mailbox.messages, warnings, result.asset_events) == ([], [], [], [])

    published(instance, ORDERS, DAY, 31, monkeypatch)
    result, warnings = tick(defs, instance, "shop")
    assert warnings == []
    told = {(a["mesh"]["domain"], a["mesh"]["kind"]): a for a in received}
    assert set(told) == {("shop", "freshness objective missed"), ("billing", "input freshness objective missed")}
    owner, reader = told[("shop", "freshness objective missed")], told[("billing", "input freshness objective missed")]
    assert owner["text"].startswith(f"[shop/orders] freshness objective missed: shop.orders partition(s) {DAY}: ")
    assert "shop.orders missed its freshness objective: last published" in owner["text"]
    assert "31 h ago; max_lag_hours is 30 h" in owner["text"]
    assert owner["text"].endswith("<http://dagster.example.com/assets/shop/orders|asset>")
    assert reader["channel"] == "#billing" and reader["mesh"]["source"] == "shop.orders"
    assert reader["mesh"]["asset_url"] == "http://dagster.example.com/assets/billing/invoices"
    [shown] = result.asset_events
    assert (shown.asset_key, shown.metadata["freshness"].value, shown.metadata["max_lag_hours"].value) == (
        ORDERS,
        "FAIL",
        30,
    )
    assert sorted(m["To"] for m in mailbox.messages) == ["billing-oncall@example.com", "orders-oncall@example.com"]

    again, _ = tick(defs, instance, "shop")
    assert (len(received), len(mailbox.messages), again.asset_events) == (2, 2, [])  # once per breach

    published(instance, ORDERS, "2021-06-05", 0, monkeypatch)
    fresh, _ = tick(defs, instance, "shop")
    assert [e.metadata["freshness"].value for e in fresh.asset_events] == ["PASS"]
    published(instance, ORDERS, "2021-06-05", 40, monkeypatch)
    tick(defs, instance, "shop")
    assert len(received) == 4  # a new publication gone stale is a new breach


def check_run(instance: dg.DagsterInstance, passed: bool) -> dg.ExecuteInProcessResult:
    """A check run of ``shop.raw_orders`` for ``DAY``, recording its outcome as the observer's check run does."""

    @dg.op
    def check_raw_orders(context) -> None:
        context.log_event(
            dg.AssetCheckEvaluation(
                asset_key=RAW,
                check_name="not_null_id",
                passed=passed,
                blocking=True,
                severity=dg.AssetCheckSeverity.ERROR,
                partition=DAY,
                description=None if passed else f"check not_null_id on partition {DAY} failed (2 failing rows)",
                metadata={"failing_rows": 0 if passed else 2},
            )
        )

    @dg.job(name=checks_job_name("shop", "raw_orders"))
    def checks() -> None:
        check_raw_orders()

    return checks.execute_in_process(instance=instance)


def test_a_failed_blocking_check_of_an_external_table_tells_its_owner_and_every_reader_once(mesh):
    defs, received, mailbox = mesh
    instance = dg.DagsterInstance.ephemeral()
    assert check_run(instance, passed=True).success
    result, _ = tick(defs, instance, "shop")
    assert received == []

    run = check_run(instance, passed=False)
    assert run.success  # the check run judged; the alert sensor tells
    result, warnings = tick(defs, instance, "shop", result.cursor)
    assert warnings == []
    told = {a["mesh"]["table"]: a for a in received}
    assert set(told) == {"raw_orders", "orders"}
    owner, reader = told["raw_orders"]["mesh"], told["orders"]["mesh"]
    assert (owner["kind"], owner["partitions"], owner["checks"]) == ("blocking check failed", [DAY], ["not_null_id"])
    assert owner["run_url"] == f"http://dagster.example.com/runs/{run.run_id}"
    assert told["raw_orders"]["text"] == (
        f"[shop/orders] blocking check failed: shop.raw_orders partition(s) {DAY} check(s) not_null_id: "
        f"check not_null_id on partition {DAY} failed (2 failing rows) "
        f"<http://dagster.example.com/runs/{run.run_id}|run> <http://dagster.example.com/assets/shop/raw_orders|asset>"
    )
    assert (reader["kind"], reader["source"], reader["partitions"]) == ("input check failed", "shop.raw_orders", [DAY])
    assert "shop.orders waits for it" in reader["message"]
    [mail] = [m for m in mailbox.messages if "raw_orders" in m["Subject"]]
    body = mail.get_content()
    assert mail["Subject"] == "[mesh] blocking check failed: shop.raw_orders"
    assert (
        f"partition(s) {DAY} check(s) not_null_id" in body
        and f"run: http://dagster.example.com/runs/{run.run_id}" in body
    )

    tick(defs, instance, "shop", result.cursor)
    assert len(received) == 2


def test_an_alert_a_down_server_did_not_take_is_delivered_once_when_it_is_back(mesh, monkeypatch):
    """The webhook and the mail server are down when a run fails: the sensor that reads the run warns and goes on,
    the alert waits; the next ticks of the domain's alert sensor deliver it once both are up again."""
    defs, received, mailbox = mesh
    instance = dg.DagsterInstance.ephemeral()
    hook = free_port()
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_SHOP", f"http://127.0.0.1:{hook}/hook")
    mailbox.stop()
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={ORDERS})
    run = instance.create_run_for_job(job, asset_selection={ORDERS}, tags={"dagster/partition": DAY})
    instance.report_run_failed(run, message="Run worker process has unexpectedly exited with code -9.")

    warnings = alert_failed_run(defs, instance, run.run_id, "shop")
    assert len(warnings) == 2 and all(w.endswith("; it will be retried") for w in warnings)
    assert PASSWORD not in " ".join(warnings) and str(hook) not in " ".join(warnings)
    _, warnings = tick(defs, instance, "shop")  # still down: tried again, kept
    assert received == [] and warnings == []

    server = json_receiver(lambda _path, body: received.append(body))
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_SHOP", f"http://127.0.0.1:{server.server_port}/hook")
    up = Mailbox(port=mailbox.port, login=("mesh", PASSWORD))
    try:
        tick(defs, instance, "shop")
        tick(defs, instance, "shop")
    finally:
        server.shutdown()
        up.stop()
    assert [a["mesh"]["run_id"] for a in received] == [run.run_id]
    assert [m["Subject"] for m in up.messages] == ["[mesh] run failed: shop.orders"]
    assert f"run: http://dagster.example.com/runs/{run.run_id}" in up.messages[0].get_content()
    assert PASSWORD not in up.messages[0].as_string()


def test_a_queued_alert_is_given_up_after_its_attempts(monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_SHOP", f"http://127.0.0.1:{free_port()}/hook")
    settings = AlertSettings(attempts=2, timeout_seconds=1)
    warnings: list[str] = []
    alert = Alert("run failed", "shop", "orders", "orders", "team@example.com", "#orders", "boom", [DAY])
    Outbox(instance, "shop", "failures").send(alert, settings, warnings.append)
    assert retry(instance, "shop", settings, warnings.append) == []
    assert warnings[-1].endswith("; given up after 2 attempts") and "MESH_ALERT_WEBHOOK_SHOP" in warnings[-1]
    received: list[dict] = []
    server = json_receiver(lambda _path, body: received.append(body))
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_SHOP", f"http://127.0.0.1:{server.server_port}/hook")
    try:
        assert retry(instance, "shop", settings, warnings.append) == []
    finally:
        server.shutdown()
    assert received == [] and len(warnings) == 2


def test_a_check_run_of_an_external_table_that_dies_tells_its_owner_and_every_reader(mesh):
    """A check run that fails (its Spark job lost) judged nothing: the domain's run-failure sensor says so."""
    defs, received, _ = mesh
    instance = dg.DagsterInstance.ephemeral()

    @dg.op(name=checks_op_name("shop", "raw_orders"), config_schema={"partitions": [str]})
    def lost(_context) -> None:
        raise ConnectionError("Spark executor lost")

    @dg.job(name=checks_job_name("shop", "raw_orders"))
    def checks() -> None:
        lost()

    run = checks.execute_in_process(
        run_config=checks_run_config("shop", "raw_orders", [DAY]), instance=instance, raise_on_error=False
    )
    assert alert_failed_run(defs, instance, run.run_id, "shop") == []
    told = {a["mesh"]["table"]: a["mesh"] for a in received}
    assert set(told) == {"raw_orders", "orders"}
    owner = told["raw_orders"]
    assert (owner["kind"], owner["partitions"], owner["checks"]) == ("check run failed", [DAY], ["not_null_id"])
    assert "Spark executor lost" in owner["message"] and owner["run_url"].endswith(f"/runs/{run.run_id}")
    assert (told["orders"]["kind"], told["orders"]["source"]) == ("input check failed", "shop.raw_orders")
    assert "shop.orders waits for them" in told["orders"]["message"]


@dg.op
def _restore_step() -> None: ...


@dg.job
def _restore() -> None:
    _restore_step()


def test_a_runs_alert_a_down_server_did_not_take_is_retried_by_the_domains_sensor(monkeypatch):
    """An invalidation's or a restore's run alerts as it goes: what a down webhook did not take waits in the run's
    own queue, found by the run's tag, and is delivered once; the run is let go only once it has finished."""
    instance = dg.DagsterInstance.ephemeral()
    settings = AlertSettings(timeout_seconds=1)
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_SHOP", f"http://127.0.0.1:{free_port()}/hook")
    run = instance.create_run_for_job(_restore)
    warnings: list[str] = []
    alert = Alert("suspect", "shop", "orders", "orders", "team@example.com", "#orders", "restored", [DAY])

    Outbox.of_run(instance, "shop", run.run_id).send(alert, settings, warnings.append)
    assert len(warnings) == 1 and warnings[0].endswith("; it will be retried")
    assert instance.get_run_by_id(run.run_id).tags[run_tag("shop")] == "pending"

    received: list[dict] = []
    server = json_receiver(lambda _path, body: received.append(body))
    monkeypatch.setenv("MESH_ALERT_WEBHOOK_SHOP", f"http://127.0.0.1:{server.server_port}/hook")
    try:
        assert [a.message for a in retry(instance, "shop", settings, warnings.append)] == ["restored"]
        assert instance.get_run_by_id(run.run_id).tags[run_tag("shop")] == "pending"  # still running: may queue more
        instance.report_run_failed(run)
        assert retry(instance, "shop", settings, warnings.append) == []
    finally:
        server.shutdown()
    assert [a["mesh"]["message"] for a in received] == ["restored"]
    assert instance.get_run_by_id(run.run_id).tags[run_tag("shop")] == "done"
