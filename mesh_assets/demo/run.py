"""The demo: land 14 days of source data and materialize the example mesh on a persistent instance."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import dagster as dg
from pyspark.sql import functions as F

from mesh_assets.assets.specs import RESOURCE_KEY
from mesh_assets.automation.observe_now import observe_now
from mesh_assets.demo.generator import days
from mesh_assets.demo.landing import land_all
from mesh_assets.storage.resource import MeshResource

DEMO_START = date(2021, 6, 1)
DEMO_DAYS = 14
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
"""The demo prints a summary; the full event log stays on the instance for ``make dev``."""


@dataclass(frozen=True)
class AssetSummary:
    asset: str
    partitions: list[str]
    rows: dict[str, int]


def executable_assets(defs: dg.Definitions) -> list[dg.AssetsDefinition]:
    return [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_executable]


def run_demo(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    mesh: MeshResource,
    start: date = DEMO_START,
    count: int = DEMO_DAYS,
) -> list[AssetSummary]:
    """Land the sources, materialize the mesh over them, and summarize what was published."""
    window = days(start, count)
    land_all(mesh.spark, mesh.registry, window)
    observe_now(defs, instance, mesh)  # what the observers report before anything reads the landed data
    keys = materialize_mesh(defs, instance, mesh, window[0], window[-1])
    return summarize(instance, keys, mesh)


def materialize_mesh(
    defs: dg.Definitions, instance: dg.DagsterInstance, mesh: MeshResource, first: date, last: date
) -> list[dg.AssetKey]:
    """Unpartitioned products in one run, then one single-run range over every partitioned one."""
    assets = executable_assets(defs)
    unpartitioned = [k for a in assets for k in a.keys if a.partitions_def is None]
    partitioned = [k for a in assets for k in a.keys if a.partitions_def is not None]
    resources = {**(defs.resources or {}), RESOURCE_KEY: mesh}
    if unpartitioned:
        dg.materialize(
            assets,
            instance=instance,
            resources=resources,
            selection=unpartitioned,
            tags={"mesh/launched_by": "demo"},
            run_config=QUIET,
        )
    if partitioned:
        dg.materialize(
            assets,
            instance=instance,
            resources=resources,
            selection=partitioned,
            run_config=QUIET,
            tags={
                "dagster/asset_partition_range_start": first.isoformat(),
                "dagster/asset_partition_range_end": last.isoformat(),
                "mesh/launched_by": "demo",
            },
        )
    return [*unpartitioned, *partitioned]


def summarize(instance: dg.DagsterInstance, keys: list[dg.AssetKey], mesh: MeshResource) -> list[AssetSummary]:
    """Per asset: the partitions materialized (from the instance) and their rows (from the Delta table)."""
    out = []
    for key in sorted(keys, key=lambda k: k.to_user_string()):
        records = instance.fetch_materializations(key, limit=10_000).records
        partitions = sorted({(r.asset_materialization.partition or "-") for r in records if r.asset_materialization})
        out.append(AssetSummary(key.to_user_string(), partitions, delta_rows(mesh, key, partitions)))
    return out


def delta_rows(mesh: MeshResource, key: dg.AssetKey, partitions: list[str]) -> dict[str, int]:
    """Rows per partition as readers see them now (``p_date`` partitions, or the whole table)."""
    table = mesh.spark.read.format("delta").load(mesh.registry.location(*key.path))
    if partitions == ["-"]:
        return {"-": table.count()}
    counts = {
        str(r["p"]): r["count"] for r in table.groupBy(F.col("p_date").cast("string").alias("p")).count().collect()
    }
    return {p: counts.get(p, 0) for p in partitions}
