"""A product started with ``dg scaffold``, filled in, checked by ``dg check defs`` and ``mesh validate``, then
materialized by its domain's own code location: two partitions, their exact rows in Delta."""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mesh_assets import MeshResource, domain_definitions, executable_assets
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SALES = {"2021-06-01": [(1, "north", 10), (2, "north", 5), (3, "south", 7)], "2021-06-02": [(4, "south", 1)]}


def dg_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([ROOT / ".venv/bin/dg", *args], cwd=folder, env=env, capture_output=True, text=True)


def test_a_scaffolded_product_checks_and_materializes_two_partitions(
    spark, tmp_path: Path, monkeypatch, capsys
) -> None:
    folder = tmp_path / "domains" / "sales"
    folder.mkdir(parents=True)
    (folder / "domain.yaml").write_text("owner: sales-data@example.com\ncontacts: [{kind: chat, value: '#sales'}]\n")
    (folder / "dg.toml").write_text((ROOT / "domains" / "growth" / "dg.toml").read_text().replace("growth", "sales"))
    (folder / "definitions.py").write_text((ROOT / "domains" / "growth" / "definitions.py").read_text())
    (folder / "defs").mkdir()

    scaffold = dg_cli(folder, "scaffold", "defs", "mesh_assets.DataProduct", "daily_sales")
    assert scaffold.returncode == 0, scaffold.stderr
    spec = folder / "defs" / "daily_sales" / "defs.yaml"
    component = yaml.safe_load(spec.read_text())
    assert component["type"] == "mesh_assets.DataProduct"
    assert component["attributes"]["name"] == "daily_sales"
    component["attributes"]["external"] = [{"table": "raw_sales"}]
    component["attributes"]["tables"] = [
        {
            "table": "sales_by_region",
            "inputs": [{"table": "raw_sales"}],
            "sql": "SELECT region, SUM(amount) AS amount FROM sales.raw_sales"
            " WHERE p_date BETWEEN :partition_start AND :partition_end GROUP BY region",
        }
    ]
    spec.write_text(yaml.safe_dump(component, sort_keys=False))

    check = dg_cli(folder, "check", "defs")
    assert check.returncode == 0, check.stdout + check.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MESH_PROJECT_ROOT", str(tmp_path))  # a mesh of its own: domains/ here, no dbt project
    get_settings.cache_clear()
    try:
        assert cli.main(["validate"]) == 0, capsys.readouterr().out
        defs = domain_definitions(folder / "definitions.py")  # what the domain's code server loads
    finally:
        get_settings.cache_clear()  # monkeypatch restores the environment after this; the next read re-reads it
    assert "ok: 1 product(s) in 1 domain(s)" in capsys.readouterr().out

    mesh = MeshResource(warehouse=str(tmp_path / f"wh-{uuid.uuid4().hex[:8]}"))
    instance = dg.DagsterInstance.ephemeral()
    for day, rows in SALES.items():
        spark.createDataFrame(
            [(*r, date.fromisoformat(day)) for r in rows], "id bigint, region string, amount bigint, p_date date"
        ).write.format("delta").mode("append").partitionBy("p_date").save(mesh.registry.location("sales", "raw_sales"))
    observe_now(defs, instance, mesh)
    for day in SALES:
        result = dg.materialize(
            executable_assets(defs),
            selection=[dg.AssetKey(["sales", "sales_by_region"])],
            partition_key=day,
            instance=instance,
            resources={"mesh": mesh},
        )
        assert result.success

    table = spark.read.format("delta").load(mesh.registry.location("sales", "sales_by_region"))
    assert sorted((str(r.p_date), r.region, r.amount) for r in table.collect()) == [
        ("2021-06-01", "north", 15),
        ("2021-06-01", "south", 7),
        ("2021-06-02", "south", 1),
    ]
