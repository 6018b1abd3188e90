"""Service tests: Mesh against real services (Postgres, a Spark standalone cluster, Spark Connect, an S3
server) that each test module starts on 127.0.0.1 and stops afterwards, whatever the outcome.

The reference is local mode: the ``shop`` fixture mesh materialized by the pytest process's own session.
"""

from __future__ import annotations

import dagster as dg
import pytest
import shop
from shop import DAYS, RANGE, LocalShop

from mesh_assets import MeshResource


@pytest.fixture(scope="session")
def local_shop(spark, tmp_path_factory: pytest.TempPathFactory) -> LocalShop:
    """``shop`` landed and materialized in local mode for both :data:`shop.DAYS`: what every other engine must match."""
    mesh = MeshResource(warehouse=str(tmp_path_factory.mktemp("local-shop") / "warehouse"))
    shop.land(spark, mesh.registry, DAYS)
    with dg.DagsterInstance.ephemeral() as instance:
        assert shop.materialize(instance, mesh, [shop.ORDERS, shop.CITY_ORDERS], RANGE).success
    rows = {"/".join(k): shop.rows(spark, mesh.registry, k) for k in (shop.ORDERS, shop.CITY_ORDERS)}
    assert all(rows.values())
    return LocalShop(mesh.registry, rows)
