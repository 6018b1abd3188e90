"""Automation at scale: one evaluation tick over a synthetic mesh of daily assets with 730 partitions.

Measured with nothing new (the steady state) and after one upstream partition is published, against
Dagster's own ``AutomationCondition.eager()`` on the same graph as the baseline. Dagster's floor is measured
too: a two-leaf condition (``in_latest_time_window() & newly_updated()``) on the same graph, i.e. what a
tick costs before any condition logic. Mesh gives each domain its own sensor, so the daemon's tick evaluates
one domain's products against the whole graph: that tick is measured too.

A tick is ``evaluate_automation_conditions`` with the previous cursor. Like the daemon's tick, it reads the
stored cursor (a serialization round trip), evaluates every asset's condition and builds the next cursor;
the daemon also writes that cursor, and the evaluations that changed, to its storage. The graphs are ticked
in turn and the idle figure is the median of several ticks, because the machine may be shared; garbage is
collected before each timed tick, so a tick does not pay for the previous one's garbage.
Run alone: ``python -m bench.automation_tick --assets 1000``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg

from bench.common import Result, print_results
from bench.definitions_load import PARTITIONS, PRODUCTS_PER_DOMAIN, START, write_mesh
from mesh_assets.definitions import build_definitions
from mesh_assets.graph.discovery import load_all
from mesh_assets.storage.resource import MeshResource

NOW = datetime.fromisoformat(START) + timedelta(days=PARTITIONS, hours=6)
ROOT_KEY = dg.AssetKey(["d00", "raw"])
AC = dg.AutomationCondition


@dataclass
class Graph:
    """One graph's automation state, ticked like the sensor does: the cursor is carried between ticks."""

    defs: dg.Definitions
    selection: dg.AssetSelection | None = None
    instance: dg.DagsterInstance = field(default_factory=dg.DagsterInstance.ephemeral)
    cursor: object = None

    def tick(self) -> float:
        gc.collect()
        start = time.perf_counter()
        result = dg.evaluate_automation_conditions(
            defs=self.defs,
            instance=self.instance,
            asset_selection=self.selection,
            cursor=self.cursor,
            evaluation_time=NOW,
        )
        elapsed = time.perf_counter() - start
        self.cursor = result.cursor
        return elapsed


def with_condition(mesh: dg.Definitions, condition: dg.AutomationCondition) -> dg.Definitions:
    """Mesh's graph with ``condition`` on every output instead of Mesh's own."""
    outputs = [a for a in mesh.assets or [] if isinstance(a, dg.AssetsDefinition)]
    externals = [a for a in mesh.assets or [] if isinstance(a, dg.AssetSpec)]
    return dg.Definitions(
        resources=mesh.resources,
        assets=[a.map_asset_specs(lambda s: s.replace_attributes(automation_condition=condition)) for a in outputs]
        + externals,
    )


def measure(
    graphs: dict[str, Graph], repeat: int = 3, published: dict[str, str] | None = None
) -> dict[str, tuple[float, float]]:
    """(median idle tick, tick after one upstream partition is published) per graph; ``published``: the root's
    partition key each graph publishes (default: the day before ``NOW``)."""
    for graph in graphs.values():
        graph.tick()  # the first evaluation only initialises the cursor
        graph.tick()
    idle: dict[str, list[float]] = {name: [] for name in graphs}
    for _ in range(repeat):
        for name, graph in graphs.items():
            idle[name].append(graph.tick())
    updated = {}
    latest = f"{NOW - timedelta(days=1):%Y-%m-%d}"
    for name, graph in graphs.items():
        key = (published or {}).get(name, latest)
        graph.instance.report_runless_asset_event(dg.AssetMaterialization(ROOT_KEY, partition=key))
        updated[name] = graph.tick()
    return {name: (statistics.median(idle[name]), updated[name]) for name in graphs}


def run(assets: int = 1000) -> list[Result]:
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets)
        built = build_definitions(load_all(root), extra=[])
    mesh = dg.Definitions(assets=built.assets, resources={"mesh": MeshResource()})
    eager_mesh = with_condition(mesh, AC.eager())
    domain = next(s for s in built.sensors or [] if s.name == "d01__automation").asset_selection
    times = measure(
        {
            "mesh": Graph(mesh),
            "eager": Graph(eager_mesh),
            "floor": Graph(with_condition(mesh, AC.in_latest_time_window() & AC.newly_updated())),
            "mesh_domain": Graph(mesh, domain),
            "eager_domain": Graph(eager_mesh, domain),
        }
    )
    eager = "AutomationCondition.eager(), same graph"
    products = min(assets, PRODUCTS_PER_DOMAIN)
    return [
        Result(
            "automation",
            f"tick, {assets} assets x 730 partitions, nothing new",
            times["mesh"][0],
            eager,
            times["eager"][0],
            "<= 1 s",
            times["mesh"][0] <= 1.0,
        ),
        Result(
            "automation",
            f"tick, {assets} assets, one upstream partition published",
            times["mesh"][1],
            eager,
            times["eager"][1],
        ),
        Result(
            "automation",
            f"Dagster's floor: tick, {assets} assets, in_latest_time_window() & newly_updated(), nothing new",
            times["floor"][0],
            eager,
            times["eager"][0],
        ),
        Result(
            "automation",
            f"one domain's sensor tick: its {products} products of the {assets}, nothing new",
            times["mesh_domain"][0],
            "AutomationCondition.eager(), same products",
            times["eager_domain"][0],
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assets", type=int, default=1000)
    args = parser.parse_args()
    print_results(run(args.assets))
