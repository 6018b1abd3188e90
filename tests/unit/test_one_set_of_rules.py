"""``mesh validate`` and the code locations refuse exactly the same specs.

Every governance and bad-spec fixture is judged both ways, per domain: by ``mesh validate``'s path (the
catalog, each domain's Python in a process of its own) and by building that domain's code location
(``domain_definitions``, as Dagster loads it). A domain ``mesh validate`` passes must load; one it refuses
must not, and the location's error must be among validate's.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.dbt.catalog import dbt_tables
from mesh_assets.dbt.project import load_manifest
from mesh_assets.definitions import domain_definitions, tool_tables
from mesh_assets.graph.discovery import domain_folders
from mesh_assets.graph.isolate import discover_all, validate_catalog
from mesh_assets.model.errors import SpecValidationError
from mesh_assets.settings import get_settings

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
CASES = [
    *sorted(p.parent for p in FIXTURES.glob("governance/*/domains")),
    FIXTURES / "reliability" / "bad_specs",
    FIXTURES / "dbt_consumer",
]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_validate_and_the_code_location_give_the_same_verdict(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)
    settings = get_settings()
    entries = discover_all(Path("domains"), settings.home, settings.discovery_timeout_seconds, retry=True)
    for folder in domain_folders(Path("domains")):
        expected = validate_catalog(entries, tool_tables(Path("domains")), only={folder.name})
        try:
            domain_definitions(folder / "definitions.py").get_repository_def()
        except SpecValidationError as exc:
            assert expected, f"{folder.name}: the location refuses what validate passes: {exc}"
            assert set(exc.errors) <= set(expected), folder.name
        except dg.DagsterInvalidDefinitionError as exc:
            pytest.fail(f"{folder.name}: Dagster refuses what validate did not see: {exc}")
        else:
            assert not expected, f"{folder.name}: validate refuses what the location loads: {expected}"


def test_dbt_models_reading_unknown_or_internal_tables_get_the_same_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dbt model's sources are judged as a product's inputs are, by ``mesh validate``'s path and by the code
    location of the domain owning the models: the example project's two sources pointed at an internal and a
    missing table."""
    manifest = load_manifest(None)
    renamed = {"orders": "raw_orders", "delivery_times_7_days": "delivery_times_30_days"}
    for source in manifest["sources"].values():
        source["name"] = renamed[source["name"]]
    for node in manifest["nodes"].values():  # each model's SQL names the renamed source, as a user would write it
        if node["resource_type"] == "model":
            sql = (ROOT / "dbt_project" / node["original_file_path"]).read_text()
            for old, new in renamed.items():
                sql = sql.replace(f"'food_delivery', '{old}'", f"'food_delivery', '{new}'")
            (tmp_path / f"{node['name']}.sql").write_text(sql)
            node["original_file_path"] = str(tmp_path / f"{node['name']}.sql")
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    settings = get_settings()
    entries = discover_all(settings.domains_dir, settings.home, settings.discovery_timeout_seconds, retry=True)

    expected = validate_catalog(entries, dbt_tables(path), only={"analytics"})
    internal = "which is internal to domain food_delivery; only published tables may be read by other domains"
    assert [(Path(e.file).name, e.line, e.field, e.message) for e in expected] == [
        (
            "city_daily_kpis.sql",
            22,
            "depends_on",
            "dbt model analytics.city_daily_kpis reads food_delivery.delivery_times_30_days, an unknown table",
        ),
        (
            "stg_orders.sql",
            10,
            "depends_on",
            f"dbt model analytics.stg_orders reads food_delivery.raw_orders, {internal}",
        ),
    ]
    monkeypatch.setattr("mesh_assets.dbt.project.manifest_path", lambda: path)
    with pytest.raises(SpecValidationError) as refused:
        domain_definitions(ROOT / "domains" / "analytics" / "definitions.py")
    assert sorted(refused.value.errors) == expected
