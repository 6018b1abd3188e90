"""A plain Dagster asset written as Dagster's docs show (a ``PySparkResource`` parameter) kept in a domain's code
location beside its Mesh products: it gets Mesh's SparkSession through dagster-pyspark's resource, reads a Mesh
table, is automated by the domain's sensor, a Mesh product reads what it wrote, and its runs send OpenLineage
events as a product's do (tests/fixtures/plain_assets)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import NamedTuple
from urllib.request import urlopen

import dagster as dg
import pytest
from dagster_pyspark import PySparkResource
from lineage_runs import validate
from lineage_server import lineage_server

from mesh_assets import MeshResource, domain_definitions, executable_assets, observe_now
from mesh_assets.lineage.emit import deliver_waiting
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import get_settings
from mesh_assets.storage.writer import replace_predicate

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "plain_assets" / "domains"
DAILY = dg.AssetKey(["tr", "daily_sales"])
BIG = dg.AssetKey(["tr", "big_days"])
COUNT = dg.AssetKey(["tr", "big_day_count"])
LATE = dg.AssetKey(["tr", "late_days"])
LATE_DAYS = """\
import dagster as dg
from dagster_pyspark import PySparkResource


@dg.asset(key=["tr", "late_days"], partitions_def=dg.DailyPartitionsDefinition(start_date="2021-06-01"))
def late_days(pyspark: PySparkResource) -> None:
    pyspark.table("tr.daily_sales").count()  # read, not declared as a dependency
    raise ValueError("the late feed has not landed")
"""


class World(NamedTuple):
    defs: dg.Definitions
    instance: dg.DagsterInstance
    mesh: MeshResource
    run: Callable[[dg.AssetKey, str], dg.ExecuteInProcessResult]


@pytest.fixture
def world(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., World]]:
    """tr's location on a copy (with ``files`` added to the domain folder), raw_sales landed for two days and
    observed; ``env`` set before the location loads."""
    get_settings.cache_clear()

    def make(files: dict[str, str] | None = None, env: dict[str, str] | None = None) -> World:
        domains = tmp_path / "domains"
        shutil.copytree(FIXTURE, domains)
        for name, text in (files or {}).items():
            (domains / "tr" / name).write_text(text)
        for name, value in {
            "DAGSTER_HOME": tmp_path,
            "MESH_DOMAINS_DIR": domains,
            "MESH_HOME": tmp_path / "home",
            "MESH_WAREHOUSE": tmp_path / "warehouse",
            "MESH_DBT_PROJECT_DIR": tmp_path / "no-dbt",
            **(env or {}),
        }.items():
            monkeypatch.setenv(name, str(value))
        get_settings.cache_clear()
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
                executable_assets(defs),
                instance=instance,
                resources=defs.resources,
                selection=[key],
                partition_key=day,
                raise_on_error=False,
            )

        return World(defs, instance, mesh, run)

    yield make
    get_settings.cache_clear()


def test_a_plain_pyspark_asset_reads_a_mesh_table_on_meshs_session_and_a_product_reads_it(spark, world) -> None:
    defs, instance, mesh, run = world()
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


def test_a_plain_assets_runs_send_start_complete_and_fail_with_what_they_read_and_wrote(world) -> None:
    served = lineage_server()
    try:
        env = {"MESH_LINEAGE__TRANSPORT": "http", "MESH_LINEAGE__URL": served.url}
        _, _, mesh, run = world({"late_days.py": LATE_DAYS}, env)
        daily, big = mesh.registry.location("tr", "daily_sales"), mesh.registry.location("tr", "big_days")
        assert run(DAILY, "2021-06-02").success
        before = len(served.events)
        done = run(BIG, "2021-06-02")
        assert done.success

        start, complete = served.events[before:]
        for event in (start, complete):
            validate(event)
            assert event["job"] == {**event["job"], "namespace": "tr", "name": "tr.big_days"}
            assert event["job"]["facets"]["jobType"]["integration"] == "DAGSTER"
            assert event["run"]["facets"]["parent"]["run"]["runId"] == done.run_id  # the Dagster run
            assert event["run"]["facets"]["mesh_partitions"]["keys"] == ["2021-06-02"]
            assert [(i["namespace"], i["name"]) for i in event["inputs"]] == [("file", daily)]  # as read
        assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
        assert start["run"]["runId"] == complete["run"]["runId"]
        assert start["outputs"] == []  # nothing written yet
        [written] = complete["outputs"]
        assert (written["namespace"], written["name"]) == ("file", big)
        assert written["facets"]["symlinks"]["identifiers"][0]["name"] == "tr.big_days"
        assert [f["name"] for f in written["facets"]["schema"]["fields"]] == ["amount", "p_date"]
        assert written["outputFacets"]["outputStatistics"]["rowCount"] == 1
        assert complete["inputs"][0]["facets"]["symlinks"]["identifiers"][0]["name"] == "tr.daily_sales"
        with urlopen(f"{served.url}/api/v1/lineage?nodeId=dataset:file:{big}&depth=2") as answer:
            graph = {n["id"]: n for n in json.load(answer)["graph"]}  # the server's graph: daily_sales -> big_days
        assert [e["origin"] for e in graph[f"dataset:file:{big}"]["inEdges"]] == ["job:tr:tr.big_days"]
        assert [e["origin"] for e in graph["job:tr:tr.big_days"]["inEdges"]] == [f"dataset:file:{daily}"]

        served.down = True  # the failing run's events wait in Mesh's spool, as a product run's do
        failed = run(LATE, "2021-06-02")
        assert not failed.success
        served.down = False
        assert deliver_waiting(get_settings())[1].delivered == 2
        start, fail = served.events[-2:]
        assert [(e["job"]["name"], e["eventType"]) for e in (start, fail)] == [
            ("tr.late_days", "START"),
            ("tr.late_days", "FAIL"),
        ]
        validate(fail)
        assert "the late feed has not landed" in fail["run"]["facets"]["errorMessage"]["message"]
        assert fail["outputs"] == [] and [i["name"] for i in fail["inputs"]] == [daily]
        assert fail["run"]["facets"]["mesh_undeclaredReads"]["tables"] == ["tr.daily_sales"]
    finally:
        served.shutdown()
