"""Validation walks a mesh of any depth and size without recursion and in time linear in its size.

The meshes are generated: one Python file declares a chain of products, each reading the one before (the
deepest mesh there can be for its size). Timing belongs to the benchmarks; these assert the verdicts.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mesh_assets import domain_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.graph.validate import validate
from mesh_assets.model.errors import SpecError

CHAIN = """from mesh_assets import Input, Output, Product

for i in range({n}):
    product = Product(f"p{{i}}", owner="team:big", contacts=[{{"kind": "chat", "value": "#big"}}])
    source = f"t{{i - 1}}" if i else "{first}"
    product.transformation(Output(table=f"t{{i}}"), inputs={{"up": Input(table=source)}})(lambda up: up)
    globals()[f"p{{i}}"] = product
del product
"""
LOCATION = "from mesh_assets import domain_definitions\n\ndefs = domain_definitions(__file__)\n"
EXTERNAL = "name: raw\nowner: team:big\ncontacts: [{kind: chat, value: '#big'}]\nexternal:\n  - table: raw\n"


def write_chain(root: Path, n: int, first: str) -> Path:
    folder = root / "domains" / "big"
    folder.mkdir(parents=True)
    (folder / "chain.py").write_text(CHAIN.format(n=n, first=first))
    (folder / "raw.yaml").write_text(EXTERNAL)
    return root / "domains"


def test_a_thousand_deep_chain_validates(tmp_path: Path) -> None:
    domains = load_all(write_chain(tmp_path, 1000, "raw"))
    assert len(domains["big"].products) == 1001
    assert validate(domains) == []


@pytest.mark.slow
def test_a_code_location_loads_on_a_thousand_deep_chain(tmp_path: Path) -> None:
    """The composition root on the same chain, as Dagster loads the domain's location: assets, the asset graph,
    the implicit job over all of them, sensors; nothing recurses per level."""
    root = write_chain(tmp_path, 1000, "raw")
    (root / "big" / "definitions.py").write_text(LOCATION)
    defs = domain_definitions(root / "big" / "definitions.py")
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assert len(graph.get_all_asset_keys()) == 1001  # 1,000 outputs and the external table
    assert graph.get(dg.AssetKey(["big", "t999"])).parent_keys == {dg.AssetKey(["big", "t998"])}
    assert len(defs.resolve_implicit_global_asset_job_def().graph.node_defs) == 1000
    assert {s.name for s in repo.sensor_defs} >= {"big__observe_external_tables"}


def test_a_cycle_at_the_end_of_a_thousand_deep_chain_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    domains = load_all(write_chain(tmp_path, 1000, "t999").relative_to(tmp_path))
    [error] = validate(domains)
    assert error == SpecError(
        "domains/big/chain.py",
        6,
        "inputs",
        "dependency cycle: " + " -> ".join(f"big.t{i}" for i in [0, *range(999, -1, -1)]),  # each reads the next
    )


@pytest.mark.slow
def test_a_ten_thousand_product_mesh_validates(tmp_path: Path) -> None:
    domains = load_all(write_chain(tmp_path, 10_000, "raw"))
    assert validate(domains) == []
    graph = MeshGraph(domains)
    assert graph.consumers("big", "t4999") == ("big.t5000",)
    assert graph.consumers("big", "t9999") == ()
