"""The Dagster instance on Postgres (dagster-postgres) as ``mesh setup --instance postgres`` writes it: a
backfill launched through a webserver on that instance and executed by the backfill daemon's own iteration,
then two runs at once from separate processes (each with its own Spark) writing one table through one
instance, with no lock errors and nothing lost."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import processes
import psycopg2
import pytest
import shop
from dagster._core.instance.ref import InstanceRef
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.backfill import execute_backfill_iteration
from postgres import DATABASE, USER, Postgres, start_postgres, stop_postgres
from pyspark.sql import functions as F
from webserver import dagster_webserver, workspace

from mesh_assets import MeshResource
from mesh_assets.assets.specs import table_pool
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.backfill import Webserver, backfill_progress, launch_backfill, plan_backfill
from mesh_assets.settings import get_settings
from mesh_assets.storage.tables import TableRegistry

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

DAYS = [date(2021, 6, d) for d in range(1, 5)]
BACKFILLED = [d.isoformat() for d in DAYS[:2]]
AT_ONCE = [d.isoformat() for d in DAYS[2:]]
DEFINITIONS = Path(__file__).with_name("shop_definitions.py")
IN_PROCESS_RUNS = {
    # the daemon's runs execute in this process (the test's SparkSession) instead of through a code server
    "run_launcher": {
        "module": "dagster._core.launcher.sync_in_memory_run_launcher",
        "class": "SyncInMemoryRunLauncher",
    },
    "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"},
}


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    server = start_postgres()
    try:
        yield server
    finally:
        stop_postgres(server)


@pytest.fixture(scope="module")
def dagster_home(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DAGSTER_HOME as ``mesh setup --instance postgres`` leaves it: dagster.yaml written, the schema created."""
    base = tmp_path_factory.mktemp("postgres-instance")
    env = {**os.environ, **postgres.env, "DAGSTER_HOME": str(base / "dagster"), "MESH_HOME": str(base / "mesh")}
    command = [sys.executable, "-m", "mesh_assets.cli.main", "setup", "--instance", "postgres"]
    out = processes.run(command, base / "setup.log", env, timeout=300)
    assert "PostgresRunStorage" in out
    return base / "dagster"


@pytest.fixture
def warehouse(postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """This process reads the instance's variables and writes to a warehouse of its own while the test runs."""
    for key, value in postgres.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MESH_WAREHOUSE", str(tmp_path / "warehouse"))
    get_settings.cache_clear()
    yield str(tmp_path / "warehouse")
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def webserver(postgres: Postgres, dagster_home: Path) -> Iterator[Webserver]:
    """The webserver ``mesh backfill`` launches through, on the Postgres instance, serving ``shop``."""
    env = {**os.environ, **postgres.env, "DAGSTER_HOME": str(dagster_home)}
    served = workspace(dagster_home.parent / "workspace.yaml", {"shop": DEFINITIONS}, DEFINITIONS.parent)
    with dagster_webserver(served, env, dagster_home.parent / "webserver.log") as url:
        yield Webserver(url)


def execute_backfill(instance: dg.DagsterInstance, webserver: Webserver, backfill_id: str, iterations: int = 10) -> str:
    """What ``dagster-daemon`` does for a requested backfill, one iteration at a time, until it ends."""
    origin = LoadableTargetOrigin(executable_path=sys.executable, python_file=str(DEFINITIONS), attribute="defs")
    target = InProcessWorkspaceLoadTarget(InProcessCodeLocationOrigin(origin, location_name="shop"))
    with WorkspaceProcessContext(instance, target) as context:
        for _ in range(iterations):
            list(execute_backfill_iteration(context, logging.getLogger("mesh.tests.backfill")))
            progress = backfill_progress(webserver, backfill_id)
            if progress.finished:
                return progress.status
    return backfill_progress(webserver, backfill_id).status


def test_runs_at_once_and_a_backfill_on_postgres_lose_nothing(
    spark, postgres: Postgres, dagster_home: Path, webserver: Webserver, warehouse: str, tmp_path: Path
) -> None:
    written = (dagster_home / "dagster.yaml").read_text()
    assert "postgres_db:" in written and "DAGSTER_PG_PASSWORD" in written and postgres.password not in written
    registry = TableRegistry(warehouse)
    shop.land(spark, registry, DAYS)

    # a backfill as `mesh backfill` launches it, executed by the daemon's backfill iteration
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home), overrides=IN_PROCESS_RUNS)) as daemon:
        observe_now(shop.definitions(), daemon, MeshResource(warehouse=warehouse))  # the observer's report
        graph = shop.definitions().resolve_asset_graph()
        plan = plan_backfill(graph, "shop.orders", BACKFILLED[0], BACKFILLED[-1], downstream=False)
        backfill_id = launch_backfill(webserver, plan)
        assert execute_backfill(daemon, webserver, backfill_id) == "COMPLETED_SUCCESS"

    # two runs started at once, each in its own process with its own Spark, on the same instance; their
    # partitions are disjoint, which Delta commits concurrently, so the operator lets the table's pool take both
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home))) as instance:
        instance.event_log_storage.set_concurrency_slots(table_pool(*shop.ORDERS), len(AT_ONCE))
    env = {"DAGSTER_HOME": str(dagster_home), "MESH_WAREHOUSE": warehouse, **postgres.env}
    started = []
    try:
        for day in AT_ONCE:
            command = shop.run_command("--instance", "home", "--partitions", day)
            log = tmp_path / f"run-{day}.log"
            started.append((log, processes.start(command, log, shop.run_env(tmp_path / day, **env))))
        for log, process in started:
            assert process.wait(timeout=600) == 0, processes.tail(log)
    finally:
        for _, process in started:
            processes.stop(process)
    assert not any("locked" in log.read_text().lower() for log, _ in started)

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home))) as instance:
        runs = instance.get_runs()
        assert len(runs) == 1 + len(AT_ONCE)
        assert {r.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
        assert [r.tags.get("dagster/backfill") for r in runs].count(backfill_id) == 1
        materialized, spans = complete_event_logs(instance, runs)
        assert sorted(materialized) == [("shop/orders", p) for p in BACKFILLED + AT_ONCE]  # each exactly once
        assert instance.get_materialized_partitions(dg.AssetKey(shop.ORDERS)) == set(BACKFILLED + AT_ONCE)
        at_once = [span for run, span in zip(runs, spans, strict=True) if "dagster/backfill" not in run.tags]
        assert max(start for start, _ in at_once) < min(end for _, end in at_once)  # both were running at once
    assert stored_in_postgres(postgres) == (len(runs), len(materialized))
    assert_every_order_once(spark, registry)


def complete_event_logs(instance: dg.DagsterInstance, runs) -> tuple[list[tuple[str, str]], list[tuple[float, float]]]:
    """Each run's event log from start to success, without lock errors: the (asset, partition) pairs it
    materialized, all it had planned, and when it started and ended."""
    materialized, spans = [], []
    for run in runs:
        events = instance.all_logs(run.run_id)
        kinds = [e.dagster_event_type for e in events]
        assert kinds[-1] == dg.DagsterEventType.RUN_SUCCESS and dg.DagsterEventType.RUN_START in kinds
        assert not any("lock" in (e.message or "").lower() for e in events)
        dagster_events = [e.dagster_event for e in events if e.dagster_event is not None]
        planned = [pair for e in dagster_events if e.is_asset_materialization_planned for pair in planned_keys(e)]
        done = [(e.asset_key.to_user_string(), e.partition) for e in dagster_events if e.is_step_materialization]
        assert sorted(done) == sorted(planned) and done
        materialized += done
        times = {e.dagster_event_type: e.timestamp for e in events}
        spans.append((times[dg.DagsterEventType.RUN_START], times[dg.DagsterEventType.RUN_SUCCESS]))
    return materialized, spans


def planned_keys(event: dg.DagsterEvent) -> list[tuple[str, str | None]]:
    """The (asset, partition) pairs a planned-materialization event announces (a range run: as a subset)."""
    asset, subset = event.asset_key.to_user_string(), event.partitions_subset
    return [(asset, key) for key in (subset.get_partition_keys() if subset is not None else [event.partition])]


def stored_in_postgres(server: Postgres) -> tuple[int, int]:
    """Runs, and materialization events of ``shop.orders`` (not the observer's reports of the landed export),
    counted in the database itself."""
    connection = psycopg2.connect(
        host=server.host, port=server.port, user=USER, password=server.password, dbname=DATABASE
    )
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT COUNT(*) FROM runs")
        runs = cursor.fetchone()[0]
        cursor.execute(
            "SELECT COUNT(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND asset_key = %s",
            (dg.AssetKey(shop.ORDERS).to_string(),),
        )
        return runs, cursor.fetchone()[0]
    finally:
        connection.close()


def assert_every_order_once(spark, registry: TableRegistry) -> None:
    """Every landed order is in the product exactly once, in its own day's partition."""
    raw = spark.read.format("delta").load(registry.location("shop", "raw_orders"))
    landed = raw.groupBy("p_date").agg(F.countDistinct("id").alias("n")).collect()
    orders = spark.read.format("delta").load(registry.location(*shop.ORDERS))
    counted = orders.groupBy("p_date").agg(F.count("*").alias("rows"), F.countDistinct("id").alias("ids")).collect()
    assert {r["p_date"]: (r["rows"], r["ids"]) for r in counted} == {r["p_date"]: (r["n"], r["n"]) for r in landed}
    assert orders.select("id").distinct().count() == orders.count()
