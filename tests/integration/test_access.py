"""Who may read and write what, with real Spark and Delta: a restricted table is read across domains only by
grant (refused at validation and, read undeclared, at run time), ``pii`` columns reach another domain masked,
and a transformation that writes outside its outputs fails with nothing published and nothing left."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from datetime import date
from hashlib import sha256
from pathlib import Path

import dagster as dg
import pytest
import yaml
from delta.tables import DeltaTable

from mesh_assets import MeshResource, executable_assets, mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.dbt import build_dbt_assets, dbt_resource, prepare
from mesh_assets.definitions import build_definitions
from mesh_assets.engine.identity import IDENTITY_TAG
from mesh_assets.graph.defaults import domains_defaults
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.lineage.graph import read_events
from mesh_assets.model.errors import SpecValidationError
from mesh_assets.run.enclosure import enclosed
from mesh_assets.settings import get_settings

WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "access" / "domains"
DAY = "2024-01-02"


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    """ha's two restricted tables landed for one day, observed; the mesh's definitions over them."""
    mesh = MeshResource(warehouse=str(tmp_path_factory.mktemp("access") / f"wh-{uuid.uuid4().hex[:8]}"))
    d = date.fromisoformat(DAY)
    spark.createDataFrame(
        [(1, "ann@example.org", "555-0101", d), (2, "bob@example.org", "555-0102", d)],
        "id bigint, email string, phone string, p_date date",
    ).write.format("delta").partitionBy("p_date").save(mesh.registry.location("ha", "staff"))
    spark.createDataFrame([(1, 1000.0, d), (2, 2000.0, d)], "id bigint, amount double, p_date date").write.format(
        "delta"
    ).partitionBy("p_date").save(mesh.registry.location("ha", "salaries"))
    mesh.registry.register(spark, "ha", "salaries")  # as if another run in this session had read it
    instance = dg.DagsterInstance.ephemeral()
    defs = mesh_definitions(FIXTURE)
    observe_now(defs, instance, mesh)
    return mesh, instance, defs


def _run(world, domain: str, table: str) -> dg.ExecuteInProcessResult:
    mesh, instance, defs = world
    return dg.materialize(
        executable_assets(defs),
        instance=instance,
        resources={"mesh": mesh},
        selection=[dg.AssetKey([domain, table])],
        partition_key=DAY,
        raise_on_error=False,
    )


def _failure(result: dg.ExecuteInProcessResult) -> str:
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


def _rows(spark, location: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(location).select("id", "email", "phone").collect())


def test_granted_reader_sees_pii_masked_and_the_owner_sees_it_clear(spark, world):
    mesh = world[0]
    assert _run(world, "hb", "staff_view").success
    assert _rows(spark, mesh.registry.location("hb", "staff_view")) == [
        (1, sha256(b"ann@example.org").hexdigest(), None),
        (2, sha256(b"bob@example.org").hexdigest(), None),
    ]
    assert _run(world, "ha", "staff_book").success
    assert _rows(spark, mesh.registry.location("ha", "staff_book")) == [
        (1, "ann@example.org", "555-0101"),
        (2, "bob@example.org", "555-0102"),
    ]


def test_undeclared_read_of_an_ungranted_table_fails_before_anything_is_published(spark, world):
    mesh = world[0]
    result = _run(world, "hb", "peek")
    assert not result.success
    message = _failure(result)
    assert "hb.peek read ha.salaries without declaring it: another domain's table" in message
    assert not Path(mesh.registry.location("hb", "peek")).exists()


def test_a_stray_write_to_a_path_fails_the_run_and_leaves_nothing(spark, world, tmp_path, monkeypatch):
    mesh = world[0]
    stray = tmp_path / "elsewhere" / "copy"
    monkeypatch.setenv("ACCESS_STRAY_PATH", str(stray))
    result = _run(world, "hb", "spill")
    assert not result.success
    message = _failure(result)
    assert "hb.spill's transformation wrote outside its outputs" in message
    assert str(stray) in message and "nothing was published" in message
    assert not stray.exists()
    assert not Path(mesh.registry.location("hb", "spill")).exists()


def test_an_insert_into_another_domains_table_fails_the_run_and_is_undone(spark, world):
    mesh = world[0]
    salaries = mesh.registry.location("ha", "salaries")
    version = DeltaTable.forPath(spark, salaries).history(1).collect()[0]["version"]
    result = _run(world, "hb", "tamper")
    assert not result.success
    message = _failure(result)
    assert "hb.tamper's transformation wrote outside its outputs" in message and "ha.salaries" in message
    assert DeltaTable.forPath(spark, salaries).history(1).collect()[0]["version"] == version
    assert sorted(r["amount"] for r in spark.read.format("delta").load(salaries).collect()) == [1000.0, 2000.0]
    assert not Path(mesh.registry.location("hb", "tamper")).exists()


def test_an_ungranted_input_is_refused_at_validation_naming_the_grant_to_add(tmp_path, monkeypatch):
    root = tmp_path / "domains"
    shutil.copytree(FIXTURE, root)
    (root / "hc").mkdir()
    (root / "hc" / "domain.yaml").write_text(
        'owner: hc@example.com\ncontacts:\n  - {kind: chat, value: "#hc"}\nstart_date: 2024-01-01\n'
    )
    (root / "hc" / "pay.py").write_text(
        "from mesh_assets import Input, Output, Product\n"
        "pay = Product('pay')\n\n\n"
        "@pay.transformation(Output(table='pay_view'), inputs={'pay': Input(table='ha.salaries')})\n"
        "def pay_view(pay):\n"
        "    return pay\n"
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecValidationError) as raised:
        build_definitions(load_all(root), only={"hc"})
    [error] = raised.value.errors
    assert (error.file, error.line, error.field) == ("domains/hc/pay.py", 5, "tables.0.inputs.pay")
    assert "ha.salaries is classified l2" in error.message and "hc/pay may read it only by ha's grant" in error.message
    assert "'grants: [{to: hc}]'" in error.message and "domains/ha/domain.yaml" in error.message


def test_a_table_collected_inside_the_function_is_seen_too(spark, world):
    mesh = world[0]
    result = _run(world, "hb", "launder")
    assert not result.success
    assert "hb.launder read ha.salaries without declaring it" in _failure(result)
    assert not Path(mesh.registry.location("hb", "launder")).exists()


def test_a_granted_table_read_undeclared_by_path_would_skip_its_masks_and_is_refused(spark, world, monkeypatch):
    mesh = world[0]
    monkeypatch.setenv("ACCESS_STAFF_PATH", mesh.registry.location("ha", "staff"))
    result = _run(world, "hb", "snoop")
    assert not result.success
    assert "hb.snoop read ha.staff without declaring it" in _failure(result)
    assert not Path(mesh.registry.location("hb", "snoop")).exists()


def test_temporary_views_and_the_cache_are_not_writes(spark, world):
    mesh = world[0]
    assert _run(world, "hb", "tidy").success
    assert sorted(r["id"] for r in spark.read.format("delta").load(mesh.registry.location("hb", "tidy")).collect()) == [
        1,
        2,
    ]


def test_a_run_names_the_domain_whose_identity_ran_it(spark, world):
    """The run's tag and its lineage's ``mesh_identity`` facet name the domain, and whose storage keys it used."""
    instance = world[1]
    result = _run(world, "hb", "staff_view")
    assert result.success
    assert instance.get_run_by_id(result.run_id).tags[IDENTITY_TAG] == "hb"
    events = [
        e
        for e in read_events(get_settings().lineage_dir)
        if e["job"]["name"] == "hb.staff_view" and e["run"]["facets"]["parent"]["run"]["runId"] == result.run_id
    ]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    for event in events:
        facet = event["run"]["facets"]["mesh_identity"]
        assert (facet["domain"], facet["storage"]) == ("hb", "deployment")
        assert facet["_schemaURL"].endswith("lineage-facets.json#/$defs/MeshIdentityRunFacet")


HB_SOURCES = """version: 2
sources:
  - name: ha
    schema: ha
    config: {meta: {domain: ha}}
    tables: [{name: staff}]
"""


@pytest.fixture(scope="module")
def hb_models(world, tmp_path_factory) -> Iterator[dg.AssetsDefinition]:
    """hb's dbt models over ha's tables: one reads ha.staff (granted, pii masked for hb) as a source, one names
    ha.salaries (granted to no one) in its SQL; prepared, with this mesh's domains in the settings."""
    project = tmp_path_factory.mktemp("dbt") / "dbt_project"
    shutil.copytree(ROOT / "dbt_project", project, ignore=shutil.ignore_patterns("target", "logs", "models"))
    config = yaml.safe_load((project / "dbt_project.yml").read_text())
    folder = {"+schema": "hb", "+location_root": "{{ env_var('MESH_DBT_WAREHOUSE', 'spark-warehouse') }}/hb"}
    folder |= {"+meta": {"domain": "hb"}, "+materialized": "incremental", "+incremental_strategy": "replace_where"}
    folder |= {"+partition_by": ["p_date"], "+on_schema_change": "fail"}
    config["models"] = {"mesh_dbt": {"+file_format": "delta", "hb": folder}}
    (project / "dbt_project.yml").write_text(yaml.safe_dump(config))
    models = project / "models" / "hb"
    models.mkdir(parents=True)
    (models / "sources.yml").write_text(HB_SOURCES)
    window = "WHERE {{ mesh_window('p_date') }}"
    (models / "staff_contacts.sql").write_text(
        f"SELECT id, email, phone, p_date FROM {{{{ source('ha', 'staff') }}}} {window}"
    )
    (models / "salary_peek.sql").write_text(f"SELECT id, amount, p_date FROM ha.salaries {window}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MESH_DBT_PROJECT_DIR", str(project))
        patch.setenv("MESH_DOMAINS_DIR", str(FIXTURE))
        get_settings.cache_clear()
        prepare(world[0].registry.warehouse)
        [hb] = build_dbt_assets("hb", domains_defaults(FIXTURE))
        yield hb
    get_settings.cache_clear()


def _run_dbt(world, models: dg.AssetsDefinition, table: str) -> dg.ExecuteInProcessResult:
    mesh, instance, defs = world
    return dg.materialize(
        [*executable_assets(defs), models],
        instance=instance,
        resources={"mesh": mesh, "dbt": dbt_resource()},
        selection=[dg.AssetKey(["hb", table])],
        partition_key=DAY,
        raise_on_error=False,
    )


def test_a_dbt_model_of_another_domain_reads_pii_masked(spark, world, hb_models):
    mesh = world[0]
    assert _run_dbt(world, hb_models, "staff_contacts").success
    assert _rows(spark, mesh.registry.location("hb", "staff_contacts")) == [
        (1, sha256(b"ann@example.org").hexdigest(), None),
        (2, sha256(b"bob@example.org").hexdigest(), None),
    ]


def test_a_dbt_model_naming_an_ungranted_table_in_its_sql_is_refused(spark, world, hb_models):
    mesh = world[0]
    result = _run_dbt(world, hb_models, "salary_peek")
    assert not result.success
    message = _failure(result)
    assert "dbt model hb.salary_peek reads ha.salaries, which it may not" in message, message
    assert "'grants: [{to: hb}]'" in message and "nothing was published" in message
    assert not Path(mesh.registry.location("hb", "salary_peek")).exists()


class _SlowListener:
    """Holds Spark's listener bus a second on the first query it hears of, as a busy driver would: what is told
    after it waits. Once only, so that the session's later tests are never slowed."""

    def __init__(self) -> None:
        self.held = False

    def onSuccess(self, func_name: str, qe: object, duration_ns: int) -> None:
        if not self.held:
            self.held = True
            time.sleep(1)

    def onFailure(self, func_name: str, qe: object, exception: object) -> None:
        pass

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


def test_what_ran_just_before_a_transformation_is_never_taken_for_its_write(spark, world, tmp_path):
    """Spark tells its listeners of a query after the query: a table created just before the enclosure opens (as a
    run registers its inputs) is told late, and must not fail the transformation as its own write."""
    node = MeshGraph(load_all(FIXTURE), []).nodes_of("hb")[0]
    with enclosed(spark, node, world[0].registry, ()):
        pass  # the enclosure's listener attached, ahead of the slow one
    slow = _SlowListener()
    spark._jsparkSession.listenerManager().register(slow)
    try:
        spark.range(1).collect()  # the bus now waits a second on this one
        location = tmp_path / "before"
        spark.sql(f"CREATE TABLE before_{uuid.uuid4().hex[:8]} (id BIGINT) USING delta LOCATION '{location}'")
        with enclosed(spark, node, world[0].registry, ()):
            pass  # a transformation that writes nothing
    finally:
        spark._jsparkSession.listenerManager().unregister(slow)
