"""Plain Dagster assets in a domain's folder join its code location: executable in its graph, automated by its
sensor, and, when one writes a table the domain declares as external, in place of Mesh's spec for it; a check
Mesh would have to run on such a table is refused by name, file and line."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.definitions import domain_definitions, executable_assets, mesh_definitions
from mesh_assets.model.errors import SpecValidationError
from mesh_assets.settings import get_settings
from mesh_assets.storage.resource import MeshResource

PLAIN = """\
import dagster as dg


@dg.asset(
    key=["shop", "landed"],
    partitions_def=dg.DailyPartitionsDefinition(start_date="2021-06-01"),
    automation_condition=dg.AutomationCondition.on_cron("0 1 * * *"),
)
def landed() -> None:
    pass
"""
SPEC = """\
name: orders
owner: team@example.com
contacts: [{kind: chat, value: "#orders"}]
start_date: 2021-06-01
external:
  - table: landed
tables:
  - table: orders
    inputs: [{table: landed}]
    sql: SELECT * FROM shop.landed
"""
LANDED = dg.AssetKey(["shop", "landed"])


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "domains" / "shop"
    folder.mkdir(parents=True)
    (folder / "landed.py").write_text(PLAIN)
    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


def test_a_plain_asset_writing_an_external_table_is_its_definition_and_is_automated(shop: Path) -> None:
    (shop / "orders.yaml").write_text(SPEC)
    defs = mesh_definitions(shop.parent, dbt=False)
    graph = defs.resolve_asset_graph()
    assert graph.get(LANDED).is_executable  # the plain asset, not Mesh's observed spec
    assert LANDED in graph.get(dg.AssetKey(["shop", "orders"])).parent_keys
    assert LANDED in defs.resolve_sensor_def("shop__automation").asset_selection.resolve(graph)
    assert "pyspark" not in (defs.resources or {})  # no asset asks for it: dagster-pyspark is not imported


def test_a_check_on_an_external_table_a_plain_asset_writes_is_refused(shop: Path) -> None:
    (shop / "orders.yaml").write_text(
        SPEC.replace("  - table: landed\n", "  - table: landed\n    checks: [{kind: not_null, columns: [id]}]\n")
    )
    with pytest.raises(SpecValidationError) as refused:
        mesh_definitions(shop.parent, dbt=False)
    assert str(refused.value) == (
        "domains/shop/orders.yaml:6: checks: shop.landed is written by a Dagster asset of shop's code location, "
        "not observed: Mesh cannot run its checks (not_null_id) on it; give the asset its own asset checks"
    )


NEEDS_A_RESOURCE = """\
import dagster as dg


@dg.asset(key=["shop", "prices"], required_resource_keys={"prices_api"})
def prices(context) -> None:
    context.resources.prices_api
"""


def test_the_resources_a_domains_plain_assets_need_are_given_to_its_location(shop: Path) -> None:
    (shop / "orders.yaml").write_text(SPEC)
    (shop / "prices.py").write_text(NEEDS_A_RESOURCE)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="resource with key 'prices_api' required"):
        domain_definitions(shop / "definitions.py").get_repository_def()
    api = dg.ResourceDefinition.hardcoded_resource("the prices API")
    defs = domain_definitions(shop / "definitions.py", resources={"prices_api": api, "mesh": "not Mesh's"})
    result = dg.materialize(
        executable_assets(defs), resources=defs.resources, selection=[dg.AssetKey(["shop", "prices"])]
    )
    assert result.success
    assert isinstance(defs.resources["mesh"], MeshResource)  # Mesh's own key stays Mesh's


SUMMARY = """\
import dagster as dg


@dg.asset(
    key=["shop", "summary"],
    deps=[dg.AssetKey(["shop", "daily"])],
    partitions_def=dg.DailyPartitionsDefinition(start_date="2021-06-01"),
)
def summary() -> None:
    pass
"""
THROUGH = """\
name: sales
owner: team@example.com
contacts: [{kind: chat, value: "#sales"}]
start_date: 2021-06-01
external:
  - table: raw
  - table: summary
tables:
  - table: daily
    inputs: [{table: raw}]
    sql: SELECT * FROM shop.raw
  - table: report
    inputs: [{table: summary}]
    sql: SELECT * FROM shop.summary
"""


def test_an_invalidation_reaches_through_the_locations_plain_asset_to_the_product_reading_it(shop: Path) -> None:
    (shop / "landed.py").unlink()
    (shop / "sales.yaml").write_text(THROUGH)
    (shop / "summary.py").write_text(SUMMARY)
    instance = dg.DagsterInstance.ephemeral()
    for table in ("daily", "summary", "report"):  # published
        day = dg.AssetMaterialization(dg.AssetKey(["shop", table]), partition="2021-06-02")
        instance.report_runless_asset_event(day)
    job = domain_definitions(shop / "definitions.py").resolve_job_def("shop__invalidate")
    config = {"table": "daily", "start": "2021-06-02", "reason": "double counted"}
    result = job.execute_in_process(run_config={"ops": {"shop__mark_invalid": {"config": config}}}, instance=instance)
    marked, _ = result.output_for_node("shop__mark_invalid")
    assert [m.describe() for m in marked] == [
        "shop/daily 2021-06-02: invalid",
        "shop/summary 2021-06-02: computed from it, not marked (not a Mesh product's output: no valid check); "
        "re-run it after the fix",
        "shop/report 2021-06-02: suspect",
    ]
