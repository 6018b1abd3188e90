"""Validation at scale: ``mesh validate``'s rules over a mesh of 10,000 YAML products, against 1,000.

The mesh is the definitions-load benchmark's (SQL products in domains of 20, each reading the one before, two
checks each), so the graph is as deep as a domain and as wide as the mesh. Each size runs in a fresh
interpreter: import, read and validate every spec, resolve the graph, apply the rules between tables.
Run alone: ``python -m bench.graph_scale``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import Result, print_results, python_seconds
from bench.definitions_load import write_mesh

VALIDATE_CODE = """
import time; t0 = time.perf_counter()
from pathlib import Path
from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.validate import validate
domains = load_all(Path({root!r}))
assert validate(domains) == []
assert sum(len(d.products) for d in domains.values()) == {products}
print(time.perf_counter() - t0)
"""


def seconds(products: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, products)
        return python_seconds(VALIDATE_CODE.format(root=str(root), products=products), {"MESH_HOME": tmp})


def run(products: int = 10_000) -> list[Result]:
    small, large = seconds(products // 10), seconds(products)
    return [
        Result(
            "validation",
            f"mesh validate's rules, {products:,} products",
            large,
            f"{products // 10:,} products",
            small,
            "<= 10 s; ratio <= 12 (linear)",
            large <= 10 and large / small <= 12,
        )
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--products", type=int, default=10_000)
    print_results(run(parser.parse_args().products))
