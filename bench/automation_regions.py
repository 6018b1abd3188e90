"""Automation over tables partitioned by date and region: one tick over 1,000 assets of 730 days in three
regions (each day from its region's local midnight), against the same graph partitioned by date only.

Both graphs are Mesh's own conditions over the synthetic mesh of :mod:`bench.automation_tick`, ticked in turn
with nothing new (the steady state, the median of several ticks) and after one upstream partition (a region's
day, or the day) is published. Run alone: ``python -m bench.automation_regions --assets 1000``.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from datetime import timedelta
from pathlib import Path

import dagster as dg

from bench.automation_tick import NOW, Graph, measure
from bench.common import Result, print_results
from bench.definitions_load import write_mesh
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.model.grain import region_key
from mesh_assets.storage.resource import MeshResource


def graph(assets: int, regions: bool) -> Graph:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets, regions=regions)
        built = build_definitions(load_all(root), extra=[])
    return Graph(dg.Definitions(assets=built.assets, resources={"mesh": MeshResource()}))


def run(assets: int = 1000) -> list[Result]:
    warnings.filterwarnings("ignore")
    day = f"{NOW - timedelta(days=1):%Y-%m-%d}"
    times = measure(
        {"regions": graph(assets, regions=True), "dates": graph(assets, regions=False)},
        published={"regions": region_key(day, "eu"), "dates": day},
    )
    baseline = "the same graph partitioned by date only"
    return [
        Result(
            "automation regions",
            f"tick, {assets} assets x 730 days x 3 regions (local days), nothing new",
            times["regions"][0],
            baseline,
            times["dates"][0],
            "<= 1.10x date only",
            times["regions"][0] <= 1.10 * times["dates"][0],
        ),
        Result(
            "automation regions",
            f"tick, {assets} assets x 730 days x 3 regions, one region's day of the root published",
            times["regions"][1],
            baseline + " (the day published)",
            times["dates"][1],
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assets", type=int, default=1000)
    print_results(run(parser.parse_args().assets))
