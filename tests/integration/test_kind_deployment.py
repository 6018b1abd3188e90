"""Keyed kinds in a deployment as under ``make dev``: a webserver and a daemon over the kinds' fixture domains
(``km``: tests/fixtures/kinds_merge, ``hist``: tests/fixtures/history), one code server each (the session's
deployment, ``tests/deployment.py``).

``mesh stale`` asks the webserver's GraphQL API what the UI shows; a backfill launched as the UI's
*Materialize* dialog launches one (``launchPartitionBackfill`` with the range as picked) is executed by the
daemon, as is one planned by ``mesh backfill``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from deployment import Deployment
from order_status import DOMAINS as KM
from order_status import Orders
from test_kind_history import HISTORY, Couriers

from mesh_assets.backfill import Webserver, launch_backfill, plan_backfill
from mesh_assets.backfill.launch import LAUNCH, backfill_progress
from mesh_assets.backfill.stale import stale_partitions
from mesh_assets.cli.main import main
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[2]
D1, D2, D3 = "2021-06-01", "2021-06-02", "2021-06-03"
ORDER_STATE = dg.AssetKey(["km", "order_state"])
STATUS_CURRENT = dg.AssetKey(["km", "status_current"])


@pytest.fixture(scope="module")
def deployment(shared_deployment: Deployment) -> dict[str, str]:
    """The session's deployment (``tests/deployment.py``), whose ``km`` and ``hist`` locations serve the kinds'
    fixture domains. The environment of the CLI, with ``MESH_DAGSTER__URL``."""
    return shared_deployment.env


@pytest.fixture
def instance(deployment: dict[str, str]) -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.from_config(deployment["DAGSTER_HOME"]) as instance:
        yield instance


def warehouse(deployment: dict[str, str]) -> Path:
    return Path(deployment["MESH_HOME"]) / "warehouse"


def stale(deployment: dict[str, str], instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str | None, tuple]:
    webserver = Webserver(deployment["MESH_DAGSTER__URL"], timeout=120)
    return {s.partition: s.reasons for s in stale_partitions(webserver, instance, [key])}


def test_a_merge_tables_partition_is_stale_after_its_input_relands_and_not_after_a_rerun_that_commits_nothing(
    spark, deployment, instance, monkeypatch, capsys
):
    orders = Orders(spark, warehouse(deployment), instance)
    orders.land(D1, [(1, "placed", "2021-06-01 10:00")])
    orders.land(D2, [(1, "delivered", "2021-06-02 12:00"), (2, "placed", "2021-06-02 12:30")])
    orders.run("order_state", D1)
    orders.run("order_state", D2)
    assert stale(deployment, instance, ORDER_STATE) == {}

    orders.land(D2, [(1, "delivered", "2021-06-02 12:00"), (2, "picked_up", "2021-06-02 13:00")])  # re-landed
    reason = ("upstream data changed: km/raw_status 2021-06-02 has a new data version",)
    assert stale(deployment, instance, ORDER_STATE) == {D2: reason}
    for name, value in {**deployment, "MESH_DOMAINS_DIR": str(KM)}.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        assert main(["stale", "km/order_state"]) == 1
        printed = capsys.readouterr().out
        assert f"km/order_state {D2}: {reason[0]}" in printed
        assert "1 stale partition(s)" in printed

        orders.run("order_state", D2)  # its MERGE updates order 2
        assert stale(deployment, instance, ORDER_STATE) == {}
        version = orders.version("order_state")

        orders.land(D2, [(1, "delivered", "2021-06-02 12:00"), (2, "picked_up", "2021-06-02 13:00")])  # the same
        assert stale(deployment, instance, ORDER_STATE) == {D2: reason}
        again = orders.run("order_state", D2)  # nothing differs: no commit, yet the partition is up to date
        assert orders.version("order_state") == version
        event = again.get_asset_materialization_events()[0].materialization
        assert event.metadata["unchanged"].value is True
        assert stale(deployment, instance, ORDER_STATE) == {}
        assert main(["stale", "km/order_state"]) == 0
    finally:
        get_settings.cache_clear()


def launch_as_the_ui_does(deployment: dict[str, str], key: dg.AssetKey, start: str, end: str) -> str:
    """The *Materialize* dialog's backfill of ``start..end``: the range as picked, no Mesh planning."""
    webserver = Webserver(deployment["MESH_DAGSTER__URL"], timeout=60)
    params = {
        "partitionsByAssets": [
            {"assetKey": {"path": list(key.path)}, "partitions": {"ranges": [{"start": start, "end": end}]}}
        ]
    }
    result = webserver.graphql(LAUNCH, {"params": params})["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", result
    return result["backfillId"]


def finished(deployment: dict[str, str], instance: dg.DagsterInstance, backfill_id: str) -> list[str]:
    """Wait for the daemon to finish the backfill; the failure message of each of its runs that failed."""
    webserver = Webserver(deployment["MESH_DAGSTER__URL"], timeout=60)
    deadline = time.monotonic() + 600
    while not backfill_progress(webserver, backfill_id).finished:
        assert time.monotonic() < deadline, "the backfill did not finish"
        time.sleep(0.5)
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
    assert runs, "the daemon launched no run"
    failures = [f for r in runs for f in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)]
    return [f.dagster_event.event_specific_data.error.message for f in failures]


def test_a_ui_backfill_of_a_history_table_short_of_its_latest_partition_is_refused_naming_mesh_rebuild(
    spark, deployment, instance
):
    couriers = Couriers(spark, Path(deployment["MESH_HOME"]))
    couriers.instance = instance
    for day, zone in ((D1, "north"), (D2, "west"), (D3, "east")):
        couriers.land(day, [(1, zone, f"{day} 08:00:00")])
    assert couriers.run(HISTORY, D1, D3).success
    version, rows = couriers.version(HISTORY), couriers.versions(HISTORY)

    [refused] = finished(deployment, instance, launch_as_the_ui_does(deployment, HISTORY, D1, D2))
    assert f"{D1}..{D2} comes before its latest applied partition {D3}" in refused, refused
    assert "`mesh rebuild hist/courier_history`" in refused and "Nothing was computed" in refused
    assert couriers.version(HISTORY) == version and couriers.versions(HISTORY) == rows


def test_a_ui_backfill_of_a_merge_tables_past_day_is_refused_and_mesh_backfills_plan_extends_it(
    spark, deployment, instance
):
    """``status_current`` (no ``sequence_by``) applies days in order: the dialog's day 1 alone is refused with
    the backfill to run; ``mesh backfill``'s plan of day 1 reaches day 2 and replays both."""
    orders = Orders(spark, warehouse(deployment), instance)
    orders.land(D1, [(1, "placed", "2021-06-01 10:00")])
    orders.land(D2, [(1, "delivered", "2021-06-02 10:00")])
    orders.run("status_current", D1)
    orders.run("status_current", D2)
    version = orders.version("status_current")

    [refused] = finished(deployment, instance, launch_as_the_ui_does(deployment, STATUS_CURRENT, D1, D1))
    assert f"mesh backfill km/status_current --start {D1} --end {D2}" in refused, refused
    assert orders.version("status_current") == version

    orders.land(D1, [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 11:00")])  # day 1 re-landed
    plan = plan_backfill(
        orders.defs.resolve_asset_graph(), "km/status_current", D1, D1, downstream=False, instance=instance
    )
    assert [a.describe() for a in plan.assets] == [f"{D1}..{D2}"]
    webserver = Webserver(deployment["MESH_DAGSTER__URL"], timeout=60)
    assert finished(deployment, instance, launch_backfill(webserver, plan)) == []
    assert orders.rows("status_current") == {(1, "delivered", "2021-06-02 10:00"), (2, "placed", "2021-06-01 11:00")}
    assert orders.version("status_current") == version + 1
