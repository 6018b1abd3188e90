"""``mesh pause`` / ``mesh resume``: the state lands in the Dagster instance the daemon reads, ``mesh list``
shows it, an unknown product is refused by name, and resuming restores the listing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.automation.pause import paused_products
from mesh_assets.cli import main as cli
from mesh_assets.settings import get_settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "governance"


@pytest.fixture
def cross_domain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    root = FIXTURES / "cross_domain"
    monkeypatch.chdir(root)
    monkeypatch.setenv("MESH_PROJECT_ROOT", str(root))
    monkeypatch.setenv("MESH_DOMAINS_DIR", str(root / "domains"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    get_settings.cache_clear()
    yield tmp_path / "dagster"
    get_settings.cache_clear()


def listed(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    assert cli.main(["list"]) == 0
    return {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}


def test_pause_and_resume_reach_the_instance_and_the_listing(cross_domain: Path, capsys) -> None:
    assert cli.main(["pause", "catalog/products", "--reason", "vendor feed broken"]) == 0
    assert "catalog/products paused since " in capsys.readouterr().out

    with dg.DagsterInstance.from_config(str(cross_domain)) as instance:
        pause = paused_products(instance, [("catalog", "products"), ("sales", "sales")])
    assert list(pause) == [("catalog", "products")] and pause["catalog", "products"].reason == "vendor feed broken"
    rows = listed(capsys)
    assert rows["products"].endswith("active, paused") and rows["raw_products"].endswith("active, paused")
    assert rows["sales_by_product"].endswith("active")

    assert cli.main(["resume", "catalog/products"]) == 0
    assert "catalog/products resumed" in capsys.readouterr().out
    assert listed(capsys)["products"].endswith(" active")


def test_pausing_an_unknown_product_is_refused_by_name(cross_domain: Path, capsys) -> None:
    assert cli.main(["pause", "catalog/nope", "--reason", "x"]) == 2
    out = capsys.readouterr().out
    assert "no product 'catalog/nope' with outputs; products: catalog/products, sales/sales" in out
