"""Spark Connect as an always-on engine: a Delta-enabled Connect server started by Mesh's own command, and
runs that only open a gRPC channel to it (``sc://``) writing the same rows as local mode."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import shop
from delta.tables import DeltaTable
from processes import free_port, start, stop, wait_for_port
from shop import RANGE, LocalShop

from mesh_assets.engine.connect_server import server_command, server_env
from mesh_assets.settings import MeshSettings

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]


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
