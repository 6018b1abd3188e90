"""``dg`` on the mesh: every example domain is a dg project whose definitions load and whose products list; a
broken spec fails ``dg check defs`` with Mesh's own message. ``dg scaffold``: tests/integration/test_dg_product.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DG = ROOT / ".venv" / "bin" / "dg"


def dg(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([DG, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def copy_of(domain: str, tmp_path: Path) -> Path:
    folder = tmp_path / "domains" / domain
    shutil.copytree(ROOT / "domains" / domain, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.mark.parametrize("domain", ["food_delivery", "central", "courier", "growth", "analytics"])
def test_every_example_domain_passes_dg_check_defs(domain: str) -> None:
    result = dg(ROOT / "domains" / domain, "check", "defs")
    assert result.returncode == 0, result.stderr
    assert "All component YAML validated successfully." in result.stdout
    assert "All definitions loaded successfully." in result.stdout


def test_dg_list_defs_shows_a_component_products_assets_with_their_group_and_owner() -> None:
    result = dg(ROOT / "domains" / "food_delivery", "list", "defs", "--json")
    assert result.returncode == 0, result.stderr
    assets = {a["asset_key"]: a for a in json.loads(result.stdout)["assets"]}
    assert assets["food_delivery/orders_7_days"]["group_name"] == "weekly_orders"
    assert assets["food_delivery/orders_7_days"]["owners"] == [{"email": "food-analytics@example.com"}]
    assert assets["food_delivery/orders"]["group_name"] == "orders"  # a Python product, next to the components


def test_a_broken_spec_fails_dg_check_defs_with_the_file_line_and_field(tmp_path: Path) -> None:
    folder = copy_of("growth", tmp_path)
    spec = folder / "defs" / "summary_gsc" / "defs.yaml"
    spec.write_text(spec.read_text().replace("owner: growth-data@example.com", "owner: nobody"))
    result = dg(folder, "check", "defs")
    assert result.returncode == 1
    assert "defs/summary_gsc/defs.yaml:5: owner: String should match pattern" in result.stdout + result.stderr
    assert "pydantic_core" not in result.stdout + result.stderr


def test_dg_gives_editors_the_product_schema() -> None:
    result = dg(
        ROOT / "domains" / "growth", "utils", "inspect-component", "mesh_assets.DataProduct", "--defs-yaml-json-schema"
    )
    assert result.returncode == 0, result.stderr
    attributes = json.loads(result.stdout)["properties"]["attributes"]
    assert attributes["required"] == ["name", "owner", "contacts"]
    assert {"tables", "external", "start_date", "cron"} <= set(attributes["properties"])
    assert attributes["properties"]["tier"]["anyOf"][0]["enum"] == ["t1", "t2", "t3"]
