"""`mesh backfill --wait` as under ``make dev``: launched through a real webserver, executed by a real daemon,
followed by the CLI (the session's deployment, ``tests/deployment.py``)."""

from __future__ import annotations

import subprocess
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest
from delta.tables import DeltaTable
from deployment import Deployment
from pyspark.sql import functions as F
from rich.console import Console
from webserver import BIN

from mesh_assets import MeshResource, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.backfill import Webserver, launch_backfill, not_published, plan_backfill
from mesh_assets.cli.backfills import wait_for_backfill
from mesh_examples import generator
from mesh_examples.landing import land_food_delivery, land_raw_orders

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
DAYS = [date(2021, 6, 1), date(2021, 6, 2), date(2021, 6, 3)]
BAD_DAY = date(2021, 6, 4)
ORDERS = dg.AssetKey(["food_delivery", "orders"])


@pytest.fixture(scope="module")
def services(shared_deployment: Deployment) -> dict[str, str]:
    """``make dev`` for the module: the session's deployment (``tests/deployment.py``), whose ``food_delivery``
    location this module's backfills run in; the CLI's environment."""
    return shared_deployment.env


def backfill(deployment: dict[str, str], start: str, end: str, option: str = "--wait") -> subprocess.CompletedProcess:
    """``mesh backfill food_delivery.orders --start .. --end .. --wait`` as an operator types it."""
    return subprocess.run(
        [BIN / "mesh", "backfill", "food_delivery.orders", "--start", start, "--end", end, option],
        env={**deployment, "COLUMNS": "160"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_backfill_wait_follows_the_daemon_to_completion(spark, services) -> None:
    base = Path(services["MESH_HOME"])
    mesh = MeshResource(warehouse=str(base / "warehouse"))
    land_food_delivery(spark, mesh.registry, [*DAYS, BAD_DAY])
    rows = [(None, *row[1:]) if i == 0 else row for i, row in enumerate(generator.raw_orders(BAD_DAY))]
    land_raw_orders(spark, mesh.registry, BAD_DAY, BAD_DAY, rows)  # an order without its id: refused upstream
    defs = mesh_definitions(ROOT / "domains")
    with dg.DagsterInstance.from_config(services["DAGSTER_HOME"]) as instance:
        observe_now(defs, instance, mesh)  # the observer's report and check run

    done = backfill(services, "2021-06-01", "2021-06-03")
    assert done.returncode == 0, done.stdout + done.stderr + (base / "daemon.log").read_text()[-4000:]
    assert "Launched backfill" in done.stdout
    assert "COMPLETED" in done.stdout

    with dg.DagsterInstance.from_config(services["DAGSTER_HOME"]) as instance:
        [first] = [b for b in instance.get_backfills() if ORDERS in (b.asset_selection or ())]
        assert first.status.value in ("COMPLETED", "COMPLETED_SUCCESS")
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": first.backfill_id}))
        assert len(runs) == 1  # a single-run backfill: the range is one run
        assert runs[0].status == dg.DagsterRunStatus.SUCCESS
        assert instance.get_materialized_partitions(dg.AssetKey(["food_delivery", "orders"])) == {
            d.isoformat() for d in DAYS
        }
    orders = spark.read.format("delta").load(mesh.registry.location("food_delivery", "orders"))
    raw = spark.read.format("delta").load(mesh.registry.location("food_delivery", "raw_orders"))
    per_day = {r["p_date"]: r["count"] for r in orders.groupBy("p_date").count().collect()}
    counted = raw.where(F.col("p_date").isin(DAYS)).groupBy("p_date").agg(F.countDistinct("id").alias("n"))
    expected = {r["p_date"]: r["n"] for r in counted.collect()}
    assert per_day == expected and set(per_day) == set(DAYS)

    def version() -> int:
        return (
            DeltaTable.forPath(spark, mesh.registry.location("food_delivery", "orders")).history(1).first()["version"]
        )

    published = version()
    never = (BAD_DAY + timedelta(days=1)).isoformat()  # raw orders never landed
    dry = backfill(services, "2021-06-03", never, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"food_delivery/orders {never}: food_delivery/raw_orders {never} never materialized" in dry.stdout

    # The UI's Materialize dialog sends the whole range as it is: the run refuses the days that are not ready.
    graph = defs.resolve_asset_graph()
    plan = plan_backfill(graph, "food_delivery/orders", "2021-06-03", never, downstream=False)
    webserver = Webserver(services["MESH_DAGSTER__URL"], timeout=60)
    backfill_id = launch_backfill(webserver, plan)
    console = Console(record=True, width=160)
    with dg.DagsterInstance.from_config(services["DAGSTER_HOME"]) as instance:
        code = wait_for_backfill(webserver, backfill_id, console, lambda p: not_published(instance, graph, plan, p))
        [run] = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        [failure] = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)

    assert code == 1
    assert f"not published: food_delivery/orders {BAD_DAY}, {never}" in console.export_text()
    refused = failure.dagster_event.event_specific_data.error.message
    assert f"partition {never} not computed: food_delivery.raw_orders {never} (not landed)" in refused
    assert f"food_delivery.raw_orders {BAD_DAY} (check" in refused
    after = spark.read.format("delta").load(mesh.registry.location("food_delivery", "orders"))
    assert {r["p_date"] for r in after.select("p_date").distinct().collect()} == set(DAYS)
    assert {r["p_date"]: r["count"] for r in after.groupBy("p_date").count().collect()} == per_day
    assert version() == published + 1  # the ready day, published again in one commit
