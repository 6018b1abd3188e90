"""A plain Dagster asset written as Dagster's docs show (a ``PySparkResource`` parameter) kept in a domain's code
location beside its Mesh products: it gets Mesh's SparkSession through dagster-pyspark's resource, reads a Mesh
table, is automated by the domain's sensor, and a Mesh product reads what it wrote
(tests/fixtures/plain_assets)."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from dagster_pyspark import PySparkResource

from mesh_assets import MeshResource, domain_definitions, executable_assets, observe_now
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import get_settings
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "plain_assets" / "domains"
DAILY = dg.AssetKey(["tr", "daily_sales"])
BIG = dg.AssetKey(["tr", "big_days"])
COUNT = dg.AssetKey(["tr", "big_day_count"])


def test_a_plain_pyspark_asset_reads_a_mesh_table_on_meshs_session_and_a_product_reads_it(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domains = tmp_path / "domains"
    shutil.copytree(FIXTURE, domains)
    for name, value in {
        "DAGSTER_HOME": tmp_path,
        "MESH_DOMAINS_DIR": domains,
        "MESH_HOME": tmp_path / "home",
        "MESH_WAREHOUSE": tmp_path / "warehouse",
        "MESH_DBT_PROJECT_DIR": tmp_path / "no-dbt",
    }.items():
        monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    try:
        instance = dg.DagsterInstance.from_config(str(tmp_path))
        defs = domain_definitions(domains / "tr" / "definitions.py")
        mesh = MeshResource()
        for day, amounts in {"2021-06-01": [1, 2], "2021-06-02": [10, 10]}.items():
            rows = spark.createDataFrame([(a, date.fromisoformat(day)) for a in amounts], "amount bigint, p_date date")
            where = replace_predicate("p_date", PartitionRange.from_keys(Grain.DAILY, day, day))
            rows.write.format("delta").mode("overwrite").partitionBy("p_date").option("replaceWhere", where).save(
                mesh.registry.location("tr", "raw_sales")
            )
        observe_now(defs, instance, mesh)

        def run(key: dg.AssetKey, day: str) -> dg.ExecuteInProcessResult:
            # the location's own resources: Mesh's, and dagster-pyspark's under the key the asset asks for
            return dg.materialize(
                executable_assets(defs), instance=instance, resources=defs.resources, selection=[key], partition_key=day
            )

        for day in ("2021-06-01", "2021-06-02"):
            assert run(DAILY, day).success
            plain = run(BIG, day)
            assert plain.success
            assert run(COUNT, day).success

        resource = defs.resources["pyspark"]
        assert isinstance(resource, PySparkResource)
        assert resource.spark_session is spark  # the process's one session, not one of its own
        [materialization] = plain.asset_materializations_for_node("tr__big_days")
        assert materialization.metadata["session"].value == spark.sparkContext.applicationId

        big = spark.read.format("delta").load(mesh.registry.location("tr", "big_days"))
        assert [(r.p_date.isoformat(), r.amount) for r in big.collect()] == [("2021-06-02", 20)]
        counted = spark.read.format("delta").load(mesh.registry.location("tr", "big_day_count"))
        assert sorted((r.p_date.isoformat(), r.days, r.amount) for r in counted.collect()) == [
            ("2021-06-01", 0, None),
            ("2021-06-02", 1, 20),
        ]

        graph = defs.resolve_asset_graph()
        assert graph.get(BIG).is_executable and BIG in graph.get(COUNT).parent_keys  # the asset, not Mesh's spec
        assert DAILY in graph.get(BIG).parent_keys
        assert BIG in defs.resolve_sensor_def("tr__automation").asset_selection.resolve(graph)
        observe_now(defs, instance, mesh)  # the observer reads raw_sales' log, not big_days': the asset reports it
        assert len(instance.fetch_materializations(BIG, limit=10).records) == 2
    finally:
        get_settings.cache_clear()
