"""`mesh backfill --wait` as under ``make dev``: launched through a real webserver, executed by a real daemon,
followed by the CLI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import functions as F
from quick_daemon import COMMAND as DAEMON
from services import processes
from webserver import BIN, code_server, dagster_webserver, grpc_workspace

from mesh_assets import MeshResource, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_examples import generator
from mesh_examples.landing import land_food_delivery, land_raw_orders

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
DAYS = [date(2021, 6, 1), date(2021, 6, 2), date(2021, 6, 3)]
BAD_DAY = date(2021, 6, 4)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A throwaway Mesh home and Dagster instance."""
    base = tmp_path_factory.mktemp("deployment")
    (base / "dagster").mkdir()
    return {
        **os.environ,
        "MESH_HOME": str(base),
        "DAGSTER_HOME": str(base / "dagster"),
        "MESH_PROJECT_ROOT": str(ROOT),
        "MESH_AUTOMATION__ENABLED": "false",  # only the backfill runs: no sensor competes for the machine
    }


@pytest.fixture(scope="module")
def services(deployment: dict[str, str]) -> Iterator[dict[str, str]]:
    """``make dev`` for the module: the instance set up, one code location (food_delivery) served to a daemon
    and a webserver by one code server; the CLI's environment."""
    base = Path(deployment["MESH_HOME"])
    subprocess.run([BIN / "mesh", "setup"], env=deployment, check=True, capture_output=True, cwd=ROOT)
    definitions = ROOT / "domains" / "food_delivery" / "definitions.py"
    with code_server("food_delivery", definitions, ROOT, deployment, base / "code-server.log") as sock:
        workspace_yaml = grpc_workspace(base / "workspace.yaml", {"food_delivery": sock})
        daemon = processes.start([*DAEMON, "run", "-w", workspace_yaml], base / "daemon.log", deployment)
        try:
            with dagster_webserver(workspace_yaml, deployment, base / "webserver.log") as url:
                yield {**deployment, "MESH_DAGSTER__URL": url}
        finally:
            processes.stop(daemon)


def backfill(deployment: dict[str, str], start: str, end: str) -> subprocess.CompletedProcess:
    """``mesh backfill food_delivery.orders --start .. --end .. --wait`` as an operator types it."""
    return subprocess.run(
        [
            BIN / "mesh",
            "backfill",
            "food_delivery.orders",
            "--start",
            start,
            "--end",
            end,
            "--wait",
        ],
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
    with dg.DagsterInstance.from_config(services["DAGSTER_HOME"]) as instance:
        observe_now(mesh_definitions(ROOT / "domains"), instance, mesh)  # the observer's report and check run

    done = backfill(services, "2021-06-01", "2021-06-03")
    assert done.returncode == 0, done.stdout + done.stderr + (base / "daemon.log").read_text()[-4000:]
    assert "Launched backfill" in done.stdout
    assert "COMPLETED" in done.stdout

    with dg.DagsterInstance.from_config(services["DAGSTER_HOME"]) as instance:
        [first] = instance.get_backfills()
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

    refused = backfill(services, "2021-06-03", BAD_DAY.isoformat())  # the bad day's input check failed

    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "COMPLETED_FAILED" in refused.stdout or "FAILED" in refused.stdout
    assert f"not published: food_delivery/orders {BAD_DAY}" in refused.stdout
    after = spark.read.format("delta").load(mesh.registry.location("food_delivery", "orders"))
    assert {r["p_date"] for r in after.select("p_date").distinct().collect()} == set(DAYS)
