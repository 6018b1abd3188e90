"""One domain's broken dbt models do not stop another domain's: growth owns a model with a Jinja error (set aside
when the project is parsed), one whose SQL fails on Spark, and one broken after the manifest was prepared (left out
of the other runs' compiles); food_delivery's model still loads, compiles and publishes its day, on the shared
SparkSession."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from pyspark.sql import functions as F

from mesh_assets import executable_assets
from mesh_assets.dbt import build_dbt_assets, dbt_resource, prepare
from mesh_assets.graph.defaults import domains_defaults

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORLD_DAYS = 1  # the world fixture lands 2021-06-01
WORLD_APP_EVENTS = False  # no test here reads the regions' 15-minute app events
ROOT = Path(__file__).resolve().parents[2]
DAY = "2021-06-01"
GROWTH = "{{ config(materialized='table', schema='growth', meta={'domain': 'growth'}) }}\n"
BROKEN_JINJA = GROWTH + "SELECT {{ ref('stg_orders' }} AS orders\n"
BROKEN_SQL = GROWTH + "SELECT no_such_column FROM (SELECT 1 AS n) AS one_row\n"  # growth is not granted orders
LATER = GROWTH + "SELECT 1 AS n\n"
BAD_SQL = dg.AssetKey(["growth", "broken_sql"])
RESTAURANTS = dg.AssetKey(["food_delivery", "restaurant_daily_orders"])


def test_a_domains_dbt_model_runs_beside_another_domains_broken_ones(
    world, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "dbt_project"
    shutil.copytree(ROOT / "dbt_project", project, ignore=shutil.ignore_patterns("target", "logs"))
    (project / "models" / "growth").mkdir()
    (project / "models" / "growth" / "broken_jinja.sql").write_text(BROKEN_JINJA)
    (project / "models" / "growth" / "broken_sql.sql").write_text(BROKEN_SQL)
    (project / "models" / "growth" / "later.sql").write_text(LATER)
    monkeypatch.setenv("MESH_DBT_PROJECT_DIR", str(project))
    prepare(world.mesh.registry.warehouse)
    (project / "models" / "growth" / "later.sql").write_text(BROKEN_JINJA)  # broken after the manifest was made
    world.materialize([["food_delivery", "orders"]], DAY)
    defaults = domains_defaults(ROOT / "domains")
    [growth] = build_dbt_assets("growth", defaults)  # the model that parsed; the other was set aside
    [food_delivery] = build_dbt_assets("food_delivery", defaults)
    assert set(growth.keys) == {BAD_SQL, dg.AssetKey(["growth", "later"])}

    def run(models: dg.AssetsDefinition, key: dg.AssetKey) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [*executable_assets(world.defs), models],
            instance=world.instance,
            resources={"mesh": world.mesh, "dbt": dbt_resource()},
            selection=[key],
            partition_key=DAY,
            raise_on_error=False,
        )

    failed = run(growth, BAD_SQL)
    assert not failed.success
    [failure] = failed.get_step_failure_events()
    assert "no_such_column" in str(failure.step_failure_data.error)

    published_run = run(food_delivery, RESTAURANTS)
    assert published_run.success
    logged = [e.user_message for e in world.instance.all_logs(published_run.run_id)]
    assert any(m.startswith("dbt could not parse models/growth/later.sql, left out of this compile") for m in logged)
    published = world.table("food_delivery", "restaurant_daily_orders").where(F.col("p_date") == date(2021, 6, 1))
    orders = world.table("food_delivery", "orders").where(F.col("p_date") == date(2021, 6, 1))
    assert published.agg(F.sum("orders")).first()[0] == orders.count() > 0
