"""The daemon runs the whole chain over real code servers, as under ``make dev`` (``tests/deployment.py``).

An outside writer lands ``feeds.events`` and the ``feeds.menu`` dimension (``tests/fixtures/daemon``); the
observer reports the new commits, the check run judges the landed day, the automation of another domain
(``sales``) launches ``sales.totals``, and the rows arrive in its Delta table. A run that fails its check and a
run whose worker is killed reach the owners' webhook through the run-failure sensor (the killed one is then
marked for the daemon's retry); ``sales.strict_totals`` allows the menu less age than it has, so it waits and both
owners are told; a paused product's automation waits until ``mesh resume`` and then catches up.

Automation is switched on here for ``feeds`` and ``sales`` alone, through the webserver as the UI does, and off
again at the end: the deployment's other locations belong to other test files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from deployment import FIXTURES, Deployment
from reliability import wait_for
from webserver import BIN

from mesh_assets import MeshResource

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = FIXTURES / "daemon" / "domains"
TOTALS, STRICT = dg.AssetKey(["sales", "totals"]), dg.AssetKey(["sales", "strict_totals"])
EVENTS = dg.AssetKey(["feeds", "events"])
SENSORS = (
    ("feeds", "feeds__observe_external_tables"),
    ("sales", "sales__automation"),
    ("sales", "sales__input_deadlines"),
)
WAIT = 600.0
"""Seconds a step of the chain may take on a loaded machine (a run starts a Spark JVM); polls are fast."""
TODAY = datetime.now(UTC).date()
D1, D2, D3, D4 = (TODAY - timedelta(days=back) for back in (4, 3, 2, 1))


class Mesh:
    """The deployment seen from outside: the writer's tables, the instance, the alerts, the CLI."""

    def __init__(self, spark, deployment: Deployment):
        self.spark = spark
        self.deployment = deployment
        self.registry = MeshResource(warehouse=str(deployment.warehouse)).registry
        self.instance = dg.DagsterInstance.from_config(deployment.dagster_home)

    def land_menu(self) -> None:
        rows = [(0, "pizza"), (1, "sushi")]
        frame = self.spark.createDataFrame(rows, "id bigint, name string")
        frame.write.format("delta").mode("overwrite").save(self.registry.location("feeds", "menu"))

    def land_events(self, day: date, menu_ids: list[int]) -> None:
        rows = [(i, menu, day) for i, menu in enumerate(menu_ids)]
        frame = self.spark.createDataFrame(rows, "id bigint, menu_id bigint, p_date date")
        frame.write.format("delta").mode("append").partitionBy("p_date").save(self.registry.location("feeds", "events"))

    def totals(self, day: date) -> list[tuple]:
        table = self.spark.read.format("delta").load(self.registry.location("sales", "totals"))
        return sorted((r["id"], r["name"]) for r in table.where(table.p_date == day).collect())

    def published(self, key: dg.AssetKey) -> set[str]:
        return self.instance.get_materialized_partitions(key)

    def runs_of(self, key: dg.AssetKey, day: date) -> list[dg.DagsterRun]:
        runs = self.instance.get_runs(dg.RunsFilter(tags={"dagster/partition": day.isoformat()}))
        return [r for r in runs if r.asset_selection and key in r.asset_selection]

    def alert(self, match: Callable[[dict], bool], what: str) -> dict:
        found = wait_for(lambda: [a["mesh"] for a in self.deployment.alerts if match(a["mesh"])], WAIT, what, 0.5)
        return found[0]

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = {**self.deployment.env, "MESH_DOMAINS_DIR": str(DOMAINS), "COLUMNS": "160"}
        return subprocess.run(
            [BIN / "mesh", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
        )

    def logs(self) -> str:
        return (self.deployment.home / "daemon.log").read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def mesh(spark, shared_deployment: Deployment) -> Iterator[Mesh]:
    """The deployment with the observer, automation and deadlines of ``feeds`` and ``sales`` switched on."""
    world = Mesh(spark, shared_deployment)
    started = time.time()
    for location, sensor in SENSORS:
        shared_deployment.switch(location, sensor, on=True)
    for location, sensor in SENSORS:  # what lands during an automation sensor's first tick never triggers a run
        first = f"a first tick of {sensor}"
        wait_for(lambda at=location, name=sensor: shared_deployment.ticked(at, name, started), WAIT, first, 0.5)
    try:
        yield world
    finally:
        for location, sensor in SENSORS:
            shared_deployment.switch(location, sensor, on=False)
        world.instance.dispose()


def test_an_outside_write_reaches_another_domains_table_through_observer_checks_and_automation(mesh):
    mesh.land_menu()
    mesh.land_events(D1, [0, 1, 0, 1])

    wait_for(lambda: D1.isoformat() in mesh.published(TOTALS), WAIT, f"sales.totals {D1}", 0.5)

    assert mesh.totals(D1) == [(0, "pizza"), (1, "sushi"), (2, "pizza"), (3, "sushi")]
    history = mesh.instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(EVENTS, "not_null_id"), limit=10
    )
    judged = [(r.partition, r.status.value) for r in history if r.partition is not None]  # not the run's plan
    assert judged == [(D1.isoformat(), "SUCCEEDED")]
    [checks] = mesh.instance.get_runs(dg.RunsFilter(tags={"mesh/checks_of": "feeds/events"}))
    assert checks.status == dg.DagsterRunStatus.SUCCESS  # the observer's check run of the landed day
    [run] = mesh.runs_of(TOTALS, D1)
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.tags["dagster/sensor_name"] == "sales__automation" and run.tags["mesh/engine"] == "spark"


def test_a_dimension_older_than_allowed_holds_its_consumer_and_tells_both_owners(mesh):
    told = mesh.alert(lambda a: a["kind"] == "input stale" and a["table"] == "strict_totals", "the stale alert")

    assert "input feeds.menu stale for sales.strict_totals: feeds.menu (stale: last updated" in told["message"]
    assert "freshness_hours is 0.0005 h)" in told["message"]
    assert D1.isoformat() in told["partitions"]
    producer = mesh.alert(lambda a: a["kind"] == "input stale for a reader", "the menu owners' alert")
    assert (producer["domain"], producer["table"]) == ("feeds", "menu")
    assert D1.isoformat() not in mesh.published(STRICT) and mesh.runs_of(STRICT, D1) == []  # held, not failed


def test_a_failed_check_and_a_killed_run_reach_the_owners_webhook(mesh):
    mesh.land_events(D2, [0, 7])  # menu 7 is unknown: the row has no name, not_null_name fails

    failed = mesh.alert(lambda a: a["partitions"] == [D2.isoformat()] and a["table"] == "totals", "the check alert")

    assert failed["checks"] == ["not_null_name"] and failed["run_url"].endswith(f"/runs/{failed['run_id']}")
    assert f"not_null_name on partition {D2.isoformat()} failed" in failed["message"]
    assert D2.isoformat() not in mesh.published(TOTALS)

    gate = mesh.deployment.gate
    (gate / "hold").touch()  # the next run of totals waits in its transformation
    try:
        mesh.land_events(D3, [1, 0])
        pid = int(
            wait_for(
                lambda: (gate / "started").exists() and (gate / "started").read_text().split(),
                WAIT,
                "the run of totals to reach its transformation",
                0.2,
            )[0]
        )
        [killed] = mesh.runs_of(TOTALS, D3)
        os.kill(pid, signal.SIGKILL)  # its run worker, as the kernel's OOM killer would
        told = mesh.alert(lambda a: a["partitions"] == [D3.isoformat()] and a["run_id"] == killed.run_id, "the kill")
    finally:
        (gate / "hold").unlink(missing_ok=True)

    assert told["kind"] == "run failed" and told["table"] == "totals"
    assert told["run_url"].endswith(f"/runs/{killed.run_id}")
    ended = mesh.instance.get_run_by_id(killed.run_id)
    assert ended.status == dg.DagsterRunStatus.FAILURE
    assert D3.isoformat() not in mesh.published(TOTALS)
    # The instance's retry policy re-executes a run whose worker crashed, never one that failed its check.
    assert ended.tags["dagster/will_retry"] == "true"
    [checked] = mesh.runs_of(TOTALS, D2)
    assert checked.status == dg.DagsterRunStatus.FAILURE and checked.tags["dagster/will_retry"] == "false"


def test_a_paused_product_waits_and_automation_catches_up_once_resumed(mesh):
    paused = mesh.cli("pause", "sales/totals", "--reason", "menu migration")
    assert paused.returncode == 0, paused.stdout + paused.stderr
    mesh.land_events(D4, [0])
    wait_for(lambda: D4.isoformat() in mesh.published(EVENTS), WAIT, f"the observer's report of {D4}", 0.5)
    checked = dg.AssetCheckKey(EVENTS, "not_null_id")
    wait_for(
        lambda: any(
            r.partition == D4.isoformat()
            for r in mesh.instance.event_log_storage.get_asset_check_execution_history(checked, limit=10)
        ),
        WAIT,
        f"the check of {D4}",
        0.5,
    )
    time.sleep(12)  # two automation ticks at least: the product is paused, nothing is requested

    assert mesh.runs_of(TOTALS, D4) == []

    resumed = mesh.cli("resume", "sales/totals")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    wait_for(lambda: D4.isoformat() in mesh.published(TOTALS), WAIT, f"sales.totals {D4} after resume", 0.5)
    assert mesh.totals(D4) == [(0, "pizza")]
