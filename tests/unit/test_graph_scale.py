"""Validation walks a mesh of any depth and size without recursion and in time linear in its size.

The meshes are generated: one Python file declares a chain of products, each reading the one before (the
deepest mesh there can be for its size). Timing belongs to the benchmarks; these assert the verdicts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


LOAD = """import sys
import dagster as dg
from mesh_assets import domain_definitions

defs = domain_definitions(sys.argv[1])
repo = defs.get_repository_def()
graph = repo.asset_graph
assert len(graph.get_all_asset_keys()) == 1501  # 1,500 outputs and the external table
assert graph.get(dg.AssetKey(["big", "t1499"])).parent_keys == {dg.AssetKey(["big", "t1498"])}
print(len(defs.resolve_implicit_global_asset_job_def().graph.node_defs), sorted(s.name for s in repo.sensor_defs))
"""


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["4", "5"])
def test_a_code_location_loads_on_a_chain_deeper_than_pythons_recursion_limit(tmp_path: Path, seed: str) -> None:
    """The composition root on the same chain, as Dagster loads the domain's location: assets, the asset graph,
    the implicit job over all of them, sensors. Dagster builds the job recursively from a start that string
    hashing picks; under these two hash seeds (of 1-6) it started far enough down the chain to raise
    RecursionError at Python's default limit, which Mesh now raises to fit the deepest chain."""
    root = write_chain(tmp_path, 1500, "raw")
    (root / "big" / "definitions.py").write_text(LOCATION)
    env = {**os.environ, "PYTHONHASHSEED": seed}
    args = [sys.executable, "-c", LOAD, str(root / "big" / "definitions.py")]
    loaded = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    nodes, sensors = loaded.stdout.strip().splitlines()[-1].split(" ", 1)
    assert nodes == "1500" and "big__observe_external_tables" in sensors


def test_the_longest_chain_is_counted_without_recursion_and_a_cycle_ends_it(tmp_path: Path) -> None:
    domains = load_all(write_chain(tmp_path / "deep", 3000, "raw"))
    assert MeshGraph(domains).longest_chain() == 3001  # the external table, then 3,000 products
    looped = load_all(write_chain(tmp_path / "looped", 3, "t2"))  # t0 reads t2, which reads t1, which reads t0
    assert MeshGraph(looped).longest_chain() == 3


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
