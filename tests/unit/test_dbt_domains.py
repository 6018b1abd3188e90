"""dbt models belong to the domain that owns them: each domain's code location builds the models whose
``meta.domain`` (else folder) names it, from the one dbt project, with no catch-all location; a model's first
partition, owner and contacts come from its own config, else from its domain's ``domain.yaml``."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from rich.console import Console

from mesh_assets.cli import main as cli
from mesh_assets.dbt.assets import sources_read
from mesh_assets.dbt.catalog import dbt_tables
from mesh_assets.dbt.nodes import models_of
from mesh_assets.dbt.project import load_manifest, prepare
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.model.defaults import DomainDefaults
from mesh_assets.model.errors import SpecValidationError, relative
from mesh_assets.model.product import DEFAULT_START, Contact
from mesh_assets.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]


def dbt_keys(defs: dg.Definitions) -> set[str]:
    graph = defs.resolve_asset_graph()
    return {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).tags.get("tool") == "dbt"}


@pytest.fixture(scope="module")
def domains():
    return load_all(ROOT / "domains")


@pytest.mark.parametrize(
    ("domain", "models"),
    [
        ("analytics", {"analytics/stg_orders", "analytics/city_daily_kpis"}),
        ("food_delivery", {"food_delivery/restaurant_daily_orders"}),
        ("growth", set()),
    ],
)
def test_each_domains_location_builds_the_dbt_models_it_owns(domains, domain: str, models: set[str]) -> None:
    defs = build_definitions(domains, only={domain}, dbt=True)
    assert dbt_keys(defs) == models
    if models:  # the domain's dbt automation sensor evaluates them, by the daemon against the whole workspace
        [sensor] = [s for s in defs.sensors if s.name == f"{domain}__dbt__automation"]
        targets = {k.to_user_string() for k in sensor.asset_selection.resolve(defs.resolve_asset_graph())}
        assert targets == models
        assert sensor.sensor_type.value == "AUTO_MATERIALIZE"  # evaluated by the daemon, not a code server


def test_no_location_builds_every_model(domains) -> None:
    everyone = {d: dbt_keys(build_definitions(domains, only={d}, dbt=True)) for d in ("analytics", "food_delivery")}
    assert everyone["analytics"].isdisjoint(everyone["food_delivery"])
    assert not any(path.read_text().count("dbt_definitions") for path in (ROOT / "domains").glob("*/definitions.py"))


def model(name: str, folder: str, meta: dict) -> dict:
    return {
        "unique_id": f"model.p.{name}",
        "resource_type": "model",
        "name": name,
        "alias": name,
        "original_file_path": f"models/{folder}/{name}.sql",
        "config": {"materialized": "incremental", "partition_by": ["p_date"], "meta": meta},
        "depends_on": {"nodes": []},
    }


def test_a_models_partition_range_owner_and_contacts_come_from_its_config_else_its_domain() -> None:
    manifest = {
        "nodes": {
            "model.p.inherits": model("inherits", "sales", {}),
            "model.p.own": model(
                "own", "sales", {"start_date": "2023-01-01", "end_date": "2023-02-01", "owner": "bi@example.com"}
            ),
            "model.p.elsewhere": model("elsewhere", "ops", {}),
        },
        "sources": {},
    }
    sales = DomainDefaults(
        owner="sales@example.com",
        contacts=(Contact(kind="chat", value="#sales"),),
        start_date=date(2022, 3, 1),
        end_date=date(2024, 1, 1),
    )
    tables = {t.name: t for t in dbt_tables(manifest, {"sales": sales})}
    assert (tables["inherits"].start_date, tables["inherits"].owner) == (date(2022, 3, 1), "sales@example.com")
    assert [c.value for c in tables["inherits"].contacts] == ["#sales"]
    assert (tables["own"].start_date, tables["own"].owner) == (date(2023, 1, 1), "bi@example.com")
    assert (tables["elsewhere"].start_date, tables["elsewhere"].owner) == (DEFAULT_START, "")  # ops has no defaults
    assert [tables[name].end_date for name in ("inherits", "own", "elsewhere")] == [
        date(2024, 1, 1),
        date(2023, 2, 1),
        None,
    ]


def test_a_domains_dbt_run_needs_only_the_sources_its_own_models_read() -> None:
    """food_delivery's model may run before analytics' sources (delivery_times_7_days) are published."""
    manifest = load_manifest()
    own = {n["unique_id"] for n in models_of(manifest, "food_delivery")}
    assert sources_read(manifest, own) == [("food_delivery", "orders")]
    analytics = {n["unique_id"] for n in models_of(manifest, "analytics")}
    assert sources_read(manifest, analytics) == [
        ("food_delivery", "delivery_times_7_days"),
        ("food_delivery", "orders"),
    ]


BROKEN_JINJA = "{{ config(materialized='table') }}\nSELECT {{ ref('stg_orders' }} AS orders\n"
READS_BROKEN = "{{ config(materialized='table') }}\nSELECT * FROM {{ ref('broken_jinja') }}\n"


def test_one_domains_unparsable_dbt_model_costs_its_own_domain_not_the_others_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """growth's model with a Jinja error (and growth's model reading it) are set aside: the manifest holds every
    other model, analytics' location builds its models, growth's fails naming the file and line, ``mesh
    validate`` says so, and nothing is written in the project outside ``target/``."""
    project = tmp_path / "dbt_project"
    shutil.copytree(ROOT / "dbt_project", project, ignore=shutil.ignore_patterns("target", "logs"))
    (project / "models" / "growth").mkdir()
    (project / "models" / "growth" / "broken_jinja.sql").write_text(BROKEN_JINJA)
    (project / "models" / "growth" / "reads_broken.sql").write_text(READS_BROKEN)
    before = sources(project)
    monkeypatch.setenv("MESH_DBT_PROJECT_DIR", str(project))
    monkeypatch.setattr(cli, "console", Console(width=400, no_color=True, highlight=False))
    monkeypatch.chdir(ROOT)
    get_settings.cache_clear()
    try:
        prepare(str(tmp_path / "warehouse"))

        manifest = load_manifest()
        assert {n["name"] for n in manifest["nodes"].values() if n["resource_type"] == "model"} == {
            "stg_orders",
            "city_daily_kpis",
            "restaurant_daily_orders",
        }
        domains = load_all(ROOT / "domains")
        assert dbt_keys(build_definitions(domains, only={"analytics"}, dbt=True)) == {
            "analytics/stg_orders",
            "analytics/city_daily_kpis",
        }
        with pytest.raises(SpecValidationError) as refused:
            build_definitions(domains, only={"growth"}, dbt=True)
        [jinja, reads] = [str(e) for e in refused.value.errors]
        where = relative(project / "models" / "growth")
        assert jinja.startswith(
            f"{where}/broken_jinja.sql:2: dbt could not parse it, so it is set aside: Compilation Error in model "
            "broken_jinja (models/growth/broken_jinja.sql); unexpected '}', expected ')'"
        )
        assert reads.startswith(f"{where}/reads_broken.sql: dbt could not parse it, so it is set aside: ")
        assert "depends on a node named 'broken_jinja' which was not found" in reads

        monkeypatch.setenv("MESH_DOMAINS_DIR", str(ROOT / "domains"))
        get_settings.cache_clear()
        assert cli.main(["validate"]) == 1
        out = capsys.readouterr().out
        assert f"error {where}/broken_jinja.sql:2: dbt could not parse it" in out
        assert "domains that will fail to load: growth" in out
    finally:
        get_settings.cache_clear()
    assert sources(project) == before


def sources(project: Path) -> list[Path]:
    """The project's files, but what dbt writes (``target/``, ``logs/``)."""
    return sorted(p for p in project.rglob("*") if not {"target", "logs"} & set(p.relative_to(project).parts))
