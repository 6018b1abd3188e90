"""dbt models in environments: a dbt model whose SQL changed since production computed it, and one reading a changed
Mesh product, are built by ``mesh apply --env NAME`` into the environment (reading the environment's version of a
table it computes, production's in place otherwise) through the same gate, compared by ``mesh diff``, promoted by
``mesh apply --from-env`` and deleted by ``mesh env drop``; production's tables (Delta versions) and instance
(events) stay as they were."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from production import Production, edit, land_sales, production_home

from mesh_assets import mesh_definitions
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.cli.environments import table_location
from mesh_assets.cli.main import main
from mesh_assets.dbt import dbt_resource, prepare

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "environments"
AMOUNTS = {"2021-06-01": [1, 2], "2021-06-02": [3], "2021-06-03": [4, 5], "2021-06-04": [6]}
SALES = dg.AssetKey(["tr", "daily_sales"])
DOUBLED = dg.AssetKey(["rep", "sales_doubled"])
REPORT = dg.AssetKey(["rep", "doubled_report"])
TABLES = [("tr", "raw_sales"), ("tr", "daily_sales"), ("rep", "sales_doubled"), ("rep", "doubled_report")]


@pytest.fixture(scope="module")
def production(spark, tmp_path_factory) -> Iterator[Production]:
    """Four landed days of sales, their daily totals (a Mesh product), the dbt model doubling them and a product
    reading the model, materialized on an on-disk instance: production."""
    base = tmp_path_factory.mktemp("production")
    domains, project = base / "domains", base / "dbt_project"
    shutil.copytree(FIXTURE / "domains", domains)
    for other in ("tr/amounts.py", "tr/running.py", "rep/defs"):  # the smallest world: tr.daily_sales, one model
        shutil.rmtree(domains / other) if (domains / other).is_dir() else (domains / other).unlink()
    sales = (domains / "tr" / "sales.py").read_text()
    shutil.copytree(FIXTURE / "dbt_reader", domains / "rep" / "defs" / "doubled")  # a product reading the model
    two_day = sales.index('\n\n@sales.transformation(\n    Output(table="two_day')
    (domains / "tr" / "sales.py").write_text(sales[:two_day])
    shutil.copytree(FIXTURE / "dbt_project", project)
    shutil.copytree(ROOT / "dbt_project" / "macros", project / "macros")
    shutil.copy(ROOT / "dbt_project" / "profiles.yml", project / "profiles.yml")
    with production_home(base, domains, TABLES, MESH_DBT_PROJECT_DIR=str(project)) as production:
        prepare(production.mesh.registry.warehouse)
        land_sales(spark, production.mesh.registry.location("tr", "raw_sales"), AMOUNTS)
        defs = mesh_definitions(domains, dbt=True)
        observe_now(defs, production.instance, production.mesh, {})
        days = sorted(AMOUNTS)
        production.materialize(defs, [SALES, DOUBLED, REPORT], days[0], days[-1], {"dbt": dbt_resource()})
        yield production


def doubled(production: Production) -> dict[str, int]:
    return production.read(production.mesh.registry.location(*DOUBLED.path), "doubled")


def edit_model(production: Production, old: str, new: str) -> None:
    """Edit the dbt model's SQL, and nothing else: the plan prepares dbt's manifest again when it finds it."""
    edit(production.home.parent / "dbt_project" / "models" / "rep" / "sales_doubled.sql", old, new)


def test_a_dbt_model_reading_a_changed_product_is_rebuilt_there_and_dropped_with_it(production: Production):
    assert doubled(production) == {"2021-06-01": 6, "2021-06-02": 6, "2021-06-03": 18, "2021-06-04": 12}
    sales = production.domains / "tr" / "sales.py"
    versions, events = production.versions(), production.events()
    edit(sales, 'raw.agg(F.sum("amount").alias("amount"))', 'raw.agg((F.sum("amount") * 10).alias("amount"))')
    try:
        assert main(["apply", "--env", "pychange", "--from", "2021-06-03", "--to", "2021-06-04"]) == 0
    finally:
        edit(sales, 'raw.agg((F.sum("amount") * 10).alias("amount"))', 'raw.agg(F.sum("amount").alias("amount"))')

    folder = production.home / "envs" / "pychange"
    assert production.read(table_location("pychange", "tr", "daily_sales"), "amount") == {
        "2021-06-03": 90,
        "2021-06-04": 60,
    }
    location = table_location("pychange", *DOUBLED.path)
    assert location == str(folder / "warehouse" / "rep" / "sales_doubled")
    assert production.read(location, "doubled") == {"2021-06-03": 180, "2021-06-04": 120}  # the environment's input
    report = production.read(table_location("pychange", *REPORT.path), "reported")
    assert report == {"2021-06-03": 181, "2021-06-04": 121}  # the product reads the environment's model in turn
    own = dg.DagsterInstance.from_config(str(folder / "dagster"))
    assert own.get_materialized_partitions(DOUBLED) == {"2021-06-03", "2021-06-04"}
    assert production.versions() == versions
    assert production.events() == events
    assert doubled(production)["2021-06-03"] == 18

    assert main(["env", "drop", "pychange"]) == 0
    assert not folder.exists()
    assert production.versions() == versions
    assert production.events() == events
    assert doubled(production) == {"2021-06-01": 6, "2021-06-02": 6, "2021-06-03": 18, "2021-06-04": 12}


def test_a_changed_dbt_model_is_built_diffed_and_promoted(production: Production, capsys, monkeypatch):
    """Runs last: it promotes into production."""
    from rich.console import Console

    from mesh_assets.cli.change import make_plan
    from mesh_assets.cli.environments import promote_from
    from mesh_assets.compat import CODE_VERSION_TAG

    versions, events = production.versions(), production.events()
    edit_model(production, "amount * 2 AS doubled", "amount * 3 AS doubled")
    capsys.readouterr()
    assert main(["apply", "--env", "dbtsql", "--from", "2021-06-03", "--to", "2021-06-04"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "rep/sales_doubled" in said and "left out of the environment" not in said

    env = json.loads((production.home / "envs" / "dbtsql" / "environment.json").read_text())
    assert env["tables"] == ["rep/sales_doubled", "rep/doubled_report"]  # its input is read in place
    location = table_location("dbtsql", *DOUBLED.path)
    assert production.read(location, "doubled") == {"2021-06-03": 27, "2021-06-04": 18}
    assert production.read(table_location("dbtsql", *REPORT.path), "reported") == {"2021-06-03": 28, "2021-06-04": 19}
    assert table_location("dbtsql", *SALES.path) == production.mesh.registry.location(*SALES.path)
    assert production.versions() == versions
    assert production.events() == events

    diff = ["diff", "rep/sales_doubled", "--env", "dbtsql", "--from", "2021-06-03", "--to", "2021-06-04"]
    assert main([*diff, "--key", "p_date", "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert (found["left_rows"], found["right_rows"], found["only_left"], found["only_right"]) == (2, 2, 0, 0)
    assert (found["changed"], found["column_changes"]["doubled"]) == (2, 2)

    def no_spark(*args, **kwargs):
        raise AssertionError("promotion started Spark")

    monkeypatch.setattr("mesh_assets.engine.session.get_spark", no_spark)
    args = argparse.Namespace(from_env="dbtsql", base=None, dry_run=False)
    assert promote_from(args, Console(width=200), production.instance) is None
    monkeypatch.undo()

    assert doubled(production) == {"2021-06-01": 6, "2021-06-02": 6, "2021-06-03": 27, "2021-06-04": 18}
    report = production.read(production.mesh.registry.location(*REPORT.path), "reported")
    assert report == {"2021-06-01": 7, "2021-06-02": 7, "2021-06-03": 28, "2021-06-04": 19}  # promoted with it
    record = production.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=DOUBLED, asset_partitions=["2021-06-03"]), limit=1
    ).records[0]
    code_version = mesh_definitions().resolve_asset_graph().get(DOUBLED).code_version
    assert record.asset_materialization.tags[CODE_VERSION_TAG] == code_version
    plan = make_plan(None, production.instance)  # what mesh apply launches next: the days not built there
    edit_model(production, "amount * 3 AS doubled", "amount * 2 AS doubled")
    left = {
        r.asset.key.to_user_string(): {k for span in r.asset.ranges for k in (span.start, span.end)}
        for r in plan.recompute
    }
    assert left == {
        "rep/sales_doubled": {"2021-06-01", "2021-06-02"},
        "rep/doubled_report": {"2021-06-01", "2021-06-02"},
    }
