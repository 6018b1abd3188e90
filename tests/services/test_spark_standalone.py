"""A Spark standalone cluster (a master and one worker from PySpark's own distribution): Mesh pointed at
``spark://`` by settings alone writes the same rows as local mode, with its Delta jars shipped to executors."""

from __future__ import annotations

import json

import pytest
import shop
from delta.tables import DeltaTable
from processes import tail
from shop import RANGE, LocalShop

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]


def test_a_standalone_cluster_writes_what_local_mode_writes(spark, cluster, local_shop: LocalShop, tmp_path) -> None:
    master, work = cluster
    earlier = set(work.glob("app-*"))  # the cluster is shared: other tests' applications
    env = shop.run_env(tmp_path / "home", MESH_SPARK__MASTER=master, MESH_WAREHOUSE=local_shop.registry.warehouse)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver is reached by the executors; keep it on loopback
    out = shop.run(tmp_path / "run.log", env, "--partitions", RANGE, "--assets", "shop/orders")

    assert out["master"] == master and out["session"] == "pyspark.sql.session"
    assert [r["success"] for r in out["runs"]] == [True]
    # the cluster's runs replaced local mode's partitions with identical rows
    assert shop.rows(spark, local_shop.registry, shop.ORDERS) == local_shop.rows["shop/orders"]
    location = local_shop.registry.location(*shop.ORDERS)
    latest = DeltaTable.forPath(spark, location).history(1).collect()[0]
    assert json.loads(latest["userMetadata"])["dagster_run_id"] == out["runs"][0]["run_id"]
    # the work ran in an executor on the worker, which fetched Delta's jars from the driver
    executors = [e for app in set(work.glob("app-*")) - earlier for e in app.iterdir()]
    assert executors, tail(tmp_path / "run.log")
    assert any(e.glob("delta-spark_*.jar") for e in executors)
