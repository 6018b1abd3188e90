"""Engine mode ``submit``: a product's stage -> audit -> publish runs as a Spark application launched through
Dagster Pipes (``spark-submit --deploy-mode client`` on the standalone cluster), and the Dagster step records
what local mode records: the same partitions published and refused, the same check evaluations, the same
failure, the same Delta commit. The step itself never starts Spark, and gates before it launches anything."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dagster as dg
import pytest
import shop
from delta.tables import DeltaTable
from shop import DAYS, DOMAINS

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.engine import session
from mesh_examples.generator import raw_orders

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.spark]

RUN = "2021-06-01..2021-06-03"
"""One single-run backfill: 06-01 is good, 06-02 has an order without a city, 06-03 never landed."""
CITY = 9  # raw_orders' city column


def landed(spark, warehouse: Path) -> MeshResource:
    """``shop.raw_orders`` for 06-01 and 06-02, one order of 06-02 without a city."""
    mesh = MeshResource(warehouse=str(warehouse))
    bad = [(*r[:CITY], None, *r[CITY + 1 :]) if i == 0 else r for i, r in enumerate(raw_orders(DAYS[1]))]
    shop.land(spark, mesh.registry, DAYS, raw_orders(DAYS[0]) + bad)
    return mesh


def story(result: dg.ExecuteInProcessResult) -> dict:
    """What a run recorded, comparable across engines: each materialized partition with its row count, each
    check evaluation (check, partition, passed), and the step's failure."""
    published = [e.materialization for e in result.get_asset_materialization_events()]
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return {
        "published": sorted((m.partition, m.metadata["dagster/row_count"].value) for m in published),
        "checks": sorted((e.check_name, e.partition, e.passed) for e in result.get_asset_check_evaluations()),
        "failure": failure.event_specific_data.error.message,
    }


@pytest.fixture
def no_session_in_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The step's process must not ask for a SparkSession."""

    def refused(*_args, **_kwargs):
        raise AssertionError("the Dagster step asked for a SparkSession in engine mode submit")

    monkeypatch.setattr(session, "get_spark", refused)


NO_DAGSTER = """
import sys


class NoDagster:
    \"\"\"Dagster cannot be imported in this Python (Dagster Pipes can): the application must not need it.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name == "dagster" or name.startswith("dagster."):
            raise ImportError(f"{name} is not installed where the application runs")


sys.meta_path.insert(0, NoDagster())
"""


def without_dagster(tmp_path: Path) -> str:
    """A ``PYTHONPATH`` whose ``sitecustomize`` makes Dagster unimportable in the processes the step starts (the
    driver's Python inherits it through spark-submit; the step's own process started long before)."""
    folder = tmp_path / "no_dagster"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(NO_DAGSTER)
    return os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))


def submitted_domains(tmp_path: Path) -> Path:
    """The ``shop`` domains, ``orders``'s product declaring ``engine="submit"`` over the deployment's mode."""
    domains = tmp_path / "domains"
    shutil.copytree(DOMAINS, domains)
    spec = domains / "shop" / "orders.py"
    spec.write_text(spec.read_text().replace('    "orders",\n', '    "orders",\n    engine="submit",\n', 1))
    assert 'engine="submit"' in spec.read_text()
    return domains


@pytest.fixture(scope="module")
def local_run(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[MeshResource, dict]:
    """The reference: the same range run in local mode (set up before any fixture switches the engine)."""
    local = landed(spark, tmp_path_factory.mktemp("local"))
    with dg.DagsterInstance.ephemeral() as instance:
        return local, story(shop.materialize(instance, local, [shop.ORDERS], RUN))


def test_a_launched_range_publishes_refuses_and_records_what_local_mode_does(
    spark, local_run, cluster, no_session_in_the_step: None, settings_env, tmp_path
) -> None:
    local, expected = local_run
    master, work = cluster
    # the deployment's mode stays session: the product's own engine="submit" launches it on the cluster; its
    # driver runs where Dagster cannot be imported (Dagster Pipes and Mesh are all it needs)
    settings_env(
        MESH_SPARK__MASTER=master,
        SPARK_LOCAL_IP="127.0.0.1",  # executors reach the driver on loopback
        PYTHONPATH=without_dagster(tmp_path),
    )
    earlier = set(work.glob("app-*"))
    mesh = landed(spark, tmp_path / "submitted")
    domains = submitted_domains(tmp_path)
    with dg.DagsterInstance.ephemeral() as instance:
        result = shop.materialize(instance, mesh, [shop.ORDERS], RUN, domains)
        got = story(result)

    assert not result.success
    assert got == expected
    assert got["published"] == [("2021-06-01", len(shop.rows(spark, local.registry, shop.ORDERS)))]
    assert {(check, partition) for check, partition, passed in got["checks"] if not passed} == {
        ("not_null_id_city", "2021-06-02")
    }
    assert "check not_null_id_city on partition 2021-06-02 failed (1 failing rows)" in got["failure"]
    assert "partition 2021-06-03 not computed: shop.raw_orders 2021-06-03 (not landed)" in got["failure"]
    # one commit of the good day, by this run, with local mode's rows
    location = mesh.registry.location(*shop.ORDERS)
    history = DeltaTable.forPath(spark, location).history().collect()
    assert [h["version"] for h in history] == [0]
    assert json.loads(history[0]["userMetadata"])["dagster_run_id"] == result.run_id
    assert shop.rows(spark, mesh.registry, shop.ORDERS) == shop.rows(spark, local.registry, shop.ORDERS)
    # the body ran as an application of the cluster
    assert set(work.glob("app-*")) - earlier


def test_a_run_whose_inputs_are_not_ready_launches_nothing(
    tmp_path, no_session_in_the_step: None, settings_env
) -> None:
    """The deployment's engine mode is submit; readiness refuses in the step, before any launch."""
    settings_env(MESH_ENGINE__MODE="submit")
    mesh = MeshResource(warehouse=str(tmp_path / "warehouse"))
    defs = mesh_definitions(DOMAINS)
    with dg.DagsterInstance.ephemeral() as instance:
        observe_now(defs, instance, mesh)
        result = dg.materialize(
            executable_assets(defs),
            instance=instance,
            resources={"mesh": mesh},
            selection=[dg.AssetKey(shop.CITY_ORDERS)],
            partition_key="2021-06-03",
            raise_on_error=False,
        )

    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.event_specific_data.error.message
    assert "partition 2021-06-03 not computed: shop.orders (never published)" in message
    assert not any("[pipes]" in (e.message or "") for e in result.all_events)  # no Pipes session was opened
    assert not Path(mesh.registry.location(*shop.CITY_ORDERS)).exists()
