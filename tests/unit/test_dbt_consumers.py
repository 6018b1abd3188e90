"""Python and SQL products can consume dbt models: the manifest's models join the mesh catalog."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import mesh_definitions
from mesh_assets.definitions import tool_tables
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.validate import validate
from mesh_assets.model.grain import Grain

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dbt_consumer" / "domains"


@pytest.fixture(scope="module")
def dbt_models():
    tables = tool_tables(FIXTURE)
    if not tables:
        pytest.fail("dbt manifest missing: run `make setup` (it prepares dbt_project/target/manifest.json)")
    return tables


def test_dbt_models_are_in_the_catalog(dbt_models):
    kpis = next(t for t in dbt_models if (t.domain, t.name) == ("analytics", "city_daily_kpis"))
    assert kpis.published and kpis.grain is Grain.DAILY and kpis.partition_column == "p_date"


def test_a_sql_product_reading_a_dbt_model_validates_and_depends_on_its_asset(dbt_models):
    assert validate(load_all(FIXTURE), extra=dbt_models) == []
    graph = mesh_definitions(FIXTURE, dbt=False).resolve_asset_graph()
    consumer = graph.get(dg.AssetKey(["ops", "low_delivery_cities"]))
    assert dg.AssetKey(["analytics", "city_daily_kpis"]) in consumer.parent_keys


def test_without_the_dbt_model_the_same_product_is_refused():
    errors = validate(load_all(FIXTURE), extra=[])
    assert [e.message for e in errors] == ["unknown table analytics.city_daily_kpis"]
