"""Spark Connect as an always-on engine: a Delta-enabled Connect server started by Mesh's own command, and
runs that only open a gRPC channel to it (``sc://``) writing the same rows as local mode."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import processes
import pytest
import shop
from delta.tables import DeltaTable
from integration.order_status import DOMAINS as KINDS_MERGE
from integration.order_status import Orders
from processes import free_port, start, stop, wait_for_port
from shop import RANGE, LocalShop

from mesh_assets.engine.connect_server import server_command, server_env
from mesh_assets.settings import MeshSettings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

MERGE_RUN = KINDS_MERGE.parent / "materialize.py"
"""One run of a ``km`` table in a process of its own, Spark as its settings name it."""
D1, D2 = "2021-06-01", "2021-06-02"


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sc://127.0.0.1:<port>`` of a running server, stopped (with its JVM) after the module."""
    base = tmp_path_factory.mktemp("connect")
    port = free_port()
    command = server_command(MeshSettings(home=base / "server"), port=port)
    server = start(command, base / "server.log", server_env())
    try:
        wait_for_port(port, server, base / "server.log")
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop(server)


def test_runs_through_spark_connect_write_what_local_mode_writes(
    spark, connect_server: str, local_shop: LocalShop, tmp_path
) -> None:
    warehouse = local_shop.registry.warehouse
    env = shop.run_env(tmp_path / "home", MESH_SPARK__MASTER=connect_server, MESH_WAREHOUSE=warehouse)
    assets = ["--assets", "shop/orders", "shop/city_orders"]
    out = shop.run(tmp_path / "run.log", env, "--partitions", RANGE, *assets, "--rows")

    assert out["master"] == connect_server and out["session"] == "pyspark.sql.connect.session"
    assert [r["success"] for r in out["runs"]] == [True]
    # the Connect client read back the same rows local mode had written, and so does the local session now
    assert out["rows"] == local_shop.rows
    for key in (shop.ORDERS, shop.CITY_ORDERS):
        assert shop.rows(spark, local_shop.registry, key) == local_shop.rows["/".join(key)]
        location = local_shop.registry.location(*key)
        latest = DeltaTable.forPath(spark, location).history(1).collect()[0]
        assert json.loads(latest["userMetadata"])["dagster_run_id"] == out["runs"][0]["run_id"]
        # the materialization recorded the version of the run's own commit, read without a JVM handle
        assert out["runs"][0]["versions"]["/".join(key)] == latest["version"] > 0


def test_a_merge_through_spark_connect_commits_what_local_mode_commits(spark, connect_server: str, tmp_path) -> None:
    """``km.order_state`` (merge on order_id by updated_at, a delete condition) run day by day in processes that
    reach Spark only through ``sc://``: the same rows as local mode, one ``MERGE`` commit, none for a re-run."""
    local, remote = Orders(spark, tmp_path / "local"), Orders(spark, tmp_path / "remote")
    days = {
        D1: [(1, "placed", "2021-06-01 10:00"), (2, "placed", "2021-06-01 10:05"), (3, "placed", "2021-06-01 11:00")],
        D2: [
            (1, "delivered", "2021-06-02 12:00"),
            (2, "placed", "2021-06-01 09:00"),
            (3, "cancelled", "2021-06-02 08:00"),
        ],
    }
    env = shop.run_env(tmp_path / "home", MESH_SPARK__MASTER=connect_server, MESH_WAREHOUSE=remote.mesh.warehouse)
    env["JAVA_HOME"] = str(tmp_path / "no-java")  # no JVM can start in the run process: Spark is the server's

    def through_connect(day: str) -> None:
        processes.run([sys.executable, str(MERGE_RUN), "order_state", day], tmp_path / f"{day}.log", env)

    for day, updates in days.items():
        local.land(day, updates)
        remote.land(day, updates)
        local.run("order_state", day)
        through_connect(day)
    assert (
        remote.rows("order_state")
        == local.rows("order_state")
        == {
            (1, "delivered", "2021-06-02 12:00"),
            (2, "placed", "2021-06-01 10:05"),
        }
    )
    merged = remote.last_commit("order_state")
    assert merged["operation"] == "MERGE" and merged["version"] == local.version("order_state") == 1
    assert int(merged["operationMetrics"]["numTargetRowsDeleted"]) == 1

    through_connect(D2)  # the same input again: nothing differs, nothing is committed
    assert remote.version("order_state") == 1
