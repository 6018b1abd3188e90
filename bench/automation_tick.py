"""Automation at scale: one evaluation tick over a synthetic mesh of daily assets with 730 partitions.

Measured with nothing new (the steady state) and after one upstream partition is published, against
Dagster's own ``AutomationCondition.eager()`` on the same graph as the baseline.
Run alone: ``python -m bench.automation_tick --assets 1000``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from datetime import datetime
from pathlib import Path

import dagster as dg

from bench.common import Result, print_results
from bench.definitions_load import write_mesh
from mesh_assets.engine.resource import MeshResource
from mesh_assets.factory.definitions import build_definitions
from mesh_assets.spec.discovery import load_all

NOW = datetime(2026, 1, 1, 6)


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor=None) -> tuple[float, object]:
    start = time.perf_counter()
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor, evaluation_time=NOW)
    return time.perf_counter() - start, result


def measure(defs: dg.Definitions, root_key: dg.AssetKey) -> tuple[float, float]:
    instance = dg.DagsterInstance.ephemeral()
    _, first = _tick(defs, instance)
    _, second = _tick(defs, instance, first.cursor)
    idle, third = _tick(defs, instance, second.cursor)
    instance.report_runless_asset_event(dg.AssetMaterialization(root_key, partition="2025-12-31"))
    updated, _ = _tick(defs, instance, third.cursor)
    return idle, updated


def run(assets: int = 1000) -> list[Result]:
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "domains"
        write_mesh(root, assets)
        mesh = build_definitions(load_all(root), extra=[])
    mesh_assets = [a for a in mesh.assets or [] if isinstance(a, dg.AssetsDefinition)]
    resources = {"mesh": MeshResource()}
    plain = dg.Definitions(
        resources=resources,
        assets=[
            a.map_asset_specs(lambda s: s.replace_attributes(automation_condition=dg.AutomationCondition.eager()))
            for a in mesh_assets
        ]
        + [a for a in mesh.assets or [] if isinstance(a, dg.AssetSpec)],
    )
    mesh = dg.Definitions(assets=mesh.assets, resources=resources)
    root_key = dg.AssetKey(["d00", "raw"])
    mesh_idle, mesh_updated = measure(mesh, root_key)
    plain_idle, plain_updated = measure(plain, root_key)
    return [
        Result(
            "automation",
            f"tick, {assets} assets x 730 partitions, nothing new",
            mesh_idle,
            "AutomationCondition.eager(), same graph",
            plain_idle,
            "<= 1 s",
            mesh_idle <= 1.0,
        ),
        Result(
            "automation",
            f"tick, {assets} assets, one upstream partition published",
            mesh_updated,
            "AutomationCondition.eager(), same graph",
            plain_updated,
            "",
            None,
        ),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assets", type=int, default=1000)
    args = parser.parse_args()
    print_results(run(args.assets))
