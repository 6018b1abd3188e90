"""Failure alerts come from the domain's run-failure sensor, which reads the run, not the asset body: a run that
dies without a Python failure (its worker killed for memory or lost, then failed by the instance) alerts its
owners too, dbt models' owners included, and a refused run says why. None needs Spark: nothing here gets as
far as computing."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from failure_alerts import alert_failed_run

from mesh_assets import executable_assets
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.storage.resource import MeshResource

ROOT = Path(__file__).resolve().parents[2]

SPEC = """\
name: orders
owner: team@example.com
contacts: [{kind: chat, value: "#orders"}]
start_date: "2021-06-01"
external:
  - {table: raw_orders}
tables:
  - table: orders
    published: true
    inputs: [{table: shop.raw_orders}]
    sql: SELECT id FROM shop.raw_orders
"""
CONSUMER = """\
name: invoices
owner: billing@example.com
contacts: [{kind: chat, value: "#billing"}]
start_date: "2021-06-01"
tables:
  - table: invoices
    inputs: [{table: shop.orders}]
    sql: SELECT id FROM shop.orders
"""
ORDERS = dg.AssetKey(["shop", "orders"])
DAY, NEXT_DAY = "2021-06-04", "2021-06-05"
KILLED = "Run worker process has unexpectedly exited with code -9 (killed for memory)."


def fail_outside_python(defs: dg.Definitions, instance: dg.DagsterInstance, key: dg.AssetKey) -> dg.DagsterRun:
    """A run of ``key`` for ``DAY`` whose worker died: the instance marks it failed, as run monitoring does."""
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={key})
    run = instance.create_run_for_job(job, asset_selection={key}, tags={"dagster/partition": DAY})
    instance.report_run_failed(run, message=KILLED)
    return run


@pytest.fixture
def shop(tmp_path: Path, webhook) -> tuple[dg.Definitions, list[dict]]:
    """The ``shop`` domain's definitions and its reader's (``billing.invoices``), their alerts going to the test's
    receiver."""
    received, point = webhook
    for domain, spec in {"shop": SPEC, "billing": CONSUMER}.items():
        point(domain)
        (tmp_path / domain).mkdir()
        (tmp_path / domain / f"{domain}.yaml").write_text(spec)
    return build_definitions(load_all(tmp_path), extra=[]), received


def test_a_run_failed_without_a_step_failure_alerts_the_owner(shop):
    defs, received = shop
    instance = dg.DagsterInstance.ephemeral()
    run = fail_outside_python(defs, instance, ORDERS)

    assert alert_failed_run(defs, instance, run.run_id, "shop") == []
    [alert] = [body["mesh"] for body in received]
    assert alert.pop("run_url").endswith(f"/runs/{run.run_id}")
    assert alert == {
        "kind": "run failed",
        "domain": "shop",
        "product": "orders",
        "table": "orders",
        "owner": "team@example.com",
        "channel": "#orders",
        "message": KILLED,
        "partitions": [DAY],
        "checks": [],
        "run_id": run.run_id,
        "source": None,
        "backfill_url": None,
        "emails": [],
        "asset_url": "http://127.0.0.1:3000/assets/shop/orders",
    }
    assert f"[shop/orders] run failed: shop.orders partition(s) {DAY}" in received[0]["text"]


def test_a_backfill_run_refused_for_its_inputs_tells_its_owners_and_its_readers_owners_once(shop, tmp_path: Path):
    defs, received = shop
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        executable_assets(defs),
        instance=instance,
        resources={"mesh": MeshResource(warehouse=str(tmp_path / "warehouse"))},
        selection=[ORDERS],
        tags={  # one run of a backfill, over two days
            "dagster/backfill": "bkfl0001",
            "dagster/asset_partition_range_start": DAY,
            "dagster/asset_partition_range_end": NEXT_DAY,
        },
        raise_on_error=False,
    )
    assert not result.success
    assert received == []  # the step itself tells nobody

    alert_failed_run(defs, instance, result.run_id, "shop")
    alerts = {body["mesh"]["domain"]: body["mesh"] for body in received}
    assert len(received) == len(alerts) == 2  # once each, for the whole range
    producer, reader = alerts["shop"], alerts["billing"]
    assert (producer["kind"], producer["partitions"], producer["checks"]) == ("inputs not ready", [DAY, NEXT_DAY], [])
    assert producer["backfill_url"].endswith("/runs/b/bkfl0001") and "|backfill>" in received[0]["text"]
    assert producer["message"] == (
        f"shop.orders: not published: partition {DAY} not computed: shop.raw_orders (not landed); "
        f"partition {NEXT_DAY} not computed: shop.raw_orders (not landed)"
    )
    assert (reader["kind"], reader["table"], reader["owner"], reader["channel"]) == (
        "input refused",
        "invoices",
        "billing@example.com",
        "#billing",
    )
    assert (reader["source"], reader["partitions"], reader["run_id"]) == ("shop.orders", [DAY, NEXT_DAY], result.run_id)
    assert reader["backfill_url"] == producer["backfill_url"]
    assert reader["message"].startswith("shop.orders was not published (inputs not ready); billing.invoices waits")


def test_a_restricted_tables_alert_withholds_the_message(tmp_path: Path, webhook):
    received, point = webhook
    point("shop")
    (tmp_path / "shop").mkdir()
    restricted = SPEC.replace(
        "external:\n  - {table: raw_orders}", "classification: l3\nexternal:\n  - {table: raw_orders, published: false}"
    ).replace("    published: true\n", "")  # only its own domain may read a restricted table
    (tmp_path / "shop" / "orders.yaml").write_text(restricted)
    defs = build_definitions(load_all(tmp_path), extra=[])
    instance = dg.DagsterInstance.ephemeral()
    run = fail_outside_python(defs, instance, ORDERS)

    alert_failed_run(defs, instance, run.run_id, "shop")
    [alert] = [body["mesh"] for body in received]
    assert (alert["kind"], alert["partitions"], alert["run_id"]) == ("run failed", [DAY], run.run_id)
    assert alert["message"] == "run failed; message withheld: shop.orders is classified l3, see the run"
    assert "killed" not in received[0]["text"] + alert["message"]


def test_a_failed_dbt_run_alerts_the_owner_its_model_names(webhook):
    received, point = webhook
    point("analytics")
    # analytics' code location: its dbt models, built by its own definitions
    defs = build_definitions(load_all(ROOT / "domains"), only={"analytics"}, dbt=True)
    instance = dg.DagsterInstance.ephemeral()
    run = fail_outside_python(defs, instance, dg.AssetKey(["analytics", "stg_orders"]))

    alert_failed_run(defs, instance, run.run_id, "analytics")
    [alert] = [body["mesh"] for body in received]
    assert (alert["kind"], alert["product"], alert["table"]) == ("run failed", "city_kpis", "stg_orders")
    assert (alert["owner"], alert["partitions"], alert["run_id"]) == ("analytics@example.com", [DAY], run.run_id)
